package harness

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// countCall posts a count_tokens body to the run's gateway with its token.
func countCall(t *testing.T, base, tok, run, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v2/gateway/anthropic/v1/messages/count_tokens", bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", tok)
	req.Header.Set("X-Agentrun-Run", run)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// counts is how many token counts reached the scripted server.
func counts(e *Env) int {
	n := 0
	for _, c := range e.Model.Calls() {
		if c.Endpoint == "count_tokens" {
			n++
		}
	}
	return n
}

// A token count is a journal step: answered by the vendor once, then from the journal, also to
// the harness started again after a SIGKILL (its new token, the same request); never a turn's model
// call, never charged; counted in agentrun_gateway_counts_total. A count the vendor refuses is
// answered to the harness with the vendor's status and body, not as the 503 of a stopped run.
func TestClaudeCountTokensStep(t *testing.T) {
	t.Parallel()
	e := NewClaudeEnv(t, ClaudeScript)
	e.Start()
	e.MustAgent("slow", `{"metadata":{"name":"slow"},"spec":{"harness":"claude-agent","computer":{"kind":"none"},"tools":["write"]}}`)
	e.StartRun("slow", "ct1", "Be slow")
	mcp, tok := mcpConf(t, e.Dir, "ct1")
	base, _, _ := strings.Cut(mcp, "/v2/gateway/")
	const body = `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"Say hello to the counter, please"}],"metadata":{"user_id":"session-1"}}`
	st, first := countCall(t, base, tok, "ct1", body)
	if st != 200 || !strings.Contains(first, `"input_tokens":`) {
		t.Fatalf("count_tokens: HTTP %d %s", st, first)
	}
	st, again := countCall(t, base, tok, "ct1", body)
	if st != 200 || again != first || counts(e) != 1 {
		t.Errorf("the same count again: HTTP %d %s (first %s), %d counts reached the vendor, want 1", st, again, first, counts(e))
	}
	var count *api.Step
	for _, s := range e.Steps("ct1") {
		if strings.HasPrefix(s.Key, "count/") {
			s := s
			count = &s
		}
		if s.Kind == "count" && s.CostMicros != nil && *s.CostMicros != 0 {
			t.Errorf("count step %s cost %d", s.Key, *s.CostMicros)
		}
	}
	if count == nil || count.Kind != "count" || count.State != api.StepCompleted || !strings.Contains(count.Title, "via claude-agent") {
		t.Fatalf("no completed count step: %+v", count)
	}
	r := e.GetRun("ct1")
	for _, turn := range r.Status.Turns {
		if turn.ModelCalls != 0 {
			t.Errorf("a count made a model call of turn %+v", turn)
		}
	}
	if st, refused := countCall(t, base, tok, "ct1", `{"model":"m","messages":"not a list"}`); st != 400 || !strings.Contains(refused, "invalid_request_error") {
		t.Errorf("a count the vendor refuses: HTTP %d %s", st, refused)
	}

	// SIGKILL the runner; started again, the harness gets a new token and asks the same count
	// (another session id in metadata, which a replay ignores): the journal answers it.
	e.Kill()
	NoHarnessLeft(t, e.Dir, 10*time.Second)
	e.Start()
	var tok2 string
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		mcp, tok2 = mcpConf(t, e.Dir, "ct1")
		if tok2 != tok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the restarted run's harness has no new token")
		}
	}
	base, _, _ = strings.Cut(mcp, "/v2/gateway/")
	if st, _ := countCall(t, base, tok, "ct1", body); st != 401 {
		t.Errorf("the dead drive's token: HTTP %d, want 401", st)
	}
	st, replayed := countCall(t, base, tok2, "ct1", strings.Replace(body, "session-1", "session-2", 1))
	if st != 200 || replayed != first {
		t.Errorf("after the restart: HTTP %d %s, want the recorded %s", st, replayed, first)
	}
	if n := counts(e); n != 2 {
		// The first count and the refused one; the replayed count did not reach the vendor.
		t.Errorf("%d counts reached the vendor, want 2", n)
	}
	if v := e.MetricValue(`agentrun_gateway_counts_total{provider="anthropic",outcome="journal"}`); v != 1 {
		t.Errorf("journal-answered counts in this process = %v, want 1", v)
	}
	e.MustCLI(0, "cancel", "agentrun/ct1")
	e.WaitPhase("ct1", 20*time.Second, api.PhaseCancelled)
}
