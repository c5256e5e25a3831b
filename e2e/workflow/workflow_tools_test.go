package workflow

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// TestWorkflowToolNotOffered: saving an agent whose workflow calls a tool the agent's runs are
// not offered is refused at the call's pointer (tool_unavailable, naming the tool and the tools
// it has), instead of the run failing when it reaches the call; the same workflow saves on an
// agent that has the tool, and a name the server does not know (an MCP server's tool) is left to
// the run.
func TestWorkflowToolNotOffered(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, "entries:\n  - name: any\n    match: \"*\"\n    turns:\n      - text: done\n")
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"})
	doc := func(tool string) string {
		return fmt.Sprintf(`{"v": 2, "name": "t", "schemas": {"In": {"type": "object"}, "R": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "R", "path": "r"},
  "root": {"node": "chain", "steps": [{"node": "call", "label": "c", "via": "tool", "tool": %q, "args": {"url": "https://example.com"}, "out": "R", "as": "r", "deadline_s": 30}]}}`, tool)
	}
	put := func(name, tools, tool string) (int, api.Error) {
		var apiErr api.Error
		body := fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"tools":%s,"computer":{"kind":"none"},"workflow":%s}}`, name, tools, doc(tool))
		st := e.Do("PUT", "/v2/agents/"+name, body, &apiErr)
		return st, apiErr
	}
	st, apiErr := put("nofetch", `["ask_person"]`, "web_fetch")
	if st < 400 || apiErr.Code != api.CodeInvalid || apiErr.Field != "spec.workflow/root/steps/0/tool" ||
		!strings.Contains(apiErr.Message, `tool_unavailable: tool "web_fetch" is not one this agent's runs are offered (theirs: ask_person)`) {
		b, _ := json.Marshal(apiErr)
		t.Errorf("an agent without web_fetch saving a workflow that calls it: HTTP %d %s", st, b)
	}
	if st, apiErr := put("fetcher", `["web_fetch"]`, "web_fetch"); st != 201 {
		t.Errorf("an agent with web_fetch: HTTP %d %+v", st, apiErr)
	}
	if st, apiErr := put("mcpish", `[]`, "mcp__weather__forecast"); st != 201 {
		t.Errorf("a tool name the server does not know is left to the run: HTTP %d %+v", st, apiErr)
	}
}
