// Package protocols tests the protocols agentrun serves its agents over, end to end, with clients
// no one here wrote, from npm at pinned versions: the official MCP TypeScript SDK's client and the
// MCP Inspector's CLI against /v2/mcp, and the official A2A JS SDK's client against
// /v2/a2a/AGENT. Each client is a folder under clients/ (package.json, a lockfile without
// resolved URLs, its script); the test installs it with `npm ci` into a cache
// (AGENTRUN_PROTOCOL_CLIENTS_CACHE, else the user's cache folder) and skips, saying why, when
// node or npm is missing or cannot install it.
//
// The real binary runs as a child process on a temporary data folder (e2etest.Env); the scripted
// model server is the only stand-in.
package protocols
