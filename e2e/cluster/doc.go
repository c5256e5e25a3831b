// Package cluster tests agentrun end to end as a user meets it: the PostgreSQL store and scale-out:
// a server and runners sharing one store, groups across servers, a PostgreSQL restart, resealing
// secrets, upgrades, backups, remote CLI use, crash recovery (SIGKILL) with and without money at
// stake, and a full store. Tests that need PostgreSQL skip without AGENTRUN_TEST_POSTGRES_URL.
//
// The real binary runs as a child process on a temporary data folder (e2etest.Env), driven
// through its CLI and HTTP API; the scripted model server is the only stand-in.
package cluster
