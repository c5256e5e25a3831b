package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/auth"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/sqlite"
)

// newPersonServer is newTestServer with a signed-up person: it returns the person's session too.
func newPersonServer(t *testing.T) (*httptest.Server, *Server, string) {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "agentrun.db"))
	if err != nil {
		t.Fatal(err)
	}
	accounts, err := auth.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	code := accounts.SetupCode()
	s := &Server{Store: st, Token: testToken, BaseURL: "http://agentrun.test", DataDir: t.TempDir(), Accounts: accounts,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Tools: map[string]bool{"read": true, "write": true, "ask_person": true, "web_fetch": true}}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { _ = st.Close() })
	t.Cleanup(ts.Close)
	r := do(t, ts, "POST", "/v2/login", "", []byte(`{"user":"admin","password":"correct horse battery","setupCode":"`+code+`"}`))
	var out struct {
		Session string `json:"session"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &out) != nil || out.Session == "" {
		t.Fatalf("sign in: HTTP %d %s", r.status, r.body)
	}
	return ts, s, out.Session
}

// Issue 24: a merge patch adding an ask rule to a never-ask agent stored neverAsk: true beside
// it, and the next run used the tool unasked. The patch (and a PUT of the same) is refused,
// naming the rule's field and neverAsk, and the stored agent is unchanged.
func TestPatchAskRuleOntoNeverAsk(t *testing.T) {
	ts, s := newTestServer(t)
	if r := do(t, ts, "PUT", "/v2/agents/nv", testToken, []byte(`{"metadata":{"name":"nv"},"spec":{"system":"x","tools":["read","write"],"approvals":"never-ask"}}`)); r.status != http.StatusCreated {
		t.Fatalf("create agent: HTTP %d %s", r.status, r.body)
	}
	before, err := s.Store.GetAgent(t.Context(), "nv")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, body, field string }{
		{"PATCH", `{"spec":{"approvals":{"rules":[{"match":"read","action":"allow"},{"match":"write","action":"ask"}]}}}`, "spec.approvals.rules[1].action"},
		{"PATCH", `{"spec":{"approvals":{"default":"ask"}}}`, "spec.approvals.default"},
		{"PUT", `{"metadata":{"name":"nv"},"spec":{"system":"x","tools":["write"],"approvals":{"neverAsk":true,"rules":[{"match":"write","action":"ask"}]}}}`, "spec.approvals.rules[0].action"},
	} {
		r := do(t, ts, c.method, "/v2/agents/nv", testToken, []byte(c.body))
		if r.status != http.StatusUnprocessableEntity {
			t.Errorf("%s %s: HTTP %d %s, want 422", c.method, c.body, r.status, r.body)
			continue
		}
		e := r.errBody(t)
		if e.Code != api.CodeInvalid || e.Field != c.field || !strings.Contains(e.Message, "neverAsk") {
			t.Errorf("%s %s: code %s field %q %q, want Invalid at %s naming neverAsk", c.method, c.body, e.Code, e.Field, e.Message, c.field)
		}
	}
	after, err := s.Store.GetAgent(t.Context(), "nv")
	if err != nil {
		t.Fatal(err)
	}
	if after.Metadata.ResourceVersion != before.Metadata.ResourceVersion || after.Spec.Approvals == nil || !after.Spec.Approvals.NeverAsk || len(after.Spec.Approvals.Rules) != 0 {
		t.Errorf("a refused patch changed the agent: %+v", after.Spec.Approvals)
	}
	// Turning never-ask off in the same patch is what the person meant: taken, and it asks.
	r := do(t, ts, "PATCH", "/v2/agents/nv", testToken, []byte(`{"spec":{"approvals":{"neverAsk":null,"rules":[{"match":"write","action":"ask"}]}}}`))
	if r.status != http.StatusOK {
		t.Fatalf("patch with neverAsk removed: HTTP %d %s", r.status, r.body)
	}
	if a, _ := s.Store.GetAgent(t.Context(), "nv"); a.Spec.Approvals == nil || a.Spec.Approvals.NeverAsk || len(a.Spec.Approvals.Rules) != 1 {
		t.Errorf("stored approvals %+v", a.Spec.Approvals)
	}
}

// Issue 24: the API token could resolve an interrupted command with retry, re-running a command
// whose outcome is unknown: that is a person's decision. The token gets 403 PersonRequired (and
// the run still waits); skip stays open to the token; a signed-in person's retry requeues it.
func TestResolveRetryNeedsAPerson(t *testing.T) {
	ts, s, session := newPersonServer(t)
	if r := do(t, ts, "POST", "/v2/agents", testToken, []byte(agentJSON)); r.status != http.StatusCreated {
		t.Fatalf("create agent: HTTP %d %s", r.status, r.body)
	}
	park := func(name string) {
		t.Helper()
		if r := do(t, ts, "POST", "/v2/agentruns", testToken, []byte(`{"metadata":{"name":"`+name+`"},"spec":{"agent":"notes","input":"x"}}`)); r.status != http.StatusCreated {
			t.Fatalf("create run: HTTP %d %s", r.status, r.body)
		}
		leases, err := s.Store.ClaimRuns(t.Context(), "test-owner-"+name, 1, time.Minute)
		if err != nil || len(leases) != 1 || leases[0].Run != name {
			t.Fatalf("claim %s: %v %v", name, leases, err)
		}
		st := api.AgentRunStatus{Phase: api.PhaseNeedsResolution, Reason: api.ReasonInterrupted, WaitingOn: &api.WaitingOn{Kind: "resolution", StepKey: "t0/tool/0"}}
		if _, err := s.Store.Commit(t.Context(), leases[0], store.Write{Steps: []api.Step{{Key: "t0/tool/0", Kind: "tool", State: api.StepStarted, Attempt: 1, StartedAt: time.Now()}}, Status: &st, Release: true}); err != nil {
			t.Fatal(err)
		}
	}
	park("k1")
	park("k2")
	r := do(t, ts, "POST", "/v2/agentruns/k1/resolve", testToken, []byte(`{"action":"retry"}`))
	if r.status != http.StatusForbidden {
		t.Fatalf("retry with the token: HTTP %d %s, want 403", r.status, r.body)
	}
	if e := r.errBody(t); e.Code != api.CodePersonRequired || !strings.Contains(e.Message, "retry") {
		t.Errorf("retry with the token: code %s %q, want PersonRequired saying retry", e.Code, e.Message)
	}
	if run, _ := s.Store.GetRun(t.Context(), "k1"); run.Status.Phase != api.PhaseNeedsResolution {
		t.Errorf("after the token's refused retry: %s, want still NeedsResolution", run.Status.Phase)
	}
	if r := do(t, ts, "POST", "/v2/agentruns/k1/resolve", session, []byte(`{"action":"retry"}`)); r.status != http.StatusOK {
		t.Fatalf("retry by a person: HTTP %d %s", r.status, r.body)
	}
	if run, _ := s.Store.GetRun(t.Context(), "k1"); run.Status.Phase != api.PhaseQueued {
		t.Errorf("after a person's retry: %s, want Queued", run.Status.Phase)
	}
	if r := do(t, ts, "POST", "/v2/agentruns/k2/resolve", testToken, []byte(`{"action":"skip"}`)); r.status != http.StatusOK {
		t.Errorf("skip with the token: HTTP %d %s", r.status, r.body)
	}
}

// Issue 24: an 80-character MCP tool name was accepted though the model is offered it as
// mcp__SERVER__TOOL, over the vendors' 64. Creating the agent is refused at the tool's field,
// before any server is asked, saying the offered name and its length.
func TestMCPToolNameOverVendorLimit(t *testing.T) {
	ts, s := newTestServer(t)
	long := strings.Repeat("t", 80)
	body := `{"metadata":{"name":"m"},"spec":{"system":"x","mcpServers":[{"name":"ev","url":"http://127.0.0.1:1/mcp","tools":["` + long + `"]}]}}`
	r := do(t, ts, "PUT", "/v2/agents/m", testToken, []byte(body))
	if r.status != http.StatusUnprocessableEntity {
		t.Fatalf("an 80-character MCP tool: HTTP %d %s, want 422", r.status, r.body)
	}
	e := r.errBody(t)
	if e.Code != api.CodeInvalid || e.Field != "spec.mcpServers[0].tools[0]" || !strings.Contains(e.Message, "mcp__ev__"+long) || !strings.Contains(e.Message, "89 characters") {
		t.Errorf("code %s field %q %q, want Invalid at spec.mcpServers[0].tools[0] naming mcp__ev__%s and 89 characters", e.Code, e.Field, e.Message, long)
	}
	if _, err := s.Store.GetAgent(t.Context(), "m"); err == nil {
		t.Error("the refused agent was stored")
	}
}
