package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store/sqlite"
)

// These tests run the real handler over a real SQLite store through a real HTTP server
// (httptest): what they check is what a client sees on the wire, the error shape above all.

const testToken = "test-token-0123456789"

func newTestServer(t *testing.T) (*httptest.Server, *Server) {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "agentrun.db"))
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	s := &Server{Store: st, Token: testToken, BaseURL: "http://agentrun.test", DataDir: t.TempDir(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Tools: map[string]bool{"read": true, "write": true, "ask_person": true}}
	ts := httptest.NewServer(s.Handler())
	// The HTTP server stops before the store closes (cleanups run last-registered first).
	t.Cleanup(func() { _ = st.Close() })
	t.Cleanup(ts.Close)
	return ts, s
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

// errBody decodes the body as the API's error, refusing any other key.
func (r reply) errBody(t *testing.T) api.Error {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type %q, want application/json (body %s)", ct, r.body)
	}
	var e api.Error
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("error body %s is not {code, message, field}: %v", r.body, err)
	}
	if e.Code == "" || e.Message == "" {
		t.Errorf("error body %s lacks a code or a message", r.body)
	}
	return e
}

func do(t *testing.T, ts *httptest.Server, method, path, token string, body []byte) reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return reply{resp.StatusCode, resp.Header, b}
}

const agentJSON = `{"metadata":{"name":"notes"},"spec":{"system":"Write notes.","tools":["write"]}}`

func TestErrorShapes(t *testing.T) {
	ts, _ := newTestServer(t)
	if r := do(t, ts, "POST", "/v2/agents", testToken, []byte(agentJSON)); r.status != http.StatusCreated {
		t.Fatalf("create agent: HTTP %d %s", r.status, r.body)
	}
	run := do(t, ts, "POST", "/v2/agentruns", testToken, []byte(`{"metadata":{"name":"r1"},"spec":{"agent":"notes","input":"hello"}}`))
	if run.status != http.StatusCreated {
		t.Fatalf("create run: HTTP %d %s", run.status, run.body)
	}
	big := func(n int) []byte {
		b, _ := json.Marshal(map[string]string{"payload": strings.Repeat("x", n)})
		return b
	}
	cases := []struct {
		name, method, path, token string
		body                      []byte
		status                    int
		code, field               string
	}{
		{"no token", "GET", "/v2/agents", "", nil, 401, string(api.CodeUnauthorized), ""},
		{"wrong token", "GET", "/v2/agents", "not-the-token", nil, 401, string(api.CodeUnauthorized), ""},
		{"wrong token, write", "POST", "/v2/agents", "not-the-token", []byte(agentJSON), 401, string(api.CodeUnauthorized), ""},
		{"unknown field", "POST", "/v2/agents", testToken, []byte(`{"metadata":{"name":"a2"},"spec":{"system":"x","toolz":["write"]}}`), 422, string(api.CodeUnknownField), "spec.toolz"},
		{"unknown nested field", "POST", "/v2/agentruns", testToken, []byte(`{"metadata":{"name":"r2","labelz":{}},"spec":{"agent":"notes","input":"x"}}`), 422, string(api.CodeUnknownField), "metadata.labelz"},
		{"wrong type", "POST", "/v2/agents", testToken, []byte(`{"metadata":{"name":"a3"},"spec":{"system":"x","tools":"write"}}`), 422, string(api.CodeWrongType), "spec.tools"},
		{"wrong type in a list", "POST", "/v2/agents", testToken, []byte(`{"metadata":{"name":"a4"},"spec":{"system":"x","tools":["write",7]}}`), 422, string(api.CodeWrongType), "spec.tools[1]"},
		{"not JSON", "POST", "/v2/agents", testToken, []byte(`{"metadata":`), 400, string(api.CodeInvalid), ""},
		{"empty body", "POST", "/v2/agents", testToken, []byte(` `), 400, string(api.CodeInvalid), ""},
		{"missing agent", "GET", "/v2/agents/nobody", testToken, nil, 404, string(api.CodeNotFound), ""},
		{"missing run", "GET", "/v2/agentruns/nothing", testToken, nil, 404, string(api.CodeNotFound), ""},
		{"missing run's steps", "GET", "/v2/agentruns/nothing/steps", testToken, nil, 404, string(api.CodeNotFound), ""},
		{"message to a missing run", "POST", "/v2/agentruns/nothing/messages", testToken, big(3), 404, string(api.CodeNotFound), ""},
		{"no such route", "GET", "/v2/nowhere", testToken, nil, 404, string(api.CodeNotFound), ""},
		{"message of 256 KiB + 1", "POST", "/v2/agentruns/r1/messages", testToken, big(api.MaxInputBytes + 1), 413, string(api.CodeTooLarge), "payload"},
		{"input of 256 KiB + 1", "POST", "/v2/agentruns", testToken, []byte(`{"metadata":{"name":"r3"},"spec":{"agent":"notes","input":"` + strings.Repeat("y", api.MaxInputBytes+1) + `"}}`), 413, string(api.CodeTooLarge), "spec.input"},
		{"body over the limit", "POST", "/v2/agents", testToken, []byte(`{"metadata":{"name":"a5"},"spec":{"system":"` + strings.Repeat("z", maxBody) + `"}}`), 413, string(api.CodeTooLarge), ""},
		{"message without payload", "POST", "/v2/agentruns/r1/messages", testToken, []byte(`{"messageKey":"k"}`), 422, string(api.CodeRequired), "payload"},
		{"duplicate agent", "POST", "/v2/agents", testToken, []byte(agentJSON), 409, string(api.CodeAlreadyExists), "metadata.name"},
		{"method not allowed", "DELETE", "/v2/credits", testToken, nil, 405, "MethodNotAllowed", ""},
		{"method not allowed on a named resource", "POST", "/v2/agents/notes", testToken, []byte(`{}`), 405, "MethodNotAllowed", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := do(t, ts, c.method, c.path, c.token, c.body)
			if r.status != c.status {
				t.Fatalf("%s %s: HTTP %d %s, want %d", c.method, c.path, r.status, r.body, c.status)
			}
			e := r.errBody(t)
			if string(e.Code) != c.code || e.Field != c.field {
				t.Errorf("%s %s: code %q field %q (%s), want code %q field %q", c.method, c.path, e.Code, e.Field, e.Message, c.code, c.field)
			}
		})
	}
	if r := do(t, ts, "DELETE", "/v2/credits", testToken, nil); r.header.Get("Allow") != "GET, POST" {
		t.Errorf("405 Allow header %q, want \"GET, POST\"", r.header.Get("Allow"))
	}
	// A message of exactly 256 KiB is taken.
	if r := do(t, ts, "POST", "/v2/agentruns/r1/messages", testToken, big(api.MaxInputBytes)); r.status >= 300 {
		t.Errorf("message of exactly 256 KiB: HTTP %d %s", r.status, r.body)
	}
}

// A refused request stores nothing: after every refusal above the store holds only what the
// accepted requests made.
func TestRefusedRequestStoresNothing(t *testing.T) {
	ts, s := newTestServer(t)
	for _, body := range []string{
		`{"metadata":{"name":"bad1"},"spec":{"system":"x","toolz":[]}}`,
		`{"metadata":{"name":"bad2"},"spec":{"system":"x","tools":"write"}}`,
		`{"metadata":{"name":"bad3"},"spec":{"system":"x","tools":["no_such_tool"]}}`,
	} {
		if r := do(t, ts, "POST", "/v2/agents", testToken, []byte(body)); r.status < 400 {
			t.Fatalf("%s: HTTP %d, want a refusal", body, r.status)
		}
	}
	if r := do(t, ts, "POST", "/v2/agentruns", testToken, []byte(`{"metadata":{"name":"r9"},"spec":{"agent":"nobody","input":"x"}}`)); r.status < 400 {
		t.Fatalf("run of a missing agent: HTTP %d, want a refusal", r.status)
	}
	agents, err := s.Store.ListAgents(t.Context())
	if err != nil || len(agents) != 0 {
		t.Errorf("agents after refusals: %d, %v; want none", len(agents), err)
	}
	if _, err := s.Store.GetRun(t.Context(), "r9"); err == nil {
		t.Errorf("a refused run was stored")
	}
}
