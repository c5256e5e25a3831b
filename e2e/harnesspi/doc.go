// Package harnesspi tests agentrun end to end as a user meets it: the pi harness as its real CLI
// at the pinned version from npm, through the scenarios every harness runs
// (e2etest.HarnessQuickstart, ...), the Responses format of Codex and pi against the scripted
// model server, and the example script on every harness. Tests skip when a harness CLI cannot be
// installed.
//
// The real binary runs as a child process on a temporary data folder (e2etest.Env), driven
// through its CLI and HTTP API; the scripted model server is the only stand-in.
package harnesspi
