// Package fake is the scripted model server: the project's only stand-in for a model vendor. It is a
// real HTTP server speaking the Anthropic Messages, OpenAI Chat Completions and OpenAI Responses wire
// formats (non-streaming and SSE streaming, text and tool-use blocks, usage counts) whose replies come from a
// Script. A reply is a pure function of the request: the first user message picks the script entry and
// the number of assistant messages picks the turn, so a replayed conversation gets the same answer.
//
// Tool results may carry images (screenshots): in the Anthropic format as image blocks inside a
// tool_result's content, in the OpenAI format (whose tool messages take text only) as a user message
// of image_url parts right after the tool messages. That OpenAI message is not a user message of the
// conversation: it never picks the entry, is never {{last_user}}, and, since the turn counts assistant
// messages only, does not move the turn. The server reads each image's header (PNG, JPEG or GIF, as
// base64 data; it fetches no URLs) for the {{last_tool_images}} template, and, like the vendors,
// answers 400 invalid_request_error to invalid base64, an undecodable image or one whose data does not
// match its media type.
//
// By default it serves every format at once; Only restricts it to one vendor's real paths (vendor.go),
// answering any other with that vendor's 404, for tests of a server that has a single vendor's key.
//
// It deliberately does not import package model, so that model's tests can drive the providers
// against it; it has wire structs of its own.
package fake

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Formats a call can arrive in.
const (
	FormatAnthropic = "anthropic"
	FormatOpenAI    = "openai"
	FormatResponses = "responses" // OpenAI Responses (responses.go)
)

// Call is one request the server received.
type Call struct {
	Entry      string    `json:"entry"`      // the matched entry's name ("#<index>" when unnamed); empty when none matched
	EntryIndex int       `json:"entryIndex"` // -1 when no entry matched
	Turn       int       `json:"turn"`       // assistant messages in the request
	Format     string    `json:"format"`     // "anthropic" | "openai" | "responses"
	Stream     bool      `json:"stream"`
	Completed  bool      `json:"completed"` // the reply was fully written
	Time       time.Time `json:"time"`      // when the request arrived
	// Latency is the wait before the reply began, counted from Time: the turn's latency or the
	// default, varied by the script's latency_jitter.
	Latency time.Duration `json:"latencyNs,omitempty"`
	Status  int           `json:"status"` // HTTP status of the reply
	Error   string        `json:"error,omitempty"`
	// FirstUser is the conversation's first user message (at most 200 bytes): with Turn it names
	// one turn of one conversation, so tests can count calls per conversation.
	FirstUser string `json:"firstUser,omitempty"`
	// ToolChoice is the request's tool_choice as sent (absent when it sent none), and ForcedTool
	// the tool it forces, read from any of the three formats ("" when none is forced).
	ToolChoice json.RawMessage `json:"toolChoice,omitempty"`
	ForcedTool string          `json:"forcedTool,omitempty"`
	// Endpoint is "count_tokens" for a token count (POST /v1/messages/count_tokens, answered with
	// an estimate and matched to no entry), empty for a model call.
	Endpoint string `json:"endpoint,omitempty"`
}

// Server is the scripted model server; it implements http.Handler.
type Server struct {
	mu     sync.Mutex
	script *Script
	calls  []*Call
	hook   func(Call)
	logw   io.Writer
	// vendor, when set, is the one vendor whose paths are served (Only); refused lists the
	// requests it refused.
	vendor  string
	refused []string

	mux *http.ServeMux

	// Set by Start.
	url  string
	stop context.CancelFunc
	hs   *http.Server
	done chan struct{}
}

// New returns a server answering from s (nil: no entries, every call fails with a clear message).
func New(s *Script) *Server {
	if s == nil {
		s = &Script{}
	}
	srv := &Server{script: s, mux: http.NewServeMux()}
	srv.mux.HandleFunc("POST /v1/messages", srv.handleModel(FormatAnthropic))
	srv.mux.HandleFunc("POST /v1/messages/count_tokens", srv.handleCountTokens)
	srv.mux.HandleFunc("POST /v1/chat/completions", srv.handleModel(FormatOpenAI))
	srv.mux.HandleFunc("POST /chat/completions", srv.handleModel(FormatOpenAI))
	srv.mux.HandleFunc("POST /v1/responses", srv.handleModel(FormatResponses))
	srv.mux.HandleFunc("POST /responses", srv.handleModel(FormatResponses))
	srv.mux.HandleFunc("GET /_fake/calls", srv.handleCalls)
	srv.mux.HandleFunc("POST /_fake/reset", srv.handleReset)
	srv.mux.HandleFunc("PUT /_fake/script", srv.handleScript)
	srv.mux.HandleFunc("/", srv.handleNotFound)
	return srv
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	vendor := s.vendor
	s.mu.Unlock()
	if vendor != "" && !strings.HasPrefix(r.URL.Path, "/_fake/") {
		route, ok := vendorRoute(vendor, r)
		if !ok {
			s.refuse(vendor, w, r)
			return
		}
		r.URL.Path = route
		if vendor == VendorOpenRouter && r.Header.Get("x-api-key") == "" {
			// OpenRouter takes its key as a bearer token on its Messages API too.
			if k, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
				r.Header.Set("x-api-key", k)
			}
		}
	}
	s.mux.ServeHTTP(w, r)
}

// Calls returns every model request received, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, len(s.calls))
	for i, c := range s.calls {
		out[i] = *c
	}
	return out
}

// CountTurn returns how many requests were matched to that entry (by name, or "#<index>") and turn.
func (s *Server) CountTurn(entry string, turn int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c.EntryIndex >= 0 && c.Entry == entry && c.Turn == turn {
			n++
		}
	}
	return n
}

// OnRequest sets a hook called, in the request's goroutine, when a request has matched a turn and before
// its latency and reply; tests use it to kill a process in the middle of a call.
func (s *Server) OnRequest(fn func(c Call)) {
	s.mu.Lock()
	s.hook = fn
	s.mu.Unlock()
}

// SetScript replaces the script; calls already recorded stay.
func (s *Server) SetScript(sc *Script) {
	if sc == nil {
		sc = &Script{}
	}
	s.mu.Lock()
	s.script = sc
	s.mu.Unlock()
}

// Reset forgets the recorded calls.
func (s *Server) Reset() {
	s.mu.Lock()
	s.calls = nil
	s.mu.Unlock()
}

// URL is the base URL given by Start ("" otherwise).
func (s *Server) URL() string { return s.url }

// Start serves s on 127.0.0.1 at a free port and returns the server and its base URL
// (http://127.0.0.1:PORT; Anthropic clients use it as is, OpenAI clients with or without /v1).
// Close stops it.
func Start(sc *Script) (*Server, string, error) {
	srv := New(sc)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("fake model server: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv.stop = cancel
	srv.hs = srv.httpServer(ctx)
	srv.done = make(chan struct{})
	srv.url = "http://" + ln.Addr().String()
	go func() {
		defer close(srv.done)
		_ = srv.hs.Serve(ln) // returns http.ErrServerClosed on Close
	}()
	return srv, srv.url, nil
}

// StartTLS is Start over HTTPS, as the vendors serve: TLS 1.3 with HTTP/2 offered (clients that
// negotiate it multiplex their calls over a few connections instead of one connection per call in
// flight), with a self-signed certificate for 127.0.0.1 made now. It returns the server, its
// https URL, and the certificate in PEM for the client to trust (for a Go client, a file named by
// SSL_CERT_FILE).
func StartTLS(sc *Script) (*Server, string, []byte, error) {
	cert, certPEM, err := selfSigned()
	if err != nil {
		return nil, "", nil, fmt.Errorf("fake model server: certificate: %w", err)
	}
	srv := New(sc)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, fmt.Errorf("fake model server: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv.stop = cancel
	srv.hs = srv.httpServer(ctx)
	srv.hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13, NextProtos: []string{"h2", "http/1.1"}}
	srv.done = make(chan struct{})
	srv.url = "https://" + ln.Addr().String()
	go func() {
		defer close(srv.done)
		_ = srv.hs.ServeTLS(ln, "", "") // returns http.ErrServerClosed on Close
	}()
	return srv, srv.url, certPEM, nil
}

// selfSigned makes a certificate for 127.0.0.1, valid for a day.
func selfSigned() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "agentrun scripted model server"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	return cert, certPEM, err
}

// Close stops a server started by Start: requests in flight see their context end.
func (s *Server) Close() error {
	if s.hs == nil {
		return nil
	}
	s.stop()
	err := s.hs.Close()
	<-s.done
	return err
}

// httpServer serves s with request contexts derived from ctx, so that ending ctx ends every latency
// wait and stream.
func (s *Server) httpServer(ctx context.Context) *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
}

// ListenAndServe serves the script at addr until ctx ends, writing one line per call to logw (which
// may be nil). It is `agentrun dev model-server`.
func ListenAndServe(ctx context.Context, addr string, sc *Script, logw io.Writer) error {
	srv := New(sc)
	srv.logw = logw
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("fake model server: listen on %s: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hs := srv.httpServer(ctx)
	srv.logf("fake model server listening on http://%s (%d script entries)", ln.Addr(), len(srv.currentScript().Entries))
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("fake model server: %w", err)
	case <-ctx.Done():
	}
	// Request contexts end with ctx, so in-flight calls return at once; Shutdown then only waits for
	// their last writes.
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("fake model server: %w", err)
	}
	return nil
}

func (s *Server) currentScript() *Script {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.script
}

func (s *Server) logf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logw != nil {
		fmt.Fprintf(s.logw, "%s %s\n", time.Now().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
	}
}

// record appends a call and returns the hook to run, if the call matched.
func (s *Server) record(c *Call) func(Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	if c.EntryIndex >= 0 {
		return s.hook
	}
	return nil
}

// setCompleted records whether a call's reply was fully written. Callers set it just before writing
// the last bytes (and clear it if that write fails), so a client that has read the whole reply never
// sees its call still incomplete.
func (s *Server) setCompleted(c *Call, done bool) {
	s.mu.Lock()
	c.Completed = done
	s.mu.Unlock()
}

// finish logs a call once its handler is done; wrote is the error writing the reply, if any.
func (s *Server) finish(c *Call, wrote error) {
	if wrote != nil {
		s.setCompleted(c, false)
	}
	s.mu.Lock()
	cp := *c
	s.mu.Unlock()
	mode := "sync"
	if cp.Stream {
		mode = "stream"
	}
	entry := cp.Entry
	if entry == "" {
		entry = "-"
	}
	line := fmt.Sprintf("%s %s entry=%s turn=%d status=%d completed=%t took=%s", cp.Format, mode, entry, cp.Turn,
		cp.Status, cp.Completed, time.Since(cp.Time).Round(time.Millisecond))
	if cp.Error != "" {
		line += " error=" + fmt.Sprintf("%q", cp.Error)
	}
	if wrote != nil {
		line += " write=" + fmt.Sprintf("%q", wrote.Error())
	}
	s.logf("%s", line)
}

// maxBody bounds a request body; conversations are large but not this large.
const maxBody = 64 << 20

func (s *Server) handleModel(format string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		call := &Call{EntryIndex: -1, Format: format, Time: time.Now()}
		fail := func(status int, kind, msg string) {
			call.Status, call.Error = status, msg
			s.record(call)
			s.setCompleted(call, true)
			s.finish(call, writeError(w, format, status, kind, msg))
		}
		if !authorized(format, r) {
			msg := "fake model server: no API key: send an Authorization: Bearer header"
			if format == FormatAnthropic {
				msg = "fake model server: no API key: send an x-api-key header"
			}
			fail(http.StatusUnauthorized, "auth", msg)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			fail(http.StatusBadRequest, "invalid", "fake model server: read body: "+err.Error())
			return
		}
		parse := parseAnthropic
		switch format {
		case FormatOpenAI:
			parse = parseOpenAI
		case FormatResponses:
			parse = parseResponses
		}
		conv, err := parse(body)
		if err != nil {
			kind := "invalid"
			if ie := (*imageError)(nil); errors.As(err, &ie) {
				kind = "invalid_image"
			}
			fail(http.StatusBadRequest, kind, err.Error())
			return
		}
		call.Stream, call.Turn, call.FirstUser = conv.stream, conv.assistants, clip(conv.firstUser, 200)
		call.ToolChoice, call.ForcedTool = conv.toolChoice, conv.forced
		sc := s.currentScript()
		rep, idx, err := plan(sc, conv)
		if idx >= 0 {
			call.EntryIndex, call.Entry = idx, entryName(sc.Entries[idx].Name, idx)
		}
		if err != nil {
			fail(http.StatusInternalServerError, "no_script", err.Error())
			return
		}
		call.Status, call.Latency = http.StatusOK, rep.latency
		if hook := s.record(call); hook != nil {
			hook(*call)
		}
		// The scripted latency counts from the request's arrival, as a vendor's time to its
		// first byte does: reading and parsing the request are inside it, not added to it (on a
		// busy machine they took several milliseconds that a benchmark counted as the client's).
		if wait := rep.latency - time.Since(call.Time); rep.latency > 0 && wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-r.Context().Done():
				t.Stop()
				s.finish(call, fmt.Errorf("client gone during latency: %w", r.Context().Err()))
				return
			case <-t.C:
			}
		}
		last := func() { s.setCompleted(call, true) }
		var werr error
		switch {
		case format == FormatResponses && conv.stream:
			werr = writeResponsesStream(r.Context(), w, rep, conv.resp, last)
		case format == FormatResponses:
			last()
			werr = writeJSON(w, http.StatusOK, respResponse(rep, conv.resp, true))
		case format == FormatAnthropic && conv.stream:
			werr = writeAnthropicStream(r.Context(), w, rep, last)
		case format == FormatAnthropic:
			last()
			werr = writeJSON(w, http.StatusOK, anthropicMessage(rep))
		case conv.stream:
			werr = writeOpenAIStream(r.Context(), w, rep, conv.includeUsage, last)
		default:
			last()
			werr = writeJSON(w, http.StatusOK, openAICompletion(rep))
		}
		s.finish(call, werr)
	}
}

// handleCountTokens answers Anthropic's count_tokens with the server's input estimate (a
// quarter of the conversation's characters, as a reply's usage without a scripted one), so a
// count is a function of the request as a reply is.
func (s *Server) handleCountTokens(w http.ResponseWriter, r *http.Request) {
	call := &Call{EntryIndex: -1, Format: FormatAnthropic, Endpoint: "count_tokens", Time: time.Now()}
	fail := func(status int, kind, msg string) {
		call.Status, call.Error = status, msg
		s.record(call)
		s.setCompleted(call, true)
		s.finish(call, writeError(w, FormatAnthropic, status, kind, msg))
	}
	if !authorized(FormatAnthropic, r) {
		fail(http.StatusUnauthorized, "auth", "fake model server: no API key: send an x-api-key header")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		fail(http.StatusBadRequest, "invalid", "fake model server: read body: "+err.Error())
		return
	}
	// A count has no max_tokens; the rest reads as a Messages request.
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		fail(http.StatusBadRequest, "invalid", "body is not a count_tokens request: "+err.Error())
		return
	}
	if _, ok := req["max_tokens"]; !ok {
		req["max_tokens"] = json.RawMessage("1")
	}
	body, _ = json.Marshal(req)
	conv, err := parseAnthropic(body)
	if err != nil {
		fail(http.StatusBadRequest, "invalid", err.Error())
		return
	}
	call.Turn, call.FirstUser, call.Status = conv.assistants, clip(conv.firstUser, 200), http.StatusOK
	s.record(call)
	s.setCompleted(call, true)
	s.finish(call, writeJSON(w, http.StatusOK, map[string]int64{"input_tokens": max(int64(conv.chars/4), 1)}))
}

// authorized checks loosely that the client sent some key, so a provider built without one is caught.
func authorized(format string, r *http.Request) bool {
	bearer := strings.TrimSpace(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer"))
	if bearer != "" {
		return true
	}
	if format == FormatAnthropic {
		return r.Header.Get("X-Api-Key") != ""
	}
	return r.Header.Get("Api-Key") != "" // Azure's spelling
}

// writeError writes an error in the format's own shape.
func writeError(w http.ResponseWriter, format string, status int, kind, msg string) error {
	if format == FormatAnthropic {
		typ := map[string]string{"auth": "authentication_error", "invalid": "invalid_request_error",
			"invalid_image": "invalid_request_error", "no_script": "api_error", "not_found": "not_found_error"}[kind]
		return writeJSON(w, status, antErrorBody(typ, msg))
	}
	typ, code := "invalid_request_error", ""
	switch kind {
	case "auth":
		code = "invalid_api_key"
	case "invalid_image":
		code = "invalid_image_format"
	case "no_script":
		typ, code = "server_error", "no_script"
	case "not_found":
		code = "not_found"
	}
	return writeJSON(w, status, oaiErrorBody(typ, code, msg))
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode reply: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write reply: %w", err)
	}
	return nil
}

func (s *Server) handleCalls(w http.ResponseWriter, r *http.Request) {
	_ = writeJSON(w, http.StatusOK, s.Calls())
}

func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	s.Reset()
	w.WriteHeader(http.StatusNoContent)
}

// handleScript replaces the script from a YAML or JSON body, for out-of-process tests.
func (s *Server) handleScript(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	sc, err := ParseScript(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.SetScript(sc)
	w.WriteHeader(http.StatusNoContent)
}

// handleNotFound answers unknown paths in both vendors' error shapes at once, so a wrong base URL
// (a doubled /v1, say) reads plainly whichever client sees it.
func (s *Server) handleNotFound(w http.ResponseWriter, r *http.Request) {
	msg := fmt.Sprintf("fake model server: no route for %s %s (serves POST /v1/messages, POST /v1/messages/count_tokens, POST /v1/chat/completions, POST /chat/completions, POST /v1/responses, POST /responses)", r.Method, r.URL.Path)
	_ = writeJSON(w, http.StatusNotFound, map[string]any{
		"type":  "error",
		"error": map[string]any{"type": "not_found_error", "message": msg, "code": "not_found"},
	})
}
