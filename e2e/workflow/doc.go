// Package workflow tests agentrun end to end as a user meets it: workflows: named and tree
// workflows, workflow runs and their tools, concurrency and the workflow CLI.
//
// The real binary runs as a child process on a temporary data folder (e2etest.Env), driven
// through its CLI and HTTP API; the scripted model server is the only stand-in.
package workflow
