package protocols

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	. "agentrun.dev/agentrun/e2e/e2etest"
)

// bearer adds the API token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestOutlivesTimeouts: a run that takes longer than the server's read and write timeouts still
// answers an MCP tool call (the official Go SDK's client) and a blocking A2A SendMessage: the
// answers wait on the run, not on the timeouts.
func TestOutlivesTimeouts(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, `
entries:
  - name: slow
    match: "Take your time"
    turns:
      - text: "Done, slowly."
        latency: 2500ms
`)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--read-timeout", "1s", "--write-timeout", "1s"})
	if st := e.Do("PUT", "/v2/agents/slow-agent", `{"metadata": {"name": "slow-agent"}, "spec": {"model": {"name": "claude-sonnet-4-5"}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	c := mcp.NewClient(&mcp.Implementation{Name: "agentrun-e2e-go", Version: "1"}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.URL + "/v2/mcp", HTTPClient: &http.Client{Transport: bearer{e.Token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "slow_agent", Arguments: map[string]any{"input": "Take your time"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; res.IsError || text != "Done, slowly." {
		t.Errorf("MCP call: %v %q", res.IsError, text)
	}

	body := `{"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Take your time"}]}}}`
	req, _ := http.NewRequestWithContext(ctx, "POST", e.URL+"/v2/a2a/slow-agent", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.Token)
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var out struct {
		Result struct {
			Task struct {
				Status    struct{ State string }
				Artifacts []struct{ Parts []struct{ Text string } }
			}
		}
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Result.Task.Status.State != "TASK_STATE_COMPLETED" ||
		len(out.Result.Task.Artifacts) != 1 || out.Result.Task.Artifacts[0].Parts[0].Text != "Done, slowly." {
		t.Errorf("A2A SendMessage: %d %s", resp.StatusCode, b)
	}
}
