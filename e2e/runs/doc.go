// Package runs tests agentrun end to end as a user meets it: what runs do: money (exact charges,
// caps, credits, unpriced models), triggers, groups and their limits, evaluation, learning, MCP
// servers, approvals and skills.
//
// The real binary runs as a child process on a temporary data folder (e2etest.Env), driven
// through its CLI and HTTP API; the scripted model server is the only stand-in.
package runs
