package api

import (
	"encoding/json"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
)

// A reply claims 2,000,000 input tokens of haiku ($2.00 at list price, $2.285715 billed), far
// above what the call's request and maxTokens allow.
const overReportScript = `
entries:
  - name: liar
    match: "Overreport"
    turns:
      - tool_calls:
          - name: ls
            input: {path: "."}
        usage: {input_tokens: 2000000, output_tokens: 10}
      - text: "done"
        usage: {input_tokens: 100, output_tokens: 10}
  - name: honest
    match: "Honest"
    turns:
      - text: "fine"
        usage: {input_tokens: 100, output_tokens: 10}
`

// The vendor's usage is a claim: a reply claiming 2,000,000 input tokens under a $0.10 cap is
// charged the worst case reserved before the call (not the $2.29 its usage prices at), the excess
// is a cost.discrepancy on the timeline and in the metrics, the run goes on within its cap, the
// credits never go below zero, and another run sharing them still runs.
func TestMoneyVendorOverReport(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, overReportScript)
	e.Start()
	// $0.15 covers both runs' honest worst cases (4096 output tokens of haiku: ~$0.03 each with the
	// markup), not the claimed $2.29: unbounded, the credits would end at about -$2.15 and the
	// second run would wait on Credits.
	e.MustCLI(0, "credits", "add", "0.15")
	for _, a := range []string{
		`{"metadata":{"name":"liar"},"spec":{"model":{"access":"Server","name":"claude-haiku-4-5"},"tools":["ls"],"perRunMaxCostUSD":"0.10"}}`,
		`{"metadata":{"name":"honest"},"spec":{"model":{"access":"Server","name":"claude-haiku-4-5"},"perRunMaxCostUSD":"0.10"}}`,
	} {
		var ag struct{ Metadata struct{ Name string } }
		json.Unmarshal([]byte(a), &ag)
		if st := e.Do("PUT", "/v2/agents/"+ag.Metadata.Name, a, nil); st != 201 {
			t.Fatalf("create agent %s: HTTP %d", ag.Metadata.Name, st)
		}
	}
	before := e.MetricValue("agentrun_cost_discrepancies_total")
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/liar/runs", `{"input":{"content":"Overreport, please"}}`, &run); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	name := run.Metadata.Name
	r := e.WaitPhase(name, 20*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseWaiting)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run %s/%s: %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	total := USD(t, r.Status.Cost.TotalUSD)
	if total > USD(t, "0.10") {
		t.Errorf("run total $%s is over its $0.10 cap", total)
	}
	// The discrepancy: reported vs charged, the charge exactly the reservation.
	var disc *api.Event
	for _, ev := range e.Events(name) {
		if ev.Type == "cost.discrepancy" {
			disc = &ev
		}
	}
	if disc == nil || disc.StepKey != "t0/model" {
		t.Fatalf("no cost.discrepancy event for t0/model on the timeline (got %+v)", disc)
	}
	var d struct {
		Model       string `json:"model"`
		ReportedUSD string `json:"reportedUSD"`
		ReservedUSD string `json:"reservedUSD"`
		ChargedUSD  string `json:"chargedUSD"`
		ExcessUSD   string `json:"excessUSD"`
	}
	if err := json.Unmarshal(disc.Data, &d); err != nil {
		t.Fatalf("discrepancy data %s: %v", disc.Data, err)
	}
	// 2,000,000 × $1 + 10 × $5 per million = $2.00005 at list price; × 8/7 rounded up.
	if d.ReportedUSD != "2.285772" || d.ChargedUSD != d.ReservedUSD || USD(t, d.ChargedUSD) >= USD(t, "0.10") ||
		USD(t, d.ExcessUSD) != USD(t, d.ReportedUSD)-USD(t, d.ChargedUSD) {
		t.Errorf("discrepancy = %+v, want reported 2.285772 charged at the reservation", d)
	}
	t.Logf("reported $%s, reserved and charged $%s, run total $%s", d.ReportedUSD, d.ChargedUSD, total)
	if got := e.MetricValue("agentrun_cost_discrepancies_total"); got != before+1 {
		t.Errorf("agentrun_cost_discrepancies_total went %g → %g, want +1", before, got)
	}
	if got := e.MetricValue("agentrun_cost_discrepancy_micros_total"); got < float64(USD(t, d.ExcessUSD)) {
		t.Errorf("agentrun_cost_discrepancy_micros_total = %g, want at least %d", got, USD(t, d.ExcessUSD))
	}
	// The ledger charged the reservation for t0/model; the balance is not negative.
	c := e.Credits()
	for _, en := range c.Entries {
		if en.Kind == "charge" && en.Run == name && en.StepKey == "t0/model" && en.AmountUSD != d.ChargedUSD {
			t.Errorf("ledger charged t0/model $%s, want the reservation $%s", en.AmountUSD, d.ChargedUSD)
		}
	}
	if bal := USD(t, c.BalanceUSD); bal != USD(t, "0.15")-total {
		t.Errorf("balance $%s after a run that cost $%s of $0.15", c.BalanceUSD, total)
	}

	// Another run sharing the credits goes on.
	var run2 api.AgentRun
	if st := e.Do("POST", "/v2/agents/honest/runs", `{"input":{"content":"Honest work"}}`, &run2); st != 201 {
		t.Fatalf("start second run: HTTP %d", st)
	}
	r2 := e.WaitPhase(run2.Metadata.Name, 20*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseWaiting)
	if r2.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("second run %s/%s: %s", r2.Status.Phase, r2.Status.Reason, r2.Status.Message)
	}
	c = CheckLedger(t, e, name, run2.Metadata.Name)
	if bal, err := cost.ParseUSD(c.BalanceUSD); err != nil || bal < 0 {
		t.Errorf("credits balance %q: below zero or unreadable (%v)", c.BalanceUSD, err)
	}
}

// The same bound through the OpenAI wire format: prompt_tokens claimed far above the request.
func TestMoneyVendorOverReportOpenAI(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, overReportScript)
	e.Extra = []string{"OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=" + e.Model.URL() + "/v1"}
	e.Start()
	e.MustCLI(0, "credits", "add", "0.05")
	if st := e.Do("PUT", "/v2/agents/liar", `{"metadata":{"name":"liar"},"spec":{"model":{"access":"Server","provider":"openai","name":"gpt-4.1-mini"},"tools":["ls"],"perRunMaxCostUSD":"0.10"}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/liar/runs", `{"input":{"content":"Overreport, please"}}`, &run); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	r := e.WaitPhase(run.Metadata.Name, 20*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseWaiting)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run %s/%s: %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	for _, c := range e.Model.Calls() {
		if c.Format != "openai" {
			t.Fatalf("call %+v: want the OpenAI format", c)
		}
	}
	var d struct{ ReportedUSD, ReservedUSD, ChargedUSD string }
	for _, ev := range e.Events(run.Metadata.Name) {
		if ev.Type == "cost.discrepancy" && ev.StepKey == "t0/model" {
			json.Unmarshal(ev.Data, &d)
		}
	}
	// 2,000,000 × $0.40 + 10 × $1.60 per million = $0.800016; × 8/7 rounded up.
	if d.ReportedUSD != "0.914304" || d.ChargedUSD == "" || d.ChargedUSD != d.ReservedUSD {
		t.Errorf("discrepancy = %+v, want reported 0.914304 charged at the reservation", d)
	}
	if total := USD(t, r.Status.Cost.TotalUSD); total > USD(t, "0.10") {
		t.Errorf("run total $%s is over its cap", total)
	}
	c := CheckLedger(t, e, run.Metadata.Name)
	if bal, err := cost.ParseUSD(c.BalanceUSD); err != nil || bal < 0 {
		t.Errorf("credits balance %q: below zero or unreadable (%v)", c.BalanceUSD, err)
	}
}
