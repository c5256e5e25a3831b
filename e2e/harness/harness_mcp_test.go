package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Claude Code is served the run's tools by the gateway's MCP server "agentrun", a ticked MCP
// tool among them as mcp__SERVER__TOOL, so it calls mcp__agentrun__mcp__SERVER__TOOL.
const claudeMCPScript = `
entries:
  - name: router
    match: "Route this request"
    turns:
      - text: '{"family": "sonnet", "confidence": 0.9}'
  - name: stock
    match: "Check the stock"
    turns:
      - text: "I'll look it up."
        tool_calls:
          - name: mcp__agentrun__mcp__stock__lookup
            input: {item: "tea"}
      - text: "stock says: {{last_tool_result}}"
`

// newStockServer is a streamable-HTTP MCP server made with the Go SDK: lookup (readOnlyHint) and
// restock (no hints), each counting its calls.
func newStockServer(t *testing.T) (*httptest.Server, func(string) int) {
	var mu sync.Mutex
	calls := map[string]int{}
	server := mcp.NewServer(&mcp.Implementation{Name: "stock", Version: "1"}, nil)
	tool := func(name string) func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
		return func(_ context.Context, _ *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			calls[name]++
			n := calls[name]
			mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s #%d: 7 boxes of %v", name, n, in["item"])}}}, nil, nil
		}
	}
	mcp.AddTool(server, &mcp.Tool{Name: "lookup", Description: "Look an item's stock up.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, tool("lookup"))
	mcp.AddTool(server, &mcp.Tool{Name: "restock", Description: "Order more of an item."}, tool("restock"))
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(ts.Close)
	return ts, func(name string) int {
		mu.Lock()
		defer mu.Unlock()
		return calls[name]
	}
}

// TestClaudeMCP: an agent on the claude-agent harness with a streamable-HTTP MCP server (Go SDK)
// of which one tool is ticked. The real claude CLI is offered the ticked tool (through the
// gateway's MCP endpoint) and not the unticked one; its call is a journal step of the run naming
// the MCP server, reaches the server once, and its result reaches the model.
func TestClaudeMCP(t *testing.T) {
	t.Parallel()
	ts, calls := newStockServer(t)
	e := NewClaudeEnv(t, claudeMCPScript)
	modelURL, bodies := RecordModel(t, e)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules", "--log-level", "debug"}, "ANTHROPIC_BASE_URL="+modelURL)
	agent := fmt.Sprintf(`{"metadata":{"name":"stocker"},"spec":{"harness":"claude-agent","computer":{"kind":"none"},"approvals":"never-ask",
  "mcpServers":[{"name":"stock","url":%q,"tools":["lookup"]}]}}`, ts.URL)
	var apiErr api.Error
	if st := e.Do("PUT", "/v2/agents/stocker", agent, &apiErr); st != 201 {
		t.Fatalf("create a claude-agent agent with an MCP server: HTTP %d %+v", st, apiErr)
	}
	e.StartRun("stocker", "s1", "Check the stock of tea")
	if a := e.AnswerOf("s1"); !strings.HasPrefix(a, "stock says: lookup #1: 7 boxes of tea") {
		t.Errorf("answer %q: the MCP tool's result did not reach the model", a)
	}
	offered := OfferedTools(t, bodies(), "Check the stock")
	if !slices.Contains(offered, "mcp__agentrun__mcp__stock__lookup") {
		t.Errorf("the ticked MCP tool is not offered to the model: %v", offered)
	}
	for _, n := range offered {
		if strings.Contains(n, "restock") {
			t.Errorf("the unticked MCP tool is offered: %v", offered)
		}
	}
	if n := calls("lookup"); n != 1 {
		t.Errorf("lookup reached the MCP server %d times, want 1", n)
	}
	if n := calls("restock"); n != 0 {
		t.Errorf("restock reached the MCP server %d times", n)
	}
	var step *api.Step
	for _, s := range e.Steps("s1") {
		if s.Key == "t0/tool/0" {
			step = &s
		}
	}
	if step == nil {
		t.Fatalf("no step t0/tool/0 for the MCP call: %+v", e.Steps("s1"))
	}
	var args struct {
		Tool      string `json:"tool"`
		MCPServer string `json:"mcpServer"`
	}
	json.Unmarshal(step.Args, &args)
	if args.Tool != "mcp__stock__lookup" || args.MCPServer != "stock" || step.State != api.StepCompleted {
		t.Errorf("the MCP call's step: %s %s %s", step.State, step.Args, step.Result)
	}
}
