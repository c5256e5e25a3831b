package console

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

func TestTurnKeyAndLabel(t *testing.T) {
	for key, want := range map[string]string{
		"t0/model": "t0", "t3/tool/1": "t3", "t3/tool/1/approval": "t3", "computer": "computer", "m2": "m2",
		"wf/triage/t0/model": "wf/triage/t0", "wf/each[1]/count/t2/tool/0": "wf/each[1]/count/t2", "wf/final": "wf/final",
		"learn/propose": "learn",
	} {
		if got := turnKey(key); got != want {
			t.Errorf("turnKey(%q) = %q, want %q", key, got, want)
		}
	}
	if got := turnLabel("t3"); got != "turn 4" {
		t.Errorf("turnLabel(t3) = %q", got)
	}
	if got := turnLabel("wf/triage/t0"); got != "wf/triage turn 1" {
		t.Errorf("turnLabel(wf/triage/t0) = %q", got)
	}
}

// The cost against the cap: an unknown cost is said, never drawn as $0; over the cap is marked.
func TestCostBar(t *testing.T) {
	for _, c := range []struct {
		cost       *api.RunCost
		has, hasnt []string
	}{
		{nil, []string{"unknown"}, []string{"$0", "<svg"}},
		{&api.RunCost{TotalUSD: "unknown", LimitUSD: "1"}, []string{"unknown", `class="cb-cap"`}, []string{"$0", "cb-fill"}},
		{&api.RunCost{TotalUSD: "at least 0.25", LimitUSD: "1"}, []string{"at least $0.25", "cb-fill partial", "25% of the cap"}, nil},
		{&api.RunCost{TotalUSD: "1.5", LimitUSD: "1"}, []string{"cb-fill over", "150% of the cap"}, nil},
		{&api.RunCost{TotalUSD: "0.0001", LimitUSD: "1"}, []string{"under 1% of the cap", `role="img" aria-label="Cost $0.0001 of a $1 cap`}, nil},
		{&api.RunCost{TotalUSD: "0.3", Billing: "none"}, []string{"$0.3", "metered, no cap"}, []string{"<svg"}},
	} {
		got := string(costBar(c.cost))
		for _, s := range c.has {
			if !strings.Contains(got, s) {
				t.Errorf("costBar(%+v) lacks %q: %s", c.cost, s, got)
			}
		}
		for _, s := range c.hasnt {
			if strings.Contains(got, s) {
				t.Errorf("costBar(%+v) has %q: %s", c.cost, s, got)
			}
		}
	}
}

// A run's steps on its page: the transcript (the model's text, the tool call folded with its
// input and result), the waterfall (named, turns as rows), the steps table with a deep-link id
// per step; each step's JSON as stored; the parts the script swaps in.
func TestRunPageStepsTranscriptAndJSON(t *testing.T) {
	t.Parallel()
	tc := newTestConsole(t)
	tc.createRun(t, "r1")
	l := tc.claim(t, "r1")
	now := time.Now().Add(-2 * time.Second)
	done := now.Add(800 * time.Millisecond)
	result := json.RawMessage(`{"model":"claude-test","content":[{"type":"text","text":"Let me write <it> down."},{"type":"tool_use","name":"write","input":{}}],"stopReason":"tool_use"}`)
	tc.commit(t, l, store.Write{Status: &api.AgentRunStatus{Phase: api.PhaseRunning, AgentRevision: 1, StartedAt: &now}, Events: events("run.started"),
		Steps: []api.Step{{Key: "t0/model", Kind: "model", State: api.StepStarted, Title: "model call (claude-test, turn 1)", Attempt: 1, StartedAt: now}}})
	tc.commit(t, l, store.Write{Status: &api.AgentRunStatus{Phase: api.PhaseRunning, AgentRevision: 1, StartedAt: &now},
		Steps: []api.Step{
			{Key: "t0/model", Kind: "model", State: api.StepCompleted, Title: "model call (claude-test, turn 1)", Attempt: 1, Result: result, StartedAt: now, CompletedAt: &done},
			{Key: "t0/tool/0", Kind: "tool", State: api.StepStarted, Title: "write notes.md", Attempt: 1, Args: json.RawMessage(`{"tool":"write","input":{"path":"notes.md"}}`), StartedAt: done},
		}})
	_, page := tc.body(t, "/runs/r1")
	for _, want := range []string{
		`Let me write &lt;it&gt; down.`, `<span class="tx-tool">write</span>`, `{&#34;path&#34;:&#34;notes.md&#34;}`,
		`<svg class="waterfall" role="img" aria-label="Timeline of run r1: 2 steps in 1 rows`,
		`<tr id="step-t0/model"`, `<tr id="step-t0/tool/0"`, `href="#step-t0/tool/0"`, `>turn 1<`, `>800 ms<`, `running `,
		`aria-controls="json-t0/model"`, `href="/runs/r1/steps/t0/model"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the run page lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("the page:\n%s", page)
	}
	resp, body := tc.body(t, "/runs/r1/steps/t0/tool/0")
	var step api.Step
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &step) != nil || step.Key != "t0/tool/0" || !strings.Contains(body, "\n  \"key\": \"t0/tool/0\",\n") ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Errorf("a step's JSON: HTTP %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if resp, _ := tc.body(t, "/runs/r1/steps/t9/model"); resp.StatusCode != 404 {
		t.Errorf("a missing step's JSON: HTTP %d", resp.StatusCode)
	}
	if resp := tc.get(t, context.Background(), "/runs/r1/steps/t0/model", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a step's JSON without a session: HTTP %d", resp.StatusCode)
	}
	if resp, part := tc.body(t, "/runs/r1/part/transcript"); resp.StatusCode != 200 || !strings.HasPrefix(part, `<h2 id="transcript">`) || strings.Contains(part, "<html") ||
		!strings.Contains(part, "Let me write") {
		t.Errorf("the transcript part: HTTP %d\n%s", resp.StatusCode, part)
	}
	if resp, part := tc.body(t, "/runs/r1/part/facts"); resp.StatusCode != 200 || !strings.Contains(part, `<dl class="facts">`) {
		t.Errorf("the facts part: HTTP %d\n%s", resp.StatusCode, part)
	}
	if resp, _ := tc.body(t, "/runs/r1/part/secrets"); resp.StatusCode != 404 {
		t.Errorf("an unknown part: HTTP %d", resp.StatusCode)
	}
}

// Raising the cap from the page takes the page's CSRF token and goes through the server's rule.
func TestRaiseCapForm(t *testing.T) {
	t.Parallel()
	tc := newTestConsole(t)
	var got []string
	tc.RaiseCap = func(_ context.Context, run, capUSD, user string) error {
		got = append(got, run+" "+capUSD+" "+user)
		if capUSD == "0.01" {
			return &api.Error{Status: http.StatusUnprocessableEntity, Code: api.CodeCapNotRaised, Field: "spec.maxCostUSD", Message: "the cap can only be raised"}
		}
		return nil
	}
	tc.createRun(t, "r1")
	form := url.Values{"maxCostUSD": {"0.50"}}
	if resp, _ := tc.postForm(t, "/runs/r1/cap", tc.session, form); resp.StatusCode != http.StatusForbidden || len(got) != 0 {
		t.Errorf("without the CSRF token: HTTP %d, raised %v", resp.StatusCode, got)
	}
	form.Set("csrf", tc.csrf())
	resp, _ := tc.postForm(t, "/runs/r1/cap", tc.session, form)
	if resp.StatusCode != http.StatusSeeOther || len(got) != 1 || got[0] != "r1 0.50 admin" {
		t.Errorf("with it: HTTP %d, raised %v", resp.StatusCode, got)
	}
	form.Set("maxCostUSD", "0.01")
	resp, body := tc.postForm(t, "/runs/r1/cap", tc.session, form)
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "CapNotRaised") || !strings.Contains(body, "spec.maxCostUSD") {
		t.Errorf("a lower cap: HTTP %d %s", resp.StatusCode, body)
	}
}
