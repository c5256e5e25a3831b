// Package console tests agentrun end to end as a user meets it: the web console in a real Chromium:
// sign-in, live runs, learning review and takeover of a run's computer. Tests skip without
// Chromium.
//
// The real binary runs as a child process on a temporary data folder (e2etest.Env), driven
// through its CLI and HTTP API; the scripted model server is the only stand-in.
package console
