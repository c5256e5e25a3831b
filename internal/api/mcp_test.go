package api

import (
	"strings"
	"testing"
)

// Each bad MCP server spec is refused with the field at fault.
func TestValidateMCPServers(t *testing.T) {
	ok := MCPServer{Name: "files", Command: "node", Args: []string{"x.js"}, Env: map[string]string{"TOKEN": "secret:gh/TOKEN"}, Tools: []string{"read_file", "get-sum"}}
	if err := validateMCPServers([]MCPServer{ok, {Name: "web", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "secret:web/AUTH"}}}, "builtin"); err != nil {
		t.Fatalf("good specs refused: %v", err)
	}
	cases := []struct {
		name    string
		servers []MCPServer
		harness Harness
		field   string
	}{
		{"no name", []MCPServer{{Command: "x"}}, "builtin", "spec.mcpServers[0].name"},
		{"bad name", []MCPServer{{Name: "My__Server", Command: "x"}}, "builtin", "spec.mcpServers[0].name"},
		{"twice", []MCPServer{ok, ok}, "builtin", "spec.mcpServers[1].name"},
		{"neither", []MCPServer{{Name: "a"}}, "builtin", "spec.mcpServers[0].command"},
		{"both", []MCPServer{{Name: "a", Command: "x", URL: "http://h/"}}, "builtin", "spec.mcpServers[0].url"},
		{"ftp url", []MCPServer{{Name: "a", URL: "ftp://h/mcp"}}, "builtin", "spec.mcpServers[0].url"},
		{"user in url", []MCPServer{{Name: "a", URL: "https://u:p@h/mcp"}}, "builtin", "spec.mcpServers[0].url"},
		{"headers on stdio", []MCPServer{{Name: "a", Command: "x", Headers: map[string]string{"A": "b"}}}, "builtin", "spec.mcpServers[0].headers"},
		{"env on http", []MCPServer{{Name: "a", URL: "https://h/", Env: map[string]string{"A": "b"}}}, "builtin", "spec.mcpServers[0].env"},
		{"bad env name", []MCPServer{{Name: "a", Command: "x", Env: map[string]string{"1A": "b"}}}, "builtin", "spec.mcpServers[0].env.1A"},
		{"bad secret ref", []MCPServer{{Name: "a", Command: "x", Env: map[string]string{"A": "secret:nokey"}}}, "builtin", "spec.mcpServers[0].env.A"},
		{"header newline", []MCPServer{{Name: "a", URL: "https://h/", Headers: map[string]string{"X": "a\nb"}}}, "builtin", "spec.mcpServers[0].headers.X"},
		{"bad tool", []MCPServer{{Name: "a", Command: "x", Tools: []string{"ok", "no spaces"}}}, "builtin", "spec.mcpServers[0].tools[1]"},
		{"tool twice", []MCPServer{{Name: "a", Command: "x", Tools: []string{"t", "t"}}}, "builtin", "spec.mcpServers[0].tools[1]"},
		// Issue 24: an 80-character tool name was accepted on the builtin harness, offered as
		// mcp__a__ + 80 characters, which the vendors refuse.
		{"builtin name too long", []MCPServer{{Name: "a", Command: "x", Tools: []string{strings.Repeat("t", 80)}}}, "builtin", "spec.mcpServers[0].tools[0]"},
		{"builtin name just too long", []MCPServer{{Name: "srv", Command: "x", Tools: []string{strings.Repeat("t", 55)}}}, "", "spec.mcpServers[0].tools[0]"},
		{"harness name too long", []MCPServer{{Name: "a-rather-long-server-name", URL: "https://h/", Tools: []string{"a_tool_with_a_long_name"}}}, "claude-agent", "spec.mcpServers[0].tools[0]"},
	}
	// mcp__srv__ + 54 characters is 64: offered as it is.
	if err := validateMCPServers([]MCPServer{{Name: "srv", Command: "x", Tools: []string{strings.Repeat("t", 54)}}}, "builtin"); err != nil {
		t.Errorf("a 64-character offered name refused: %v", err)
	}
	// A harness other than builtin gets the servers' ticked tools too (through the gateway).
	if err := validateMCPServers([]MCPServer{ok}, "claude-agent"); err != nil {
		t.Errorf("an MCP server on claude-agent refused: %v", err)
	}
	for _, c := range cases {
		err := validateMCPServers(c.servers, c.harness)
		e, isAPI := AsError(err)
		if !isAPI || e.Field != c.field {
			t.Errorf("%s: got %v, want an error on %s", c.name, err, c.field)
		}
	}
}
