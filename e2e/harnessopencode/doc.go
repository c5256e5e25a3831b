// Package harnessopencode tests agentrun end to end as a user meets it: the OpenCode harness as
// its real binary at the pinned version from npm, through the scenarios every harness runs
// (e2etest.HarnessQuickstart, ...), and OpenCode not installed on first use. Tests skip when
// OpenCode cannot be installed.
//
// The real binary runs as a child process on a temporary data folder (e2etest.Env), driven
// through its CLI and HTTP API; the scripted model server is the only stand-in.
package harnessopencode
