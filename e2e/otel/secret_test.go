package otel

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/telemetry"
)

const vaultToken = "Bearer vault-tok-do-not-trace-5151"

// The model puts the MCP server's secret into a tool call's arguments (as a leaky model might).
var secretScript = fmt.Sprintf(`
entries:
  - name: leak
    match: "Echo it"
    turns:
      - tool_calls:
          - name: mcp__vault__echo
            input: {text: %q}
      - text: "echoed: {{last_tool_result}}"
`, vaultToken)

// newVault is a streamable-HTTP MCP server (the Go SDK) whose echo tool answers its input and
// the Authorization header it was sent.
func newVault(t *testing.T) *httptest.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "vault", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Echo the text.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
			auth := req.Extra.Header.Get("Authorization")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%v (auth %s)", in["text"], auth)}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != vaultToken {
			http.Error(w, "wrong token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// TestContentRedacted: with content captured, a secret the run's MCP server was given is on no
// span: the tool call's arguments and the model's messages show its reference instead.
func TestContentRedacted(t *testing.T) {
	t.Parallel()
	r := newHTTPReceiver(t)
	vault := newVault(t)
	e := NewEnv(t, secretScript)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules", "--log-level", "debug"},
		otelEnv(r, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true")...)
	if st := e.DoAs(e.PersonSession(), "PUT", "/v2/secrets/vault-token", `{"data":{"TOKEN":"`+vaultToken+`"}}`, nil); st != 200 {
		t.Fatalf("set the secret: HTTP %d", st)
	}
	agent := fmt.Sprintf(`{"metadata":{"name":"keeper"},"spec":{"computer":{"kind":"none"},"approvals":"never-ask",
  "mcpServers":[{"name":"vault","url":%q,"headers":{"Authorization":"secret:vault-token/TOKEN"},"tools":["echo"]}]}}`, vault.URL)
	if st := e.Do("PUT", "/v2/agents/keeper", agent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.StartRun("keeper", "k1", "Echo it")
	run := e.WaitPhase("k1", 30*time.Second, api.PhaseSucceeded)
	spans := waitSpans(t, r, telemetry.RunTraceID(run.Metadata.UID).String(), "invoke_agent keeper", 15*time.Second)
	secret := strings.TrimPrefix(vaultToken, "Bearer ")
	for _, s := range spans {
		for _, kv := range s.Attributes {
			if strings.Contains(fmt.Sprint(value(kv.Value)), secret) {
				t.Errorf("span %s: %s holds the secret", s.Name, kv.Key)
			}
		}
	}
	tools := named(spans, "execute_tool mcp__vault__echo")
	if len(tools) != 1 {
		t.Fatalf("spans: %s", names(spans))
	}
	wantAttr(t, tools[0], "gen_ai.tool.type", "extension")
	args, _ := tools[0].Attr("gen_ai.tool.call.arguments")
	if s, _ := args.(string); !strings.Contains(s, "[secret:vault-token/TOKEN]") {
		t.Errorf("captured arguments %q do not show the secret's reference", s)
	}
	res, _ := tools[0].Attr("gen_ai.tool.call.result")
	if s, _ := res.(string); !strings.Contains(s, "auth [secret:vault-token/TOKEN]") {
		t.Errorf("captured result %q", s)
	}
}
