// Package gateway is the model gateway external harnesses call (docs/architecture.md, "Harnesses
// and the gateway"): Anthropic- and OpenAI-compatible endpoints under /v2/gateway and an MCP
// endpoint serving the run's tools, each call authenticated by a token scoped to one run. The
// gateway only routes and authenticates: what a call does (journal step, cap check, credits,
// forwarding to the vendor) is the run's (Run, implemented by the host in internal/agent).
//
// It listens on loopback, one listener per runner process, because a harness runs beside its
// runner and the tokens live in that runner's memory: a runner without an API server (`agentrun
// runner`) has its harnesses' gateway all the same, and nothing outside the machine reaches it.
// It also listens on a unix socket (SocketPath) that a run's computer mounts: a harness inside a
// computer with no network reaches the gateway through it and nothing else.
package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/httpserve"
)

// MaxBody bounds a model call's request body (harnesses send whole conversations: Claude Code's
// first call is ~50-85 KB); larger is 413.
const MaxBody = 32 << 20

// RunHeader names the run a call is for; when a call carries it, it must be the token's run (403).
const RunHeader = "X-Agentrun-Run"

// Call is one model call as the harness sent it.
type Call struct {
	Wire Wire
	// Path is the endpoint under the wire's /v1 ("/messages", "/responses", "/chat/completions").
	Path   string
	Header http.Header
	Body   []byte
}

// Reply is what the harness is answered.
type Reply struct {
	Status      int
	ContentType string
	Body        []byte
}

// Tool is one tool served over MCP.
type Tool struct {
	Name, Description string
	InputSchema       json.RawMessage
}

// Run is one run's side of the gateway.
type Run interface {
	// ModelCall makes (or replays) one model call. An error means the run cannot go on in this
	// drive (it parked, its lease was lost): the harness is answered 503 and is about to be stopped.
	ModelCall(ctx context.Context, c Call) (Reply, error)
	// CountTokens makes (or answers from the journal) one token count: a step of its own, never
	// billed. Its error, as ModelCall's, means the run cannot go on in this drive.
	CountTokens(ctx context.Context, c Call) (Reply, error)
	// CallTool runs (or replays) one tool call: its result text, whether it is an error result, or
	// an error when the run cannot go on in this drive.
	CallTool(ctx context.Context, name string, input json.RawMessage) (string, bool, error)
}

// Refuser is a Run told of a model call the gateway refused before it reached the run (one that
// asks the vendor to act on its own), so the run can stop with the reason rather than leave the
// harness to make what it will of a 400.
type Refuser interface {
	Refused(msg string)
}

type entry struct {
	run  string
	wire Wire
	r    Run
	mcp  http.Handler
}

// Gateway serves the endpoints for the runs registered with it.
type Gateway struct {
	Log *slog.Logger
	// HTTP bounds each listener (New sets DefaultHTTP; set it before Start to change it).
	HTTP httpserve.Options

	mu     sync.Mutex
	tokens map[[32]byte]*entry
	ln     net.Listener
	srv    *httpserve.Server
	served chan struct{}
	// sock is the unix socket's folder (private to this process) and unixServed its server's end.
	sock       string
	unixServed chan struct{}
}

// New returns a gateway with no listener yet (Handler serves it; Start listens).
func New(log *slog.Logger) *Gateway {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Gateway{Log: log, HTTP: DefaultHTTP, tokens: map[[32]byte]*entry{}}
}

// DefaultHTTP bounds a gateway listener, which anyone on the machine (or in a computer that
// mounts the socket) can connect to before showing a token: a request's headers must come within
// 10 s and its body within 60 s (32 MiB over loopback takes far less), an idle connection is
// closed after 2 minutes, and at most 256 connections are open on each listener (more wait in the
// kernel's queue; idle ones are closed to make room). No write deadline: a model call's answer may
// take many minutes and is written at once.
var DefaultHTTP = httpserve.Options{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
	NoWriteTimeout: true, IdleTimeout: 2 * time.Minute, MaxConns: 256}

// Start listens on 127.0.0.1 (a free port) and on a unix socket in a new private temporary
// folder (SocketPath), and serves both until Close.
func (g *Gateway) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("gateway listener: %w", err)
	}
	removeStaleSockets()
	sockDir, err := os.MkdirTemp("", socketDirPrefix)
	if err != nil {
		ln.Close()
		return fmt.Errorf("gateway socket folder: %w", err)
	}
	uln, err := net.Listen("unix", filepath.Join(sockDir, SocketName))
	if err != nil {
		ln.Close()
		os.RemoveAll(sockDir)
		return fmt.Errorf("gateway socket: %w", err)
	}
	srv := httpserve.New(g.Handler(), g.HTTP)
	g.mu.Lock()
	g.ln, g.srv, g.served = ln, srv, make(chan struct{})
	g.sock, g.unixServed = sockDir, make(chan struct{})
	g.mu.Unlock()
	go func() { // owned by g: Close shuts it down and waits for it
		defer close(g.served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.Log.Error("gateway stopped", "err", err)
		}
	}()
	go func() { // the same server on the socket; Close ends it with the other
		defer close(g.unixServed)
		if err := srv.Serve(uln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.Log.Error("gateway socket stopped", "err", err)
		}
	}()
	return nil
}

// SocketName is the file name of the gateway's unix socket in its folder.
const SocketName = "gateway.sock"

// socketDirPrefix begins the name of each gateway's socket folder in the temporary folder.
const socketDirPrefix = "agentrun-gateway-"

// removeStaleSockets removes the socket folders of gateways that are gone (their runner was
// killed before Close): over a minute old (a gateway starting now has made its
// folder but may not listen yet), whose socket no one answers on.
func removeStaleSockets() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), socketDirPrefix+"*"))
	for _, dir := range dirs {
		st, err := os.Stat(dir)
		if err != nil || !st.IsDir() || time.Since(st.ModTime()) < time.Minute {
			continue
		}
		c, err := net.DialTimeout("unix", filepath.Join(dir, SocketName), time.Second)
		if err == nil {
			c.Close() // a live gateway's
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fs.ErrNotExist) {
			os.RemoveAll(dir)
		}
	}
}

// SocketPath is the unix socket the gateway also serves on ("" before Start): the same endpoints
// as URL, for a harness in a computer that mounts it.
func (g *Gateway) SocketPath() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sock == "" {
		return ""
	}
	return filepath.Join(g.sock, SocketName)
}

// URL is the listener's base URL ("http://127.0.0.1:PORT").
func (g *Gateway) URL() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ln == nil {
		return ""
	}
	return "http://" + g.ln.Addr().String()
}

// Close stops the listener and waits for its server.
func (g *Gateway) Close() error {
	g.mu.Lock()
	srv, served, sock, unixServed := g.srv, g.served, g.sock, g.unixServed
	g.mu.Unlock()
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(ctx)
	<-served
	<-unixServed
	os.RemoveAll(sock)
	return err
}

// Register mints a token for run's calls on wire and its MCP endpoint, serving tools. release
// makes the token dead (the run's drive ended).
func (g *Gateway) Register(run string, wire Wire, r Run, tools []Tool) (token string, release func()) {
	var b [32]byte
	rand.Read(b[:])
	token = "agr_" + base64.RawURLEncoding.EncodeToString(b[:])
	srv := mcp.NewServer(&mcp.Implementation{Name: "agentrun", Version: "1"}, nil)
	for _, t := range tools {
		name := t.Name
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		srv.AddTool(&mcp.Tool{Name: name, Description: t.Description, InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			args := req.Params.Arguments
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			text, isErr, err := r.CallTool(ctx, name, args)
			if err != nil {
				return nil, fmt.Errorf("the run stopped: %w", err)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isErr}, nil
		})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	sum := sha256.Sum256([]byte(token))
	g.mu.Lock()
	g.tokens[sum] = &entry{run: run, wire: wire, r: r, mcp: h}
	g.mu.Unlock()
	var once sync.Once
	return token, func() {
		once.Do(func() {
			g.mu.Lock()
			delete(g.tokens, sum)
			g.mu.Unlock()
		})
	}
}

// Handler serves /v2/gateway/...
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	model := func(w Wire, path string) { mux.HandleFunc("POST "+w.APIPath()+path, g.model(w, path)) }
	model(WireAnthropic, "/messages")
	model(WireAnthropic, "/messages/count_tokens")
	model(WireResponses, "/responses")
	model(WireChat, "/chat/completions")
	mux.HandleFunc("/v2/gateway/runs/{run}/mcp", g.mcp)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, api.CodeNotFound, "no gateway endpoint "+r.Method+" "+r.URL.Path)
	})
	return mux
}

// tokenOf is the token a request carries: x-api-key (Anthropic clients) or a bearer token.
func tokenOf(r *http.Request) string {
	if k := r.Header.Get("x-api-key"); k != "" {
		return k
	}
	if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(a)
	}
	return ""
}

// auth finds the request's run: 401 without a live token, 403 for a token of another run (the
// request names a run) or of another wire. The token is looked up by its SHA-256 and compared in
// constant time, so its bytes are never compared as they are.
func (g *Gateway) auth(w http.ResponseWriter, r *http.Request, run string, wire Wire) *entry {
	tok := tokenOf(r)
	if tok == "" {
		fail(w, http.StatusUnauthorized, api.CodeUnauthorized, "a gateway call needs the run's token (x-api-key or Authorization: Bearer)")
		return nil
	}
	sum := sha256.Sum256([]byte(tok))
	g.mu.Lock()
	var e *entry
	for k, v := range g.tokens {
		if subtle.ConstantTimeCompare(k[:], sum[:]) == 1 {
			e = v
		}
	}
	g.mu.Unlock()
	if e == nil {
		fail(w, http.StatusUnauthorized, api.CodeUnauthorized, "the token is not a live gateway token (unknown, or its run's drive ended)")
		return nil
	}
	if run == "" {
		run = r.Header.Get(RunHeader)
	}
	if run != "" && run != e.run {
		fail(w, http.StatusForbidden, api.CodeForbidden, "this token is for another run")
		return nil
	}
	if wire != "" && wire != e.wire {
		fail(w, http.StatusForbidden, api.CodeForbidden, "this token is for the "+string(e.wire)+" endpoint, not "+string(wire))
		return nil
	}
	return e
}

// readJSONBody reads a gateway request's body, at most MaxBody bytes and nested at most
// api.MaxJSONDepth deep, or answers the error and reports false.
func readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		fail(w, http.StatusRequestEntityTooLarge, api.CodeTooLarge, fmt.Sprintf("a gateway request body is at most %d bytes", MaxBody))
		return nil, false
	}
	if err != nil {
		fail(w, http.StatusBadRequest, api.CodeBadRequest, "read the body: "+err.Error())
		return nil, false
	}
	if err := api.CheckJSONDepth(body); err != nil {
		fail(w, http.StatusRequestEntityTooLarge, api.CodeTooLarge, err.(*api.Error).Message)
		return nil, false
	}
	return body, true
}

func (g *Gateway) model(wire Wire, path string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		e := g.auth(w, r, "", wire)
		if e == nil {
			return
		}
		body, ok := readJSONBody(w, r)
		if !ok {
			return
		}
		bodyRead(w)
		if msg := vendorSide(wire, body); msg != "" {
			msg = "the gateway does not forward this call: " + msg
			g.Log.Warn("gateway refused a model call", "run", e.run, "why", msg)
			if rr, ok := e.r.(Refuser); ok {
				rr.Refused(msg)
			}
			fail(w, http.StatusBadRequest, api.CodeInvalidRequest, msg)
			return
		}
		c := Call{Wire: wire, Path: path, Header: r.Header, Body: body}
		var rep Reply
		var err error
		if strings.HasSuffix(path, "/count_tokens") {
			rep, err = e.r.CountTokens(r.Context(), c)
		} else {
			rep, err = e.r.ModelCall(r.Context(), c)
		}
		if err != nil {
			var bad *BadRequest
			if errors.As(err, &bad) {
				fail(w, http.StatusBadRequest, api.CodeInvalidRequest, bad.Msg)
				return
			}
			// Not the harness's fault, and nothing it can fix: the run stopped in this drive.
			fail(w, http.StatusServiceUnavailable, api.CodeRunStopped, "the run stopped: "+err.Error())
			return
		}
		if rep.ContentType != "" {
			w.Header().Set("Content-Type", rep.ContentType)
		}
		w.WriteHeader(rep.Status)
		w.Write(rep.Body)
	}
}

func (g *Gateway) mcp(w http.ResponseWriter, r *http.Request) {
	e := g.auth(w, r, r.PathValue("run"), "")
	if e == nil {
		return
	}
	// The MCP SDK decodes the body itself: bound it here first, the same way as a model call's.
	if r.Body != nil && r.Method == http.MethodPost {
		body, ok := readJSONBody(w, r)
		if !ok {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	bodyRead(w)
	e.mcp.ServeHTTP(w, r)
}

// bodyRead lifts the read deadline once the request is in: it bounds how long a body may take to
// arrive, not the call, and its expiry while a model or tool call runs would cancel the call.
func bodyRead(w http.ResponseWriter) {
	http.NewResponseController(w).SetReadDeadline(time.Time{})
}

// BadRequest is a call the gateway refuses as the harness's mistake (400), such as a body that is
// not a JSON object.
type BadRequest struct{ Msg string }

func (e *BadRequest) Error() string { return e.Msg }

// fail answers in both shapes a client may read: ours ({code, message}) and the vendors' error
// object ({"type": "error", "error": {type, message}}).
func fail(w http.ResponseWriter, status int, code api.Code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"code": code, "message": msg, "type": "error",
		"error": map[string]string{"type": string(code), "message": msg}})
}
