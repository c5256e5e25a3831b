package server

import (
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/api"
)

// A pattern on an MCP tool is refused only when the tool has none of the arguments a pattern is
// matched against; a tool with one (path), a rule without a pattern and another server's tool pass.
func TestCheckMCPPatterns(t *testing.T) {
	t.Parallel()
	tools := []api.MCPTool{
		{Name: "echo", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}}},
		{Name: "write_file", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{}, "content": map[string]any{}}}},
	}
	rules := func(m ...string) *api.Approvals {
		a := &api.Approvals{}
		for _, x := range m {
			a.Rules = append(a.Rules, api.ApprovalRule{Match: x, Action: "ask"})
		}
		return a
	}
	for _, ok := range []*api.Approvals{nil, rules("mcp__s__echo"), rules("mcp__s__write_file(notes/**)"), rules("mcp__other__echo(x*)"), rules("bash(go test *)")} {
		if err := checkMCPPatterns(ok, "s", tools); err != nil {
			t.Errorf("%+v refused: %v", ok, err)
		}
	}
	err := checkMCPPatterns(rules("write", "mcp__s__echo(hi*)"), "s", tools)
	e, ok := api.AsError(err)
	if !ok || e.Field != "spec.approvals.rules[1].match" || !strings.Contains(e.Message, "its arguments are [message]") {
		t.Fatalf("want a refusal naming the rule and the arguments, got %v", err)
	}
}
