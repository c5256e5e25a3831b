// Package fork tests forking a run end to end (`agentrun runs fork`, POST
// /v2/agentruns/NAME/fork): a new run made of another's completed steps up to one step and its
// run folder as that step left it, which goes on live. On the built-in loop, a harness (Claude
// Code) and a workflow; with a message at the fork point; its refusals; and SIGKILL in the middle
// of making one.
//
// The real binary runs as a child process on a temporary data folder (e2etest.Env), driven
// through its CLI and HTTP API; the scripted model server is the only stand-in.
package fork
