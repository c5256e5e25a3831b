// Package mcpclient is the client side of MCP: it starts (stdio) or reaches (streamable HTTP) the
// MCP servers an agent names, lists their tools and calls them, with the official Go SDK. Secret
// references in a server's env and headers are opened here, just before use, and the values
// stay inside the transport: no error or result this package returns carries them. It knows
// nothing of computers: a server that runs inside a run's computer is started through the Spawn
// function its caller (internal/agent) gives ConnectIn.
package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/catalog"
	"agentrun.dev/agentrun/internal/secret"
)

// OpenSecret returns a sealed secret's key/value pairs (secret.Opener.Open).
type OpenSecret func(ctx context.Context, name string) (map[string]string, error)

// ConnectTimeout bounds starting a server and its initialize handshake, and listing its tools
// (a variable for the tests).
var ConnectTimeout = 30 * time.Second

// passEnv are the runner's variables a stdio server gets besides its own env: enough to find
// its interpreter and a home, nothing more (the runner's model keys stay with the runner).
var passEnv = []string{"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "NODE_PATH", "npm_config_cache"}

// Session is a live connection to one MCP server.
type Session struct {
	Name    string
	cs      *mcp.ClientSession
	secrets *redactor
}

// redactor replaces the values of the secrets a server was given (in its env or headers) in what
// it says back: a tool's result, a description, its stderr. The server has them, but they must
// not reach the model's context, the journal or the timeline (a server may echo its env, or
// encode it: the shared detector finds the value hex- or base64-encoded, reversed, %-encoded or
// in chunks, as the learning checks do).
type redactor struct{ d secret.Detector }

// Redact returns s with each secret value, in any form the detector knows, replaced by its
// reference.
func (r *redactor) Redact(s string) string { return r.d.Redact(s) }

// Redact returns s with the values of the secrets the server was given replaced by their
// references (for what the run shows elsewhere: a span's captured content).
func (s *Session) Redact(v string) string { return s.secrets.Redact(v) }

// SecretError is a secret reference that could not be opened; Field names where it is.
type SecretError struct {
	Field  string
	Secret string
	Err    error
}

func (e *SecretError) Error() string {
	return fmt.Sprintf("%s names secret %q: %v", e.Field, e.Secret, e.Err)
}
func (e *SecretError) Unwrap() error { return e.Err }

// resolve opens every secret reference among vals; the field of each is the key below at.
func resolve(ctx context.Context, at string, vals map[string]string, open OpenSecret, red *redactor) (map[string]string, error) {
	out := make(map[string]string, len(vals))
	for k, v := range vals {
		name, key, ok, err := api.ParseSecretRef(v)
		if err != nil {
			return nil, &SecretError{Field: api.NewPath(at).Member(k).String(), Err: err}
		}
		if !ok {
			out[k] = v
			continue
		}
		if open == nil {
			return nil, &SecretError{Field: api.NewPath(at).Member(k).String(), Secret: name, Err: errors.New("this process cannot open secrets (no seal key)")}
		}
		m, err := open(ctx, name)
		if err != nil {
			return nil, &SecretError{Field: api.NewPath(at).Member(k).String(), Secret: name, Err: err}
		}
		val, ok := m[key]
		if !ok {
			return nil, &SecretError{Field: api.NewPath(at).Member(k).String(), Secret: name, Err: fmt.Errorf("the secret has no key %q", key)}
		}
		out[k] = val
		red.d.Add(v, val)
	}
	return out, nil
}

// headerTransport adds the server's headers to every request the SDK makes.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

// Connect starts or reaches the server and completes the MCP handshake. dir is a stdio server's
// working folder (on this machine). at is the server's field path (spec.mcpServers[i]), for errors.
func Connect(ctx context.Context, at string, srv api.MCPServer, dir string, open OpenSecret) (*Session, error) {
	return connect(ctx, at, srv, open, func(env []string, stderr *tail) (mcp.Transport, error) {
		// The server outlives this call (until Close): not bound to ctx.
		cmd := exec.Command(srv.Command, srv.Args...)
		cmd.Dir = dir
		for _, k := range passEnv {
			if v, ok := os.LookupEnv(k); ok {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
		cmd.Env = append(cmd.Env, env...)
		cmd.Stderr = stderr
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
	})
}

// Process is a stdio server started in a run's computer: what ConnectIn needs of it. The
// computer's own processes (computer.StdioProcess) have these methods; this package names them
// itself so that it stays below the computers and knows nothing of how they start things.
type Process interface {
	Stdin() io.WriteCloser
	Stdout() io.Reader
	Stderr() io.Reader
	// Done is closed when the process has exited.
	Done() <-chan struct{}
	// Close kills the process; it is safe to call more than once.
	Close() error
}

// Spawn starts argv in a run's computer, env ("NAME=value") added to the computer's own, and
// returns once it runs (computer.Spawner's Spawn, in internal/agent).
type Spawn func(ctx context.Context, argv, env []string) (Process, error)

// ConnectIn is Connect for a run with a computer: a stdio server starts inside it through spawn
// (working folder /workspace, the computer's environment and the server's env, nothing of this
// process's), an HTTP server is reached from here as by Connect.
func ConnectIn(ctx context.Context, at string, srv api.MCPServer, spawn Spawn, open OpenSecret) (*Session, error) {
	return connect(ctx, at, srv, open, func(env []string, stderr *tail) (mcp.Transport, error) {
		p, err := spawn(ctx, append([]string{srv.Command}, srv.Args...), env)
		if err != nil {
			return nil, fmt.Errorf("MCP server %s did not start in the run's computer: %w", srv.Name, err)
		}
		copied := make(chan struct{})
		go func() {
			defer close(copied)
			io.Copy(stderr, p.Stderr()) // ends with the process
		}()
		return &mcp.IOTransport{Reader: spawnedOut{p, copied}, Writer: p.Stdin()}, nil
	})
}

// spawnedOut is a spawned server's stdout; closing it ends the server: its stdin closed first,
// then, if it has not exited within 2 s, killed. A server that has exited is closed once its
// stderr is all in the tail (copied closed; at most 2 s more), not before: closing it drops what
// is unread, and the error of a server that did not start quotes what it said.
type spawnedOut struct {
	p      Process
	copied <-chan struct{}
}

func (o spawnedOut) Read(b []byte) (int, error) { return o.p.Stdout().Read(b) }
func (o spawnedOut) Close() error {
	o.p.Stdin().Close()
	select {
	case <-o.p.Done():
		select {
		case <-o.copied:
		case <-time.After(2 * time.Second):
		}
	case <-time.After(2 * time.Second):
	}
	return o.p.Close()
}

// connect is Connect's and ConnectIn's: stdio makes a stdio server's transport from its env
// (secrets opened, sorted NAME=value) and the tail its stderr goes to.
func connect(ctx context.Context, at string, srv api.MCPServer, open OpenSecret, stdio func(env []string, stderr *tail) (mcp.Transport, error)) (*Session, error) {
	var t mcp.Transport
	var stderr *tail
	var red redactor
	if srv.Command != "" {
		env, err := resolve(ctx, api.NewPath(at).Child("env").String(), srv.Env, open, &red)
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(env))
		for k := range env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var list []string
		for _, k := range keys {
			list = append(list, k+"="+env[k])
		}
		stderr = &tail{max: 4 << 10}
		if t, err = stdio(list, stderr); err != nil {
			return nil, err
		}
	} else {
		headers, err := resolve(ctx, api.NewPath(at).Child("headers").String(), srv.Headers, open, &red)
		if err != nil {
			return nil, err
		}
		hc := &http.Client{Transport: &headerTransport{base: http.DefaultTransport, headers: headers}}
		t = &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc, MaxRetries: 1, DisableStandaloneSSE: true}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentrun", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	cs, err := client.Connect(cctx, t, nil)
	if err != nil {
		if c, ok := t.(*mcp.IOTransport); ok {
			c.Reader.Close() // the spawned server, which did not answer
		}
		if ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
			// Say what was waited on, not just "context deadline exceeded".
			err = fmt.Errorf("it did not answer MCP's initialize request within %s (%w)", ConnectTimeout, err)
		}
		return nil, errors.New(red.Redact(fmt.Sprintf("MCP server %s did not start: %v%s", srv.Name, err, stderrOf(stderr))))
	}
	return &Session{Name: srv.Name, cs: cs, secrets: &red}, nil
}

// Mounts are the host folders a run's computer must show, read-only at the same path, for a
// stdio server to start in it: for each absolute path among its command and args that lies in an
// npm install (a node_modules folder), the folder holding that install (the interpreter itself
// comes from the computer: the host's /usr in a local sandbox, the image in a docker one).
func Mounts(srv api.MCPServer) []string {
	if srv.Command == "" {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range append([]string{srv.Command}, srv.Args...) {
		if !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		i := strings.Index(p, "/node_modules/")
		if i <= 0 || seen[p[:i]] {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			continue
		}
		seen[p[:i]] = true
		out = append(out, p[:i])
	}
	return out
}

// stderrOf is the last of a stdio server's stderr, to say why it did not start.
func stderrOf(tl *tail) string {
	if tl == nil {
		return ""
	}
	if s := strings.TrimSpace(tl.String()); s != "" {
		return " (its stderr: " + s + ")"
	}
	return ""
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// Tools lists the server's tools.
func (s *Session) Tools(ctx context.Context) ([]catalog.MCPTool, []api.MCPTool, error) {
	var out []catalog.MCPTool
	var shown []api.MCPTool
	for t, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, nil, fmt.Errorf("list the tools of MCP server %s: %w", s.Name, err)
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, nil, fmt.Errorf("MCP server %s: tool %s: its input schema: %w", s.Name, t.Name, err)
		}
		t.Description = s.secrets.Redact(t.Description)
		ct := catalog.MCPTool{Name: t.Name, Description: t.Description, Schema: schema}
		if a := t.Annotations; a != nil {
			ct.ReadOnly, ct.Idempotent = a.ReadOnlyHint, a.IdempotentHint
		}
		out = append(out, ct)
		shown = append(shown, api.MCPTool{Name: t.Name, Description: t.Description, ReadOnly: ct.ReadOnly, Idempotent: ct.Idempotent, InputSchema: t.InputSchema})
	}
	return out, shown, nil
}

// Result is what a call returned, as the model reads it.
type Result struct {
	Content string
	IsError bool
}

// Call calls a tool with the model's arguments (a JSON object). An error is the connection's
// (the server died, or went away); a tool's own failure is a Result with IsError.
func (s *Session) Call(ctx context.Context, tool string, args json.RawMessage) (Result, error) {
	var a map[string]any
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &a); err != nil {
			return Result{Content: "the arguments are not a JSON object: " + err.Error(), IsError: true}, nil
		}
	}
	if a == nil {
		a = map[string]any{}
	}
	r, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: a})
	if err != nil {
		return Result{}, fmt.Errorf("MCP server %s: call %s: %s", s.Name, tool, s.secrets.Redact(err.Error()))
	}
	return Result{Content: s.secrets.Redact(contentText(r)), IsError: r.IsError}, nil
}

// contentText is a call's content as text: text as is, other kinds described, then the
// structured content when there is no text.
func contentText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch c := c.(type) {
		case *mcp.TextContent:
			b.WriteString(c.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(&b, "[image %s, %d bytes]", c.MIMEType, len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(&b, "[audio %s, %d bytes]", c.MIMEType, len(c.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(&b, "[resource %s %s]", c.Name, c.URI)
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				b.WriteString(c.Resource.Text)
			} else if c.Resource != nil {
				fmt.Fprintf(&b, "[resource %s, %s]", c.Resource.URI, c.Resource.MIMEType)
			}
		default:
			raw, _ := json.Marshal(c)
			b.Write(raw)
		}
	}
	if b.Len() == 0 && r.StructuredContent != nil {
		raw, _ := json.Marshal(r.StructuredContent)
		b.Write(raw)
	}
	return b.String()
}

// Close ends the session (and stops a stdio server).
func (s *Session) Close() error { return s.cs.Close() }

// Wait blocks until the session ends; the server died or went away.
func (s *Session) Wait() error { return s.cs.Wait() }

// List connects, lists the tools and closes: what create, apply and `agents mcp-tools` ask.
func List(ctx context.Context, at string, srv api.MCPServer, dir string, open OpenSecret) ([]catalog.MCPTool, []api.MCPTool, error) {
	s, err := Connect(ctx, at, srv, dir, open)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	lctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	return s.Tools(lctx)
}
