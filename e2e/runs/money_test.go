package runs

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
)

func TestMoneyExactCost(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, ExactScript)
	e.Start()
	e.MustCLI(0, "credits", "add", "1.00")
	if st := e.Do("PUT", "/v2/agents/pricer", `{"metadata":{"name":"pricer"},"spec":{"model":{"access":"Nodus"},"tools":["ls"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/pricer/runs", `{"input":{"content":"Price check, please"}}`, &run); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	r := e.WaitPhase(run.Metadata.Name, 15*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run %s/%s: %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	c := r.Status.Cost
	if c == nil || c.TotalUSD != "0.004773" || c.VendorUSD != "0.004175" || c.LimitUSD != "1.00" || c.Billing != "credits" {
		t.Errorf("status.cost = %+v, want total 0.004773, vendor 0.004175, limit 1.00, billing credits", c)
	}
	if len(r.Status.Turns) != 1 {
		t.Fatalf("turns = %+v, want 1", r.Status.Turns)
	}
	want := api.Turn{Index: 1, Model: "claude-haiku-4-5", Family: "haiku", ChosenBy: "jev", Confidence: 0.9, ModelCalls: 2,
		InputTokens: 1500, OutputTokens: 300, CacheWriteTokens: 400, CacheWrite1hTokens: 100, CacheReadTokens: 2000,
		RouteCostUSD: "0.000458", CostUSD: "0.004773"}
	if got := r.Status.Turns[0]; got != want {
		t.Errorf("turn = %+v\nwant   %+v", got, want)
	}
	// The ledger: one add, one charge per call, nothing held.
	cr := CheckLedger(t, e, run.Metadata.Name)
	if cr.BalanceUSD != "0.995227" || cr.ChargedUSD != "0.004773" || !cr.Enforced {
		t.Errorf("credits = %+v, want balance 0.995227, charged 0.004773", cr)
	}
	charges := map[string]string{}
	for _, en := range cr.Entries {
		if en.Kind == "charge" {
			charges[en.StepKey] = en.AmountUSD
		}
	}
	if fmt.Sprint(charges) != "map[t0/model:0.003172 t0/route:0.000458 t1/model:0.001143]" {
		t.Errorf("charges = %v", charges)
	}
	// The CLI shows the turn and the ledger.
	out := e.MustCLI(0, "runs", "turns", run.Metadata.Name).Stdout
	for _, s := range []string{"claude-haiku-4-5", "haiku", "jev", "1500", "2000", "$0.000458", "$0.004773", "total: $0.004773 of a $1.00 cap"} {
		if !strings.Contains(out, s) {
			t.Errorf("runs turns lacks %q:\n%s", s, out)
		}
	}
	out = e.MustCLI(0, "credits").Stdout
	for _, s := range []string{"balance:   $0.995227", "-$0.003172", "+$1.00", "t0/route"} {
		if !strings.Contains(out, s) {
			t.Errorf("credits lacks %q:\n%s", s, out)
		}
	}
	if y := e.MustCLI(0, "get", "agentrun/"+run.Metadata.Name, "-o", "yaml").Stdout; !strings.Contains(y, "chosenBy: jev") || !strings.Contains(y, "cacheWrite1hTokens: 100") {
		t.Errorf("get -o yaml lacks the turns:\n%s", y)
	}
}

const capScript = `
entries:
  - name: route
    match: "Route this request"
    turns:
      - text: '{"family": "sonnet", "confidence": 1}'
        usage: {input_tokens: 100, output_tokens: 10}
  - name: capped
    match: "Capped work"
    turns:
      - text: "done within the cap"
        usage: {input_tokens: 100, output_tokens: 10}
`

// A cap holds at the exact boundary: the run parks before the call that might exceed it, says the
// least cap it needs, stays parked one micro-dollar under it, and goes on at exactly it.
func TestMoneyCapBoundary(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, capScript)
	e.Start()
	agent := `{"metadata":{"name":"capper"},"spec":{"model":{"access":"Server","families":["sonnet"]},"perRunMaxCostUSD":"0.01"}}`
	if st := e.Do("PUT", "/v2/agents/capper", agent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/capper/runs", `{"input":{"content":"Capped work"}}`, &run); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	name := run.Metadata.Name
	r := e.WaitPhase(name, 10*time.Second, api.PhaseWaiting)
	if r.Status.Reason != api.ReasonMaxCostReached || r.Status.Cost == nil || r.Status.Cost.NeededUSD == "" || r.Status.WaitingOn == nil || r.Status.WaitingOn.Kind != "cost" {
		t.Fatalf("run waits %s (%s) cost %+v, want MaxCostReached with neededUSD", r.Status.Reason, r.Status.Message, r.Status.Cost)
	}
	needed := USD(t, r.Status.Cost.NeededUSD)
	spent := USD(t, r.Status.Cost.TotalUSD)
	// The routing call fit; the model call (4096 output tokens of sonnet at least) does not.
	if spent == 0 || needed <= USD(t, "0.01") || needed < spent+cost.Micros(4096*15*8/7) {
		t.Fatalf("spent $%s, needs $%s: not plausible", spent, needed)
	}
	if n := AgentCalls(e.Model); n != 0 {
		t.Fatalf("the model was called %d times past the cap", n)
	}
	e.MustCLI(8, "runs", "wait", name)
	// Editing the agent does not change the started run.
	if st := e.Do("PUT", "/v2/agents/capper", strings.Replace(agent, `"0.01"`, `"5.00"`, 1), nil); st != 200 {
		t.Fatalf("edit agent: HTTP %d", st)
	}
	// Lowering is refused.
	if res := e.MustCLI(1, "runs", "raise-cap", name, "0.005"); !strings.Contains(res.Stderr, "CapNotRaised") {
		t.Errorf("lowering the cap: %s", res.Stderr)
	}
	// One micro-dollar under what it needs: it parks again, asking for the same.
	e.MustCLI(0, "runs", "raise-cap", name, (needed - 1).String())
	r = e.WaitPhase(name, 10*time.Second, api.PhaseWaiting)
	if r.Status.Reason != api.ReasonMaxCostReached || r.Status.Cost.NeededUSD != needed.String() || r.Status.Cost.LimitUSD != (needed-1).String() {
		t.Fatalf("one micro-dollar short: %s, cost %+v; want MaxCostReached needing %s", r.Status.Reason, r.Status.Cost, needed)
	}
	if n := AgentCalls(e.Model); n != 0 {
		t.Fatalf("the model was called %d times past the cap", n)
	}
	// Exactly what it needs: it goes on by itself.
	e.MustCLI(0, "runs", "raise-cap", name, needed.String())
	r = e.WaitPhase(name, 10*time.Second, api.PhaseSucceeded)
	if r.Status.Cost.LimitUSD != needed.String() || USD(t, r.Status.Cost.TotalUSD) > needed {
		t.Errorf("finished with cost %+v, cap %s", r.Status.Cost, needed)
	}
	if RouterCalls(e.Model) != 1 {
		t.Errorf("routing calls = %d, want 1 (a recorded decision is replayed, never asked again)", RouterCalls(e.Model))
	}
	if !HasEvent(e.Events(name), "run.cap_raised", needed.String()) {
		t.Error("timeline does not show the raise")
	}
}

const creditsScript = `
entries:
  - name: route
    match: "Route this request"
    turns:
      - text: '{"family": "haiku", "confidence": 0.8}'
        usage: {input_tokens: 200, output_tokens: 10}
  - name: work
    match: "Spend credits"
    turns:
      - text: "spent"
        usage: {input_tokens: 1000, output_tokens: 100}
`

// Credits run out: the run waits with Credits (and says how much to add), makes no call, and
// continues by itself when credits are added.
func TestMoneyCreditsExhaustionAndRefill(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, creditsScript)
	e.Start()
	// Enough for the routing call's worst case, not for the model call's (4096 output tokens of
	// haiku: $0.02 at least).
	e.MustCLI(0, "credits", "add", "0.01")
	if st := e.Do("PUT", "/v2/agents/spender", `{"metadata":{"name":"spender"},"spec":{"model":{"access":"Nodus"}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/spender/runs", `{"input":{"content":"Spend credits"}}`, &run); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	name := run.Metadata.Name
	r := e.WaitPhase(name, 10*time.Second, api.PhaseWaiting)
	if r.Status.Reason != api.ReasonCredits || r.Status.WaitingOn == nil || r.Status.WaitingOn.Kind != "credits" || r.Status.Cost.NeededUSD == "" {
		t.Fatalf("run waits %s: %s (cost %+v), want Credits", r.Status.Reason, r.Status.Message, r.Status.Cost)
	}
	if AgentCalls(e.Model) != 0 {
		t.Fatal("a model call was made without credits")
	}
	e.MustCLI(8, "runs", "wait", name)
	c := e.Credits()
	if len(c.Reservations) != 0 {
		t.Errorf("a waiting run holds credits: %+v", c.Reservations)
	}
	// The least it asks for is enough.
	e.MustCLI(0, "credits", "add", r.Status.Cost.NeededUSD)
	r = e.WaitPhase(name, 10*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("after the refill: %s/%s %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	// Routing: 200 + 50 = 250 µ$ → 286; model: 1000 + 500 = 1500 µ$ → 1715 (× 8/7, rounded up).
	if r.Status.Cost.TotalUSD != "0.002001" {
		t.Errorf("total = %s, want 0.002001", r.Status.Cost.TotalUSD)
	}
	CheckLedger(t, e, name)
}

// A model the price table does not know: refused at start when capped, unless the agent allows
// it; then its cost reads "unknown", never $0, and the credits say so too.
func TestMoneyUnpricedModel(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, UnpricedScript)
	e.Start()
	e.MustCLI(0, "credits", "add", "1")
	agent := `{"metadata":{"name":"mystery"},"spec":{"model":{"access":"Server","provider":"anthropic","name":"mystery-model-7"}}}`
	if st := e.Do("PUT", "/v2/agents/mystery", agent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var apiErr api.Error
	if st := e.Do("POST", "/v2/agents/mystery/runs", `{"input":{"content":"Mystery"}}`, &apiErr); st != 422 || apiErr.Code != "UnpricedModel" || apiErr.Field != "spec.model.name" {
		t.Fatalf("capped run on an unpriced model: HTTP %d %+v, want 422 UnpricedModel", st, apiErr)
	}
	if !strings.Contains(apiErr.Message, "allowUnpricedModels") {
		t.Errorf("the error does not say how to opt in: %s", apiErr.Message)
	}
	if st := e.Do("PUT", "/v2/agents/mystery", strings.Replace(agent, `"spec":{`, `"spec":{"allowUnpricedModels":true,`, 1), nil); st != 200 {
		t.Fatalf("update agent: HTTP %d", st)
	}
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/mystery/runs", `{"input":{"content":"Mystery"}}`, &run); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	r := e.WaitPhase(run.Metadata.Name, 10*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run %s: %s", r.Status.Phase, r.Status.Message)
	}
	if r.Status.Cost.TotalUSD != "unknown" || r.Status.Turns[0].CostUSD != "unknown" || r.Status.Turns[0].ChosenBy != "agent" {
		t.Errorf("cost %+v turn %+v, want unknown", r.Status.Cost, r.Status.Turns[0])
	}
	c := e.Credits()
	if c.UnpricedCharges != 1 || c.ChargedUSD != "unknown" || !strings.HasPrefix(c.BalanceUSD, "at most ") || len(c.Reservations) != 0 {
		t.Errorf("credits = %+v, want one unknown charge and the balance as an upper bound", c)
	}
	if out := e.MustCLI(0, "runs", "turns", run.Metadata.Name).Stdout; !strings.Contains(out, "unknown") || strings.Contains(out, "$0.00") {
		t.Errorf("runs turns shows a price for an unpriced call:\n%s", out)
	}
}

// The router: its decision is journaled (one call per turn, never asked again), and when it
// fails, is missing, times out or answers out of bounds, sonnet or the nearest allowed family
// answers, chosen by "fallback".
func TestRouterJevAndFallback(t *testing.T) {
	t.Parallel()
	const script = `
entries:
  - name: route-jev
    match: "Route this request: jev task"
    turns:
      - text: '{"family": "opus", "confidence": 0.7}'
  - name: route-out
    match: "Route this request: out of bounds"
    turns:
      - text: '{"family": "fable", "confidence": 0.99}'
  - name: route-garbled
    match: "Route this request: garbled"
    turns:
      - text: 'opus, I think'
      - text: 'opus, I said'
  - name: route-slow
    match: "Route this request: slow router"
    turns:
      - text: '{"family": "haiku", "confidence": 0.9}'
        latency: 12s
  - name: task
    match: "task"
    turns:
      - text: "first answer"
      - text: "second answer"
  - name: other
    match: "*"
    turns:
      - text: "ok"
`
	e := NewEnv(t, script)
	e.Start()
	mk := func(name, families string) {
		body := fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"model":{"access":"Nodus","families":%s}}}`, name, families)
		if st := e.Do("PUT", "/v2/agents/"+name, body, nil); st != 201 {
			t.Fatalf("create agent %s: HTTP %d", name, st)
		}
	}
	mk("all", `[]`)
	mk("cheap", `["haiku","sonnet"]`)
	mk("ends", `["haiku","opus"]`)
	cases := []struct {
		agent, input, family, model, chosenBy, reason string
	}{
		{"all", "jev task", "opus", "claude-opus-4-5", "jev", ""},
		{"all", "unscripted task", "sonnet", "claude-sonnet-4-5", "fallback", "router call failed"},
		{"cheap", "out of bounds task", "sonnet", "claude-sonnet-4-5", "fallback", "outside the allowed families"},
		{"cheap", "garbled task", "sonnet", "claude-sonnet-4-5", "fallback", "not the route JSON asked for, after a corrective retry"},
		{"ends", "unscripted task for the ends", "haiku", "claude-haiku-4-5", "fallback", "router call failed"},
		{"all", "slow router task", "sonnet", "claude-sonnet-4-5", "fallback", "no answer within 10s"},
	}
	names := make([]string, len(cases))
	for i, c := range cases {
		var run api.AgentRun
		if st := e.Do("POST", "/v2/agents/"+c.agent+"/runs", fmt.Sprintf(`{"input":{"content":%q}}`, c.input), &run); st != 201 {
			t.Fatalf("start run: HTTP %d", st)
		}
		names[i] = run.Metadata.Name
	}
	for i, c := range cases {
		r := e.WaitPhase(names[i], 30*time.Second, api.PhaseSucceeded, api.PhaseFailed)
		if r.Status.Phase != api.PhaseSucceeded || len(r.Status.Turns) != 1 {
			t.Errorf("%s: %s %s turns %+v", c.input, r.Status.Phase, r.Status.Message, r.Status.Turns)
			continue
		}
		tr := r.Status.Turns[0]
		if tr.Family != c.family || tr.Model != c.model || tr.ChosenBy != c.chosenBy {
			t.Errorf("%s: turn %s/%s chosen by %s, want %s/%s by %s", c.input, tr.Family, tr.Model, tr.ChosenBy, c.family, c.model, c.chosenBy)
		}
		if c.reason != "" && !HasEvent(e.Events(names[i]), "turn.routed", c.reason) {
			t.Errorf("%s: the timeline does not say why it fell back (%q): %v", c.input, c.reason, e.Events(names[i]))
		}
		// A router call cut off at its deadline may still be billed by the vendor: its cost is
		// unknown, so the run's total is a lower bound; a refused call cost nothing.
		if total := r.Status.Cost.TotalUSD; strings.HasPrefix(total, "at least") != strings.Contains(c.reason, "no answer within") {
			t.Errorf("%s: total %q", c.input, total)
		}
	}
	// A keep-alive run: one routing call per turn, each a journal step; the model never changes
	// within a turn.
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agentruns", `{"metadata":{"name":"chat"},"spec":{"agent":"all","input":"jev task","keepAlive":true}}`, &run); st != 201 {
		t.Fatalf("start keep-alive run: HTTP %d", st)
	}
	e.WaitPhase("chat", 10*time.Second, api.PhaseWaiting)
	e.Do("POST", "/v2/agentruns/chat/messages", `{"payload":"and a follow-up"}`, nil)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && len(e.GetRun("chat").Status.Turns) < 2 {
		time.Sleep(50 * time.Millisecond)
	}
	r := e.WaitPhase("chat", 10*time.Second, api.PhaseWaiting)
	var keys []string
	for _, s := range e.Steps("chat") {
		keys = append(keys, s.Key)
	}
	if got := strings.Join(keys, " "); !regexp.MustCompile(`^t0/route t0/model m0 t1/route t1/model$`).MatchString(got) {
		t.Errorf("steps = %s", got)
	}
	if len(r.Status.Turns) != 2 || r.Status.Turns[0].ChosenBy != "jev" || r.Status.Turns[1].ChosenBy != "fallback" {
		t.Errorf("turns = %+v", r.Status.Turns)
	}
}
