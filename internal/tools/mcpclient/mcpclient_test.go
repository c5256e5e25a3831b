package mcpclient

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentrun.dev/agentrun/internal/api"
)

// npmServers returns the folder holding node_modules/@modelcontextprotocol/server-everything and
// server-filesystem at the pinned version: AGENTRUN_MCP_CACHE (which .ci/run fills), else a
// temporary folder this test installs them into. It skips when npm cannot install them.
func npmServers(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("AGENTRUN_MCP_CACHE")
	if dir == "" {
		dir = t.TempDir()
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/package.json")); err == nil {
		return dir
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed: the MCP servers from npm cannot be installed")
	}
	os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"agentrun-mcp-servers","private":true}`), 0o644)
	os.WriteFile(filepath.Join(dir, ".npmrc"), []byte("omit-lockfile-registry-resolved=true\n"), 0o644)
	out, err := exec.Command("npm", "install", "--prefix", dir, "--no-audit", "--no-fund",
		"@modelcontextprotocol/server-everything@2026.8.31", "@modelcontextprotocol/server-filesystem@2026.8.31").CombinedOutput()
	if err != nil {
		t.Skipf("npm could not install the MCP servers (no registry here?): %v\n%s", err, out)
	}
	return dir
}

func TestEverythingStdio(t *testing.T) {
	dir := npmServers(t)
	srv := api.MCPServer{Name: "everything", Command: "node", Args: []string{filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"}}
	ctx := context.Background()
	s, err := Connect(ctx, "spec.mcpServers[0]", srv, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tools, shown, err := s.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for i, tl := range tools {
		names[tl.Name] = true
		t.Logf("%s ro=%v idem=%v %s", tl.Name, tl.ReadOnly, tl.Idempotent, shown[i].Description)
	}
	if !names["echo"] {
		t.Fatalf("no echo tool among %v", names)
	}
	r, err := s.Call(ctx, "echo", []byte(`{"message":"hello mcp"}`))
	if err != nil || !strings.Contains(r.Content, "hello mcp") || r.IsError {
		t.Fatalf("echo: %+v %v", r, err)
	}
}

// A streamable-HTTP server made with the SDK: the header (a secret's value) reaches it.
func TestHTTPHeaders(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	type in struct {
		X string `json:"x"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "hello", Description: "says hello", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + a.X}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	var got []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	open := func(ctx context.Context, name string) (map[string]string, error) {
		if name != "tok" {
			return nil, errors.New("not found")
		}
		return map[string]string{"AUTH": "Bearer s3cret"}, nil
	}
	srv := api.MCPServer{Name: "h", URL: ts.URL, Headers: map[string]string{"Authorization": "secret:tok/AUTH"}}
	tools, _, err := List(context.Background(), "spec.mcpServers[0]", srv, "", open)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 || tools[0].Name != "hello" || !tools[0].ReadOnly {
		t.Fatalf("tools %+v", tools)
	}
	srv.Headers["Authorization"] = "secret:tok/NOPE"
	_, _, err = List(context.Background(), "spec.mcpServers[0]", srv, "", open)
	var se *SecretError
	if !errors.As(err, &se) || se.Field != "spec.mcpServers[0].headers.Authorization" || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("want a SecretError naming the field, got %v", err)
	}
	srv.Headers["Authorization"] = "Bearer wrong"
	if _, _, err = List(context.Background(), "spec.mcpServers[0]", srv, "", open); err == nil {
		t.Fatal("a wrong token listed the tools")
	}
}

func TestStdioDoesNotStart(t *testing.T) {
	srv := api.MCPServer{Name: "bad", Command: "sh", Args: []string{"-c", "echo broken config >&2; exit 3"}}
	_, _, err := List(context.Background(), "spec.mcpServers[0]", srv, t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "did not start") || !strings.Contains(err.Error(), "broken config") {
		t.Fatalf("want did not start with its stderr, got %v", err)
	}
}

// A stdio server that never answers initialize is refused saying what it was waited on and how
// long, not just that a deadline passed.
func TestStdioNeverAnswers(t *testing.T) {
	defer func(d time.Duration) { ConnectTimeout = d }(ConnectTimeout)
	ConnectTimeout = 300 * time.Millisecond
	srv := api.MCPServer{Name: "mute", Command: "sleep", Args: []string{"60"}}
	_, _, err := List(context.Background(), "spec.mcpServers[0]", srv, t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "MCP server mute did not start: it did not answer MCP's initialize request within 300ms") {
		t.Fatalf("want the initialize request and the wait named, got %v", err)
	}
}

// The secrets a server is given never come back through it: a tool result echoing its header, a
// description naming it and a stderr printing its env show the reference, not the value.
func TestSecretsRedacted(t *testing.T) {
	const val = `Bearer s3cret-"quoted"`
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	var seen string
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "answers for " + val},
		func(ctx context.Context, req *mcp.CallToolRequest, a struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you sent " + seen + ` as JSON {"auth":"Bearer s3cret-\"quoted\""}`}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Get("Authorization")
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	open := func(ctx context.Context, name string) (map[string]string, error) {
		return map[string]string{"AUTH": val, "ENV": "hunter2-env"}, nil
	}
	ctx := context.Background()
	s, err := Connect(ctx, "spec.mcpServers[0]", api.MCPServer{Name: "h", URL: ts.URL, Headers: map[string]string{"Authorization": "secret:tok/AUTH"}}, "", open)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tools, shown, err := s.Tools(ctx)
	if err != nil || len(tools) != 1 || tools[0].Description != "answers for [secret:tok/AUTH]" || shown[0].Description != tools[0].Description {
		t.Fatalf("tools %+v %+v %v", tools, shown, err)
	}
	r, err := s.Call(ctx, "whoami", nil)
	if err != nil || seen != val || r.Content != `you sent [secret:tok/AUTH] as JSON {"auth":"[secret:tok/AUTH]"}` {
		t.Fatalf("the server got %q; the result %+v %v", seen, r, err)
	}
	bad := api.MCPServer{Name: "bad", Command: "sh", Args: []string{"-c", `echo "my token is $TOKEN" >&2; exit 3`}, Env: map[string]string{"TOKEN": "secret:tok/ENV"}}
	_, _, err = List(ctx, "spec.mcpServers[1]", bad, t.TempDir(), open)
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "my token is [secret:tok/ENV]") {
		t.Fatalf("want the stderr with the reference, got %v", err)
	}
}

// A server that hands back its secret encoded (hex, base64 and base64url, reversed, %-encoded,
// split into chunks across lines and quotes) reaches the model with none of those forms: the
// shared detector finds each, where only the exact value was replaced before.
func TestSecretsRedactedEncoded(t *testing.T) {
	const val = "tok-9fQ2xLmZ7vB4nR8sK1wD6yH3"
	rev := []byte(val)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	forms := map[string]string{
		"hex":       hex.EncodeToString([]byte(val)),
		"base64":    base64.StdEncoding.EncodeToString([]byte(val)),
		"base64url": base64.RawURLEncoding.EncodeToString([]byte("Authorization: " + val)),
		"reversed":  string(rev),
		"percent":   url.QueryEscape(val + " "),
		"chunks":    `"` + val[:10] + "\"\n+ \"" + val[10:20] + `" + "` + val[20:] + `"`,
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	for name, form := range forms {
		mcp.AddTool(server, &mcp.Tool{Name: name, Description: "echoes the key as " + name},
			func(ctx context.Context, req *mcp.CallToolRequest, a struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "here: " + form + " end"}}}, nil, nil
			})
	}
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer ts.Close()
	open := func(ctx context.Context, name string) (map[string]string, error) {
		return map[string]string{"AUTH": val}, nil
	}
	ctx := context.Background()
	s, err := Connect(ctx, "spec.mcpServers[0]", api.MCPServer{Name: "h", URL: ts.URL, Headers: map[string]string{"Authorization": "secret:tok/AUTH"}}, "", open)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, form := range forms {
		r, err := s.Call(ctx, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(r.Content, form) || !strings.Contains(r.Content, "[secret:tok/AUTH]") || !strings.HasPrefix(r.Content, "here: ") {
			t.Errorf("the key as %s came back as %q", name, r.Content)
		}
	}
}
