package catalog

import (
	"encoding/json"
	"strings"
)

// MCPPrefix starts the name of a tool an MCP server brings: mcp__SERVER__TOOL.
const MCPPrefix = "mcp__"

// MCPName is the name the model is offered an MCP server's tool by.
func MCPName(server, tool string) string { return MCPPrefix + server + "__" + tool }

// SplitMCPName splits mcp__SERVER__TOOL (a server name has no "__"; a tool's may).
func SplitMCPName(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, MCPPrefix)
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "__")
	return server, tool, ok && server != "" && tool != ""
}

// MCPTool is what an MCP server says of one of its tools.
type MCPTool struct {
	Name        string
	Description string
	// Schema is the server's JSON Schema of the arguments (an object schema).
	Schema json.RawMessage
	// ReadOnly and Idempotent are its readOnlyHint and idempotentHint.
	ReadOnly, Idempotent bool
}

// MCPEntry is the catalog's dynamic entry for an MCP server's tool: described by the server, its
// input decoded generically (any keys, each once, not in two cases: the server validates them),
// safe to repeat after a crash when the server marks it read-only or idempotent.
func MCPEntry(server string, t MCPTool) Entry {
	schema := t.Schema
	if len(schema) == 0 || string(schema) == "null" {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	desc := t.Description
	if desc == "" {
		desc = "Tool " + t.Name + " of the MCP server " + server + "."
	}
	return Entry{Name: MCPName(server, t.Name), Description: desc, Schema: schema, ReadOnly: t.ReadOnly, Repeatable: t.Idempotent, MCP: true}
}
