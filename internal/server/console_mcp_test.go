package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/auth"
	"agentrun.dev/agentrun/internal/store/sqlite"
)

// consoleEnv is the real server (API and console) over SQLite in an httptest server, with a
// person signed in through the console's own login form.
type consoleEnv struct {
	t      *testing.T
	url    string
	cookie *http.Cookie
	client *http.Client
}

func newConsoleEnv(t *testing.T) *consoleEnv {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "agentrun.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	accounts, err := auth.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := accounts.Setup(accounts.SetupCode(), "admin", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	s := &Server{Store: st, Token: testToken, BaseURL: "http://agentrun.test", DataDir: t.TempDir(), Accounts: accounts,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	// No redirects followed: the test reads each answer as the browser gets it.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(ts.URL+"/login", url.Values{"user": {"admin"}, "password": {"correct horse battery"}, "next": {"/"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	e := &consoleEnv{t: t, url: ts.URL, client: client}
	for _, c := range resp.Cookies() {
		if c.Name == "agentrun_session" {
			e.cookie = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || e.cookie == nil {
		t.Fatalf("sign in: HTTP %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	return e
}

// api calls the API with the token and decodes the answer into out.
func (e *consoleEnv) api(method, path, body string, out any) int {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

// page is a console request as the signed-in browser makes it (form posts a form).
func (e *consoleEnv) page(method, path string, form url.Values, signedIn bool) (*http.Response, string) {
	e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, e.url+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if signedIn {
		req.AddCookie(e.cookie)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// newToolServer is a streamable-HTTP MCP server made with the Go SDK: lookup (readOnlyHint),
// recount (idempotentHint) and restock (no hints).
func newToolServer(t *testing.T) string {
	server := mcp.NewServer(&mcp.Implementation{Name: "stock", Version: "1"}, nil)
	answer := func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	}
	mcp.AddTool(server, &mcp.Tool{Name: "lookup", Description: "Look an item's stock up.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, answer)
	mcp.AddTool(server, &mcp.Tool{Name: "recount", Description: "Count an item again.", Annotations: &mcp.ToolAnnotations{IdempotentHint: true}}, answer)
	mcp.AddTool(server, &mcp.Tool{Name: "restock", Description: "Order more of an item."}, answer)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// TestConsoleAgentMCP: the console's MCP page of an agent lists each of its MCP servers' tools
// (asked of a real MCP server) with ticked or not and safe or not; its form ticks and unticks
// them as a new revision of the agent, through the API's PATCH validation (a name the server
// lacks is refused with its field, a stale form with Conflict, nothing stored either time);
// without a session the page sends the browser to sign in, and a post without the page's CSRF
// token changes nothing.
func TestConsoleAgentMCP(t *testing.T) {
	e := newConsoleEnv(t)
	mcpURL := newToolServer(t)
	agent := fmt.Sprintf(`{"metadata":{"name":"stocker"},"spec":{"computer":{"kind":"none"},
  "mcpServers":[{"name":"stock","url":%q,"tools":["lookup"]}]}}`, mcpURL)
	var created api.Agent
	if st := e.api("PUT", "/v2/agents/stocker", agent, &created); st != 201 {
		t.Fatalf("create the agent: HTTP %d", st)
	}
	getAgent := func() api.Agent {
		var a api.Agent
		if st := e.api("GET", "/v2/agents/stocker", "", &a); st != 200 {
			t.Fatalf("get the agent: HTTP %d", st)
		}
		return a
	}

	if resp, _ := e.page("GET", "/agents/stocker/mcp", nil, false); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Errorf("the page without a session: HTTP %d to %q, want a redirect to /login", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, body := e.page("GET", "/agents/stocker/mcp", nil, true)
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("the page: HTTP %d, CSP %q\n%s", resp.StatusCode, resp.Header.Get("Content-Security-Policy"), body)
	}
	for _, want := range []string{
		`value="lookup" id="tick-lookup" checked>`, `value="recount" id="tick-recount">`, `value="restock" id="tick-restock">`,
		"yes (read-only)", "yes (idempotent)", "no: a call a crash cuts off waits for a person", "Order more of an item.",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q:\n%s", want, body)
		}
	}
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token on the page:\n%s", body)
	}
	csrf := m[1]
	rv := created.Metadata.ResourceVersion

	// A post without the page's token changes nothing.
	if resp, _ := e.page("POST", "/agents/stocker/mcp/stock", url.Values{"tool": {"restock"}, "csrf": {"forged"}}, true); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a post with a forged CSRF token: HTTP %d, want 403", resp.StatusCode)
	}
	// A name the server does not have: refused with its field, as the API's PATCH refuses it.
	resp, body = e.page("POST", "/agents/stocker/mcp/stock", url.Values{"tool": {"lookup", "nope"}, "csrf": {csrf}, "resourceVersion": {rv}}, true)
	if resp.StatusCode != 422 || !strings.Contains(body, "Invalid on spec.mcpServers[0].tools[1]") {
		t.Errorf("ticking a tool the server lacks: HTTP %d\n%s", resp.StatusCode, body)
	}
	if a := getAgent(); !slices.Equal(a.Spec.MCPServers[0].Tools, []string{"lookup"}) || a.Metadata.ResourceVersion != rv {
		t.Fatalf("after refused posts the agent is %v (rv %s, was %s)", a.Spec.MCPServers[0].Tools, a.Metadata.ResourceVersion, rv)
	}

	// Tick restock too: a new revision.
	resp, _ = e.page("POST", "/agents/stocker/mcp/stock", url.Values{"tool": {"lookup", "restock"}, "csrf": {csrf}, "resourceVersion": {rv}}, true)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/agents/stocker/mcp?saved=stock" {
		t.Fatalf("tick restock: HTTP %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	a := getAgent()
	if !slices.Equal(a.Spec.MCPServers[0].Tools, []string{"lookup", "restock"}) || a.Status.Revision <= created.Status.Revision {
		t.Errorf("after ticking: tools %v, revision %d (was %d)", a.Spec.MCPServers[0].Tools, a.Status.Revision, created.Status.Revision)
	}
	var list api.MCPToolList
	e.api("GET", "/v2/agents/stocker/mcp-tools/stock", "", &list)
	for _, tl := range list.Tools {
		if want := tl.Name != "recount"; tl.Ticked != want {
			t.Errorf("the API lists %s ticked=%v after the console's post", tl.Name, tl.Ticked)
		}
	}
	if _, body := e.page("GET", "/agents/stocker/mcp?saved=stock", nil, true); !strings.Contains(body, `value="restock" id="tick-restock" checked>`) {
		t.Errorf("the page after ticking does not show restock ticked:\n%s", body)
	}

	// The form of the old revision is stale now: Conflict, nothing changed.
	resp, body = e.page("POST", "/agents/stocker/mcp/stock", url.Values{"csrf": {csrf}, "resourceVersion": {rv}}, true)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "Conflict") {
		t.Errorf("a stale form: HTTP %d\n%s", resp.StatusCode, body)
	}
	// Untick everything (no box ticked) from the current revision: the server grants nothing.
	resp, _ = e.page("POST", "/agents/stocker/mcp/stock", url.Values{"csrf": {csrf}, "resourceVersion": {getAgent().Metadata.ResourceVersion}}, true)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("untick all: HTTP %d", resp.StatusCode)
	}
	if a := getAgent(); len(a.Spec.MCPServers[0].Tools) != 0 {
		t.Errorf("after unticking all: tools %v", a.Spec.MCPServers[0].Tools)
	}
	// A server the agent does not name.
	if resp, _ := e.page("POST", "/agents/stocker/mcp/other", url.Values{"tool": {"x"}, "csrf": {csrf}}, true); resp.StatusCode != 404 {
		t.Errorf("a post for a server the agent does not name: HTTP %d, want 404", resp.StatusCode)
	}
}
