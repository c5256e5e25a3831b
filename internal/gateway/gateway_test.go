package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// recorder is a run that keeps what reached it; its answers echo the input, so what the test
// checks is that the gateway carried the bytes both ways unchanged.
type recorder struct {
	mu     sync.Mutex
	bodies [][]byte
	tools  []string
}

func (r *recorder) ModelCall(_ context.Context, c Call) (Reply, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies = append(r.bodies, c.Body)
	return Reply{Status: 200, ContentType: "text/event-stream", Body: append([]byte("event: echo\ndata: "), c.Body...)}, nil
}

func (r *recorder) CountTokens(_ context.Context, c Call) (Reply, error) {
	return Reply{Status: 200, ContentType: "application/json", Body: []byte(`{"input_tokens":1}`)}, nil
}

func (r *recorder) CallTool(_ context.Context, name string, input json.RawMessage) (string, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tools = append(r.tools, name+" "+string(input))
	return "ran " + name, false, nil
}

func post(t *testing.T, url, token string, hdr map[string]string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	if token != "" {
		req.Header.Set("x-api-key", token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// A token works for its own run's endpoint only: none or a dead one is 401, another run's or
// another wire's is 403, a body over the limit is 413; a good call reaches the run byte for byte.
func TestGatewayTokens(t *testing.T) {
	g := New(nil)
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	a, b := &recorder{}, &recorder{}
	tokA, releaseA := g.Register("run-a", WireAnthropic, a, nil)
	tokB, releaseB := g.Register("run-b", WireAnthropic, b, nil)
	defer releaseB()
	msgs := g.URL() + "/v2/gateway/anthropic/v1/messages"
	body := []byte(`{"model":"x","max_tokens":5,"unknown_field":{"kept":true},"messages":[]}`)

	if st, _ := post(t, msgs, "", nil, body); st != 401 {
		t.Errorf("no token: %d", st)
	}
	if st, _ := post(t, msgs, "agr_forged", nil, body); st != 401 {
		t.Errorf("unknown token: %d", st)
	}
	if st, out := post(t, msgs, tokA, map[string]string{RunHeader: "run-b"}, body); st != 403 || !strings.Contains(out, "another run") {
		t.Errorf("run-a's token naming run-b: %d %s", st, out)
	}
	if st, _ := post(t, g.URL()+"/v2/gateway/runs/run-b/mcp", tokA, map[string]string{"Content-Type": "application/json"}, []byte(`{}`)); st != 403 {
		t.Errorf("run-a's token on run-b's MCP endpoint: %d", st)
	}
	if st, _ := post(t, g.URL()+"/v2/gateway/openai/v1/responses", tokA, nil, body); st != 403 {
		t.Errorf("an anthropic token on the responses endpoint: %d", st)
	}
	big := bytes.Repeat([]byte("x"), MaxBody+1)
	if st, out := post(t, msgs, tokA, nil, big); st != 413 || !strings.Contains(out, "PayloadTooLarge") {
		t.Errorf("body over the limit: %d %s", st, out)
	}
	st, out := post(t, msgs, tokA, map[string]string{RunHeader: "run-a"}, body)
	if st != 200 || out != "event: echo\ndata: "+string(body) {
		t.Errorf("good call: %d %q", st, out)
	}
	if len(a.bodies) != 1 || !bytes.Equal(a.bodies[0], body) || len(b.bodies) != 0 {
		t.Errorf("run-a got %q, run-b got %d calls", a.bodies, len(b.bodies))
	}
	if st, _ := post(t, msgs, tokB, nil, body); st != 200 || len(b.bodies) != 1 {
		t.Errorf("run-b's own call: %d", st)
	}
	releaseA()
	if st, _ := post(t, msgs, tokA, nil, body); st != 401 {
		t.Errorf("token after its run's drive ended: %d", st)
	}
}

type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// The run's tools are served over MCP (the official SDK's client lists and calls them) with the
// run's token, and a call reaches the run with its arguments.
func TestGatewayMCP(t *testing.T) {
	g := New(nil)
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	r := &recorder{}
	tok, release := g.Register("run-a", WireAnthropic, r, []Tool{{Name: "write", Description: "write a file", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}})
	defer release()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	s, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: g.URL() + "/v2/gateway/runs/run-a/mcp", HTTPClient: &http.Client{Transport: bearer{tok}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lt, err := s.ListTools(t.Context(), nil)
	if err != nil || len(lt.Tools) != 1 || lt.Tools[0].Name != "write" {
		t.Fatalf("tools %+v %v", lt, err)
	}
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"path": "a.md"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "ran write" {
		t.Fatalf("call %+v %v", res, err)
	}
	if len(r.tools) != 1 || r.tools[0] != `write {"path":"a.md"}` {
		t.Errorf("the run got %q", r.tools)
	}
	// Without the token the MCP endpoint refuses.
	if _, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: g.URL() + "/v2/gateway/runs/run-a/mcp", MaxRetries: -1, DisableStandaloneSSE: true}, nil); err == nil {
		t.Errorf("MCP without a token connected")
	}
}

// The gateway reads the model, the stop reason and the usage from each wire's stream or object.
func TestSummarize(t *testing.T) {
	ant := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":4,\"cache_creation_input_tokens\":3,\"cache_creation\":{\"ephemeral_1h_input_tokens\":2},\"output_tokens\":1}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7}}\n\n"
	s := Summarize(WireAnthropic, []byte(ant))
	if s.Model != "claude-sonnet-4-5" || s.StopReason != "end_turn" || s.Text != "hi" || s.Usage.InputTokens != 10 || s.Usage.OutputTokens != 7 || s.Usage.CacheReadInputTokens != 4 || s.Usage.CacheCreationInputTokens != 3 || s.Usage.CacheCreation1hInputTokens != 2 {
		t.Errorf("anthropic stream: %+v", s)
	}
	resp := "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"model\":\"gpt-5\",\"status\":\"in_progress\"}}\n\n" +
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"ok\"}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"model\":\"gpt-5\",\"status\":\"completed\",\"usage\":{\"input_tokens\":20,\"input_tokens_details\":{\"cached_tokens\":5},\"output_tokens\":9,\"output_tokens_details\":{\"reasoning_tokens\":3}}}}\n\n"
	s = Summarize(WireResponses, []byte(resp))
	if s.Model != "gpt-5" || s.StopReason != "completed" || s.Text != "ok" || s.Usage.InputTokens != 15 || s.Usage.CacheReadInputTokens != 5 || s.Usage.OutputTokens != 9 || s.Usage.ReasoningTokens != 3 {
		t.Errorf("responses stream: %+v", s)
	}
	chat := "data: {\"model\":\"gpt-4.1\",\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: {\"model\":\"gpt-4.1\",\"choices\":[{\"finish_reason\":\"stop\"}]}\n\ndata: {\"model\":\"gpt-4.1\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":4,\"prompt_tokens_details\":{\"cached_tokens\":2}}}\n\ndata: [DONE]\n\n"
	s = Summarize(WireChat, []byte(chat))
	if s.Model != "gpt-4.1" || s.StopReason != "stop" || s.Text != "x" || s.Usage.InputTokens != 10 || s.Usage.CacheReadInputTokens != 2 || s.Usage.OutputTokens != 4 {
		t.Errorf("chat stream: %+v", s)
	}
	s = Summarize(WireAnthropic, []byte(`{"model":"claude-haiku-4-5","stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":2}}`))
	if s.Model != "claude-haiku-4-5" || s.StopReason != "tool_use" || s.Usage.InputTokens != 3 || s.Usage.OutputTokens != 2 {
		t.Errorf("anthropic object: %+v", s)
	}
}

// The unix socket serves the same endpoints with the same token rules, and Close removes it.
func TestGatewaySocket(t *testing.T) {
	g := New(nil)
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	sock := g.SocketPath()
	if sock == "" {
		t.Fatal("no socket path after Start")
	}
	a := &recorder{}
	tok, release := g.Register("run-a", WireAnthropic, a, nil)
	defer release()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	call := func(token string) int {
		req, _ := http.NewRequest("POST", "http://gateway/v2/gateway/anthropic/v1/messages", strings.NewReader(`{"model":"x"}`))
		req.Header.Set("x-api-key", token)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := call("agr_forged"); st != 401 {
		t.Errorf("unknown token over the socket: %d", st)
	}
	if st := call(tok); st != 200 || len(a.bodies) != 1 {
		t.Errorf("the run's call over the socket: %d, %d bodies", st, len(a.bodies))
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(sock)); !os.IsNotExist(err) {
		t.Errorf("the socket's folder is left after Close: %v", err)
	}
}

// A socket folder left by a gateway that was killed (no one listens) is removed by the next
// Start once it is over a minute old; a live gateway's, and a new one's, are kept.
func TestGatewayStaleSockets(t *testing.T) {
	live := New(nil)
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	old := time.Now().Add(-2 * time.Minute)
	os.Chtimes(filepath.Dir(live.SocketPath()), old, old)
	dead, err := os.MkdirTemp("", socketDirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dead, SocketName))
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // the socket file stays, with no one listening: a killed gateway's
	os.Chtimes(dead, old, old)
	young, err := os.MkdirTemp("", socketDirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(young)
	g := New(nil)
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("a dead gateway's socket folder is left: %v", err)
	}
	for _, keep := range []string{filepath.Dir(live.SocketPath()), young} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("%s was removed: %v", keep, err)
		}
	}
}
