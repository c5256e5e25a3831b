// Package harnessguard tests agentrun end to end as a user meets it: a harness inside the run's
// computer (the sandbox or Docker) beside the agent's commands, its home guarded against a
// scripted agent taking it over from inside the computer, workflow nodes sharing a computer,
// and a runner SIGKILLed mid-run on PostgreSQL with another finishing the run. Tests skip when a
// harness CLI, bubblewrap, Docker or PostgreSQL is missing.
//
// The real binary runs as a child process on a temporary data folder (e2etest.Env), driven
// through its CLI and HTTP API; the scripted model server is the only stand-in.
package harnessguard
