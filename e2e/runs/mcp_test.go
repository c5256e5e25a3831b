package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const mcpStdioScript = `
entries:
  - name: echo
    match: "Echo through MCP"
    turns:
      - text: "I will echo it."
        tool_calls:
          - name: mcp__everything__echo
            input: {message: "hello from the agent"}
      - tool_calls:
          - name: mcp__files__write_file
            input: {path: "mcp-note.txt", content: "written by the filesystem server"}
      - text: "echoed and wrote: {{last_tool_result}}"
`

// TestMCPStdio: two real MCP servers from npm (server-everything, server-filesystem) over stdio.
// A ticked name the server lacks, and a server that does not start, are refused at create with
// the field path; agents mcp-tools lists a server's tools with which are ticked; the first model
// request offers the ticked tools as mcp__SERVER__TOOL and not the unticked ones; a call the
// approvals ask about waits in Waiting/Approval until a person approves it through the CLI; the
// echo's result reaches the model, and the filesystem server (started in the run folder) writes
// a file the run's folder then holds.
func TestMCPStdio(t *testing.T) {
	t.Parallel()
	npmDir := MCPNPMServers(t)
	e := NewEnv(t, mcpStdioScript)
	modelURL, bodies := RecordModel(t, e)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "ANTHROPIC_BASE_URL="+modelURL)

	everything := filepath.Join(npmDir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	files := filepath.Join(npmDir, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
	agent := func(ticked string, extra string) string {
		return fmt.Sprintf(`{"metadata":{"name":"mcp-agent"},"spec":{"computer":{"kind":"none"},
  "mcpServers":[{"name":"everything","command":"node","args":[%q,"stdio"],"tools":[%s]},
                {"name":"files","command":"node","args":[%q,"."],"tools":["write_file"]}%s],
  "approvals":{"default":"allow","rules":[{"match":"mcp__everything__echo","action":"ask"}]}}}`, everything, ticked, files, extra)
	}

	var apiErr api.Error
	if st := e.Do("PUT", "/v2/agents/mcp-agent", agent(`"echo","no-such-tool"`, ""), &apiErr); st != 422 || apiErr.Field != "spec.mcpServers[0].tools[1]" || !strings.Contains(apiErr.Message, "no-such-tool") {
		t.Errorf("a ticked tool the server lacks: HTTP %d %+v", st, apiErr)
	}
	apiErr = api.Error{}
	broken := `,{"name":"broken","command":"sh","args":["-c","echo cannot read my config >&2; exit 3"],"tools":["x"]}`
	if st := e.Do("PUT", "/v2/agents/mcp-agent", agent(`"echo"`, broken), &apiErr); st != 422 || apiErr.Field != "spec.mcpServers[2]" || !strings.Contains(apiErr.Message, "cannot read my config") {
		t.Errorf("a server that does not start: HTTP %d %+v", st, apiErr)
	}
	apiErr = api.Error{}
	if st := e.Do("PUT", "/v2/agents/mcp-agent", `{"metadata":{"name":"mcp-agent"},"spec":{"mcpServers":[{"name":"x","url":"ftp://example.com/mcp"}]}}`, &apiErr); st != 422 || apiErr.Field != "spec.mcpServers[0].url" {
		t.Errorf("a bad url: HTTP %d %+v", st, apiErr)
	}
	// A pattern on an MCP tool none of whose arguments a pattern matches (echo has only message)
	// could never match: the rule is refused, not left to let every call through.
	apiErr = api.Error{}
	patterned := strings.Replace(agent(`"echo"`, ""), `"match":"mcp__everything__echo"`, `"match":"mcp__everything__echo(hi*)"`, 1)
	if st := e.Do("PUT", "/v2/agents/mcp-agent", patterned, &apiErr); st != 422 || apiErr.Field != "spec.approvals.rules[0].match" || !strings.Contains(apiErr.Message, "its arguments are [message]") {
		t.Errorf("a pattern on a tool without a matched argument: HTTP %d %+v", st, apiErr)
	}
	if st := e.Do("GET", "/v2/agents/mcp-agent", nil, nil); st != 404 {
		t.Errorf("a refused agent was stored: HTTP %d", st)
	}
	if st := e.Do("PUT", "/v2/agents/mcp-agent", agent(`"echo"`, ""), nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}

	list := e.MustCLI(0, "agents", "mcp-tools", "mcp-agent", "everything").Stdout
	var echoRow, sumRow string
	for _, l := range strings.Split(list, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[0] == "echo" {
			echoRow = l
		} else if len(f) > 2 && f[0] == "get-sum" {
			sumRow = l
		}
	}
	if !strings.Contains(echoRow, "yes") || !strings.Contains(echoRow, "read-only") || !strings.Contains(sumRow, "no") {
		t.Errorf("agents mcp-tools:\n%s", list)
	}
	var caps map[string]any
	e.Do("GET", "/v2/capabilities", nil, &caps)
	if m, ok := caps["mcp"].(map[string]any); !ok {
		t.Errorf("capabilities lack mcp: %v", caps)
	} else if where, _ := m["stdio"].(string); !strings.Contains(where, "inside the run's computer") {
		// A sandbox's or desktop's stdio servers start inside it (TestMCPStdioInSandbox).
		t.Errorf("capabilities say stdio MCP servers run %q", where)
	}

	e.StartRun("mcp-agent", "m1", "Echo through MCP, please")
	r := e.WaitPhase("m1", 60*time.Second, api.PhaseWaiting, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseWaiting || r.Status.Reason != api.ReasonApproval || !strings.Contains(r.Status.WaitingOn.Detail, "mcp__everything__echo") {
		t.Fatalf("run m1: %s/%s %+v", r.Status.Phase, r.Status.Reason, r.Status.WaitingOn)
	}
	code := e.SetupCode()
	if res := e.CLIIn(e.Dir, "correct horse battery\n", "login", "--setup-code", code, "--password-stdin"); res.Code != 0 {
		t.Fatalf("login: exit %d %s", res.Code, res.Stderr)
	}
	var approvals struct {
		Items []struct {
			ID   int64
			Tool string
		}
	}
	if err := json.Unmarshal([]byte(e.MustCLI(0, "runs", "approvals", "m1", "-o", "json").Stdout), &approvals); err != nil || len(approvals.Items) != 1 || approvals.Items[0].Tool != "mcp__everything__echo" {
		t.Fatalf("approvals: %+v %v", approvals, err)
	}
	e.MustCLI(0, "runs", "approve", "m1", JSONNumber(approvals.Items[0].ID))
	answer := e.AnswerOf("m1")
	res := e.ToolResults("m1")
	if r := res["t0/tool/0"]; r.IsError || !strings.Contains(r.Content, "hello from the agent") {
		t.Errorf("the echo's result: %+v", r)
	}
	if !strings.HasPrefix(answer, "echoed and wrote: ") || res["t1/tool/0"].IsError {
		t.Errorf("answer %q, write_file %+v", answer, res["t1/tool/0"])
	}
	if got := e.MustCLI(0, "runs", "read-file", "m1", "mcp-note.txt").Stdout; got != "written by the filesystem server" {
		t.Errorf("the run folder's mcp-note.txt: %q", got)
	}
	offered := OfferedTools(t, bodies(), "Echo through MCP")
	if !Contains(offered, "mcp__everything__echo") || !Contains(offered, "mcp__files__write_file") || Contains(offered, "mcp__everything__get-sum") || Contains(offered, "mcp__files__read_text_file") {
		t.Errorf("the model was offered %v", offered)
	}
}

const mcpHTTPScript = `
entries:
  - name: lookup
    match: "Look it up"
    turns:
      - tool_calls:
          - name: mcp__shop__lookup
            input: {item: "tea"}
      - text: "lookup: {{last_tool_result}}"
  - name: charge
    match: "Charge it"
    turns:
      - tool_calls:
          - name: mcp__shop__charge
            input: {amount: 7}
      - text: "charged: {{last_tool_result}}"
  - name: gone
    match: "Use the gone server"
    turns:
      - tool_calls:
          - name: mcp__gone__lookup
            input: {item: "tea"}
      - text: "gone: {{last_tool_result}}"
`

// shopServer is a streamable-HTTP MCP server made with the Go SDK: lookup (readOnlyHint) and
// charge (no hints) count their calls, and the first call of each blocks until its client goes,
// so the test can kill the agentrun server mid-call. It records the Authorization headers.
type shopServer struct {
	mu      sync.Mutex
	calls   map[string]int
	auth    []string
	started chan string
}

func newShopServer(t *testing.T, token string) (*shopServer, *httptest.Server) {
	s := &shopServer{calls: map[string]int{}, started: make(chan string, 4)}
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	tool := func(name string) func(ctx context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
		return func(ctx context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
			s.mu.Lock()
			s.calls[name]++
			n := s.calls[name]
			s.mu.Unlock()
			if n == 1 {
				s.started <- name
				select { // the agentrun server is killed meanwhile
				case <-ctx.Done():
				case <-time.After(60 * time.Second):
				}
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s #%d for %v", name, n, in)}}}, nil, nil
		}
	}
	mcp.AddTool(server, &mcp.Tool{Name: "lookup", Description: "Look an item up.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, tool("lookup"))
	mcp.AddTool(server, &mcp.Tool{Name: "charge", Description: "Charge an amount."}, tool("charge"))
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		s.mu.Unlock()
		if r.Header.Get("Authorization") != token {
			http.Error(w, "wrong token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return s, ts
}

func (s *shopServer) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[name]
}

// TestMCPHTTP: a streamable-HTTP MCP server built with the Go SDK, its token a sealed secret the
// agent's header names. The token reaches the server and never the timeline, the steps, the
// model's requests or the server's log. SIGKILL of agentrun mid-call: the readOnlyHint tool is
// called again after the restart and the run finishes; the unannotated one parks the run in
// NeedsResolution without a second call. A server gone at run time is the tool's error for the
// model and mcp.unavailable on the timeline, not a failed run.
func TestMCPHTTP(t *testing.T) {
	t.Parallel()
	const token = "Bearer mcp-tok-do-not-leak-4242"
	shop, ts := newShopServer(t, token)
	_, gone := newShopServer(t, token)
	e := NewEnv(t, mcpHTTPScript)
	modelURL, bodies := RecordModel(t, e)
	args := []string{"serve", "--listen", "127.0.0.1:0", "--router", "rules", "--log-level", "debug"}
	e.StartWith(args, "ANTHROPIC_BASE_URL="+modelURL)

	agent := fmt.Sprintf(`{"metadata":{"name":"shopper"},"spec":{"computer":{"kind":"none"},"approvals":"never-ask",
  "mcpServers":[{"name":"shop","url":%q,"headers":{"Authorization":"secret:shop-token/TOKEN"},"tools":["lookup","charge"]},
                {"name":"gone","url":%q,"headers":{"Authorization":"secret:shop-token/TOKEN"},"tools":["lookup"]}]}}`, ts.URL, gone.URL)
	var apiErr api.Error
	if st := e.Do("PUT", "/v2/agents/shopper", agent, &apiErr); st != 422 || apiErr.Code != api.CodeSecretNotFound || apiErr.Field != "spec.mcpServers[0].headers.Authorization" {
		t.Errorf("an agent naming a secret that does not exist: HTTP %d %+v", st, apiErr)
	}
	session := e.PersonSession()
	if st := e.DoAs(session, "PUT", "/v2/secrets/shop-token", `{"data":{"TOKEN":"`+token+`"}}`, nil); st != 200 {
		t.Fatalf("set the secret: HTTP %d", st)
	}
	if st := e.Do("PUT", "/v2/agents/shopper", agent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	gone.Close()

	// A read-only tool cut off by SIGKILL is called again.
	e.StartRun("shopper", "h1", "Look it up")
	if got := <-shop.started; got != "lookup" {
		t.Fatalf("first blocked call: %s", got)
	}
	e.Kill()
	e.StartWith(args, "ANTHROPIC_BASE_URL="+modelURL)
	if a := e.AnswerOf("h1"); !strings.HasPrefix(a, "lookup: lookup #2 for map[item:tea]") {
		t.Errorf("h1 answer %q", a)
	}
	if n := shop.count("lookup"); n != 2 {
		t.Errorf("lookup called %d times, want 2 (cut off, then again)", n)
	}

	// An unannotated tool cut off by SIGKILL parks for a person; it is not called again.
	e.StartRun("shopper", "h2", "Charge it")
	if got := <-shop.started; got != "charge" {
		t.Fatalf("second blocked call: %s", got)
	}
	e.Kill()
	e.StartWith(args, "ANTHROPIC_BASE_URL="+modelURL)
	r := e.WaitPhase("h2", 30*time.Second, api.PhaseNeedsResolution, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseNeedsResolution || r.Status.WaitingOn == nil || r.Status.WaitingOn.StepKey != "t0/tool/0" {
		t.Fatalf("h2 after the restart: %s %+v", r.Status.Phase, r.Status.WaitingOn)
	}
	if n := shop.count("charge"); n != 1 {
		t.Errorf("charge called %d times, want 1", n)
	}

	// The server that went away: the model is told, the run goes on.
	e.StartRun("shopper", "h3", "Use the gone server")
	if a := e.AnswerOf("h3"); !strings.HasPrefix(a, "gone: ") || !strings.Contains(a, "gone") {
		t.Errorf("h3 answer %q", a)
	}
	if res := e.ToolResults("h3")["t0/tool/0"]; !res.IsError {
		t.Errorf("a call of the gone server's tool: %+v", res)
	}
	if !HasEvent(e.Events("h3"), api.EventMCPUnavailable, "gone") {
		t.Error("h3's timeline does not say the MCP server gone is unavailable")
	}

	shop.mu.Lock()
	reached := Contains(shop.auth, token)
	shop.mu.Unlock()
	if !reached {
		t.Error("the secret header never reached the MCP server")
	}
	secret := strings.TrimPrefix(token, "Bearer ")
	for _, run := range []string{"h1", "h2", "h3"} {
		evs, _ := json.Marshal(e.Events(run))
		steps, _ := json.Marshal(e.Steps(run))
		if bytes.Contains(evs, []byte(secret)) || bytes.Contains(steps, []byte(secret)) {
			t.Errorf("run %s: the secret is on its timeline or in its steps", run)
		}
	}
	for _, b := range bodies() {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("a model request carries the secret: %s", b)
		}
	}
	if strings.Contains(e.Stderr.String(), secret) {
		t.Error("the server's log holds the secret")
	}
}

const mcpEnvScript = `
entries:
  - name: env
    match: "Show your environment"
    turns:
      - tool_calls:
          - name: mcp__everything__get-env
            input: {}
      - text: "env: {{last_tool_result}}"
`

// A secret given to a stdio server in its env does not come back through the server: the real
// server-everything's get-env returns its whole environment, and the tool's result (so the
// model's context, the step and the answer) shows the reference where the value was.
func TestMCPSecretEchoed(t *testing.T) {
	t.Parallel()
	npmDir := MCPNPMServers(t)
	e := NewEnv(t, mcpEnvScript)
	modelURL, bodies := RecordModel(t, e)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "ANTHROPIC_BASE_URL="+modelURL)
	const secret = "env-secret-do-not-echo-7171"
	if st := e.DoAs(e.PersonSession(), "PUT", "/v2/secrets/env-token", `{"data":{"TOKEN":"`+secret+`"}}`, nil); st != 200 {
		t.Fatalf("set the secret: HTTP %d", st)
	}
	everything := filepath.Join(npmDir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	agent := fmt.Sprintf(`{"metadata":{"name":"envy"},"spec":{"computer":{"kind":"none"},"approvals":"never-ask",
  "mcpServers":[{"name":"everything","command":"node","args":[%q,"stdio"],"env":{"SHOP_TOKEN":"secret:env-token/TOKEN"},"tools":["get-env"]}]}}`, everything)
	var apiErr api.Error
	if st := e.Do("PUT", "/v2/agents/envy", agent, &apiErr); st != 201 {
		t.Fatalf("create agent: HTTP %d %+v", st, apiErr)
	}
	e.StartRun("envy", "s1", "Show your environment")
	if a := e.AnswerOf("s1"); !strings.Contains(a, `"SHOP_TOKEN": "[secret:env-token/TOKEN]"`) {
		t.Errorf("the answer does not show the reference where the server echoed its env: %q", a)
	}
	evs, _ := json.Marshal(e.Events("s1"))
	steps, _ := json.Marshal(e.Steps("s1"))
	res, _ := json.Marshal(e.ToolResults("s1"))
	for what, b := range map[string][]byte{"timeline": evs, "steps": steps, "tool results": res} {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("the secret is in the run's %s", what)
		}
	}
	for _, b := range bodies() {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("a model request carries the secret")
		}
	}
}
