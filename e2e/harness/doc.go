// Package harness tests agentrun end to end as a user meets it: the Claude Code and Codex
// harnesses (and Codex on Anthropic through the gateway) as their real CLIs at their pinned
// versions from npm, against the scripted model server: the scenarios every harness runs
// (e2etest.HarnessQuickstart, ...), the gateway's token counts, replay, unpriced models, groups
// and evaluation, and MCP servers. Tests skip when a harness CLI cannot be installed.
//
// The real binary runs as a child process on a temporary data folder (e2etest.Env), driven
// through its CLI and HTTP API; the scripted model server is the only stand-in.
package harness
