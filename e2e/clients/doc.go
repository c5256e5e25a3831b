// Package clients tests agentrun end to end as a user meets it: the Python client against a live
// server (with every python3 on the machine), the seed's evaluation written with it, and the
// OpenAPI document held against real answers. Tests skip when python3 or pip cannot run them.
//
// The real binary runs as a child process on a temporary data folder (e2etest.Env), driven
// through its CLI and HTTP API; the scripted model server is the only stand-in. The TypeScript
// client's test is in e2e/api: the Python tests alone take most of this package's time.
package clients
