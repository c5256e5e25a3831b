// Package harnessext tests agentrun end to end as a user meets it: what a harness run is given
// beyond its model calls: the agent's skills, learning (notes, learned skills and workflows,
// caps, crashes) and workflow agent nodes on every harness. Tests skip when a harness CLI is
// missing.
//
// The real binary runs as a child process on a temporary data folder (e2etest.Env), driven
// through its CLI and HTTP API; the scripted model server is the only stand-in.
package harnessext
