package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/model/fake"
)

// agentCalls counts the model calls of agent conversations (routing calls left out).
func agentCalls(m *fake.Server) int {
	n := 0
	for _, c := range m.Calls() {
		if !strings.HasPrefix(c.FirstUser, fake.RouterPrefix) {
			n++
		}
	}
	return n
}

// routerCalls counts the routing calls the model server answered or refused.
func routerCalls(m *fake.Server) int {
	n := 0
	for _, c := range m.Calls() {
		if strings.HasPrefix(c.FirstUser, fake.RouterPrefix) {
			n++
		}
	}
	return n
}

type creditsBody struct {
	Enforced        bool   `json:"enforced"`
	BalanceUSD      string `json:"balanceUSD"`
	AddedUSD        string `json:"addedUSD"`
	ChargedUSD      string `json:"chargedUSD"`
	ReservedUSD     string `json:"reservedUSD"`
	AvailableUSD    string `json:"availableUSD"`
	UnpricedCharges int64  `json:"unpricedCharges"`
	Entries         []struct {
		Kind      string `json:"kind"`
		AmountUSD string `json:"amountUSD"`
		Run       string `json:"run"`
		StepKey   string `json:"stepKey"`
	} `json:"entries"`
	Reservations []struct {
		Run       string `json:"run"`
		StepKey   string `json:"stepKey"`
		Attempt   int    `json:"attempt"`
		AmountUSD string `json:"amountUSD"`
	} `json:"reservations"`
}

func (e *env) credits() creditsBody {
	e.t.Helper()
	var c creditsBody
	if st := e.do("GET", "/v2/credits?limit=0", nil, &c); st != 200 {
		e.t.Fatalf("GET /v2/credits: HTTP %d", st)
	}
	return c
}

func usd(t *testing.T, s string) cost.Micros {
	t.Helper()
	m, err := cost.ParseUSD(s)
	if err != nil {
		t.Fatalf("amount %q: %v", s, err)
	}
	return m
}

// checkLedger asserts the ledger is consistent: balance = adds − charges, every charge of a step
// recorded once, no reservation left, and each finished run's charges sum to its status total.
func checkLedger(t *testing.T, e *env, runs ...string) creditsBody {
	t.Helper()
	c := e.credits()
	var added, charged cost.Micros
	seen := map[string]bool{}
	perRun := map[string]cost.Micros{}
	for _, en := range c.Entries {
		switch en.Kind {
		case "add":
			added += usd(t, en.AmountUSD)
		case "charge":
			k := en.Run + " " + en.StepKey
			if seen[k] {
				t.Errorf("step %s charged twice", k)
			}
			seen[k] = true
			if en.AmountUSD != "unknown" {
				charged += usd(t, en.AmountUSD)
				perRun[en.Run] += usd(t, en.AmountUSD)
			}
		}
	}
	if c.UnpricedCharges == 0 {
		if got := usd(t, c.BalanceUSD); got != added-charged {
			t.Errorf("balance $%s, but adds $%s − charges $%s = $%s", c.BalanceUSD, added, charged, added-charged)
		}
	}
	if len(c.Reservations) != 0 || c.ReservedUSD != "0.00" {
		t.Errorf("reservations left after the runs ended: %+v", c.Reservations)
	}
	for _, name := range runs {
		r := e.getRun(name)
		if r.Status.Cost == nil || usd(t, r.Status.Cost.TotalUSD) != perRun[name] {
			t.Errorf("run %s: status total %+v, ledger charges $%s", name, r.Status.Cost, perRun[name])
		}
	}
	return c
}

// Exact arithmetic, end to end: a routed turn on haiku with every kind of token, billed from
// credits at cost / 0.875, each call rounded up once to the micro-dollar.
//
// haiku (claude-haiku-4-5), per million tokens: input $1, output $5, cache write 5m $1.25,
// 1h $2, cache read $0.10.
//   - routing call: 300 in, 20 out = 300 + 100 = 400 µ$; billed 400 × 8/7 = 457.14… → 458 µ$
//   - model call 1: 1000 in = 1000; 200 out = 1000; 400 cache writes (100 of them 1h):
//     300 × 1.25 = 375, 100 × 2 = 200; 2000 cache reads × 0.10 = 200 → 2775 µ$;
//     billed 2775 × 8/7 = 3171.43… → 3172 µ$
//   - model call 2: 500 in + 100 out = 500 + 500 = 1000 µ$; billed 1142.86… → 1143 µ$
//
// Billed: 458 + 3172 + 1143 = 4773 µ$ ($0.004773); list price 400 + 2775 + 1000 = 4175 µ$.
const exactScript = `
entries:
  - name: route-price
    match: "Route this request: Price check"
    turns:
      - text: '{"family": "haiku", "confidence": 0.9}'
        usage: {input_tokens: 300, output_tokens: 20}
  - name: price
    match: "Price check"
    turns:
      - tool_calls:
          - name: ls
            input: {path: "."}
        usage: {input_tokens: 1000, output_tokens: 200, cache_creation_input_tokens: 400, cache_creation_1h_input_tokens: 100, cache_read_input_tokens: 2000}
      - text: "All priced."
        usage: {input_tokens: 500, output_tokens: 100}
`

func TestMoneyExactCost(t *testing.T) {
	t.Parallel()
	e := newEnv(t, exactScript)
	e.start()
	e.mustCLI(0, "credits", "add", "1.00")
	if st := e.do("PUT", "/v2/agents/pricer", `{"metadata":{"name":"pricer"},"spec":{"model":{"access":"Nodus"},"tools":["ls"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var run api.AgentRun
	if st := e.do("POST", "/v2/agents/pricer/runs", `{"input":{"content":"Price check, please"}}`, &run); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	r := e.waitPhase(run.Metadata.Name, 15*time.Second, api.PhaseSucceeded, api.PhaseFailed)
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
	cr := checkLedger(t, e, run.Metadata.Name)
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
	out := e.mustCLI(0, "runs", "turns", run.Metadata.Name).stdout
	for _, s := range []string{"claude-haiku-4-5", "haiku", "jev", "1500", "2000", "$0.000458", "$0.004773", "total: $0.004773 of a $1.00 cap"} {
		if !strings.Contains(out, s) {
			t.Errorf("runs turns lacks %q:\n%s", s, out)
		}
	}
	out = e.mustCLI(0, "credits").stdout
	for _, s := range []string{"balance:   $0.995227", "-$0.003172", "+$1.00", "t0/route"} {
		if !strings.Contains(out, s) {
			t.Errorf("credits lacks %q:\n%s", s, out)
		}
	}
	if y := e.mustCLI(0, "get", "agentrun/"+run.Metadata.Name, "-o", "yaml").stdout; !strings.Contains(y, "chosenBy: jev") || !strings.Contains(y, "cacheWrite1hTokens: 100") {
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
	e := newEnv(t, capScript)
	e.start()
	agent := `{"metadata":{"name":"capper"},"spec":{"model":{"access":"Server","families":["sonnet"]},"perRunMaxCostUSD":"0.01"}}`
	if st := e.do("PUT", "/v2/agents/capper", agent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var run api.AgentRun
	if st := e.do("POST", "/v2/agents/capper/runs", `{"input":{"content":"Capped work"}}`, &run); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	name := run.Metadata.Name
	r := e.waitPhase(name, 10*time.Second, api.PhaseWaiting)
	if r.Status.Reason != api.ReasonMaxCostReached || r.Status.Cost == nil || r.Status.Cost.NeededUSD == "" || r.Status.WaitingOn == nil || r.Status.WaitingOn.Kind != "cost" {
		t.Fatalf("run waits %s (%s) cost %+v, want MaxCostReached with neededUSD", r.Status.Reason, r.Status.Message, r.Status.Cost)
	}
	needed := usd(t, r.Status.Cost.NeededUSD)
	spent := usd(t, r.Status.Cost.TotalUSD)
	// The routing call fit; the model call (4096 output tokens of sonnet at least) does not.
	if spent == 0 || needed <= usd(t, "0.01") || needed < spent+cost.Micros(4096*15*8/7) {
		t.Fatalf("spent $%s, needs $%s: not plausible", spent, needed)
	}
	if n := agentCalls(e.model); n != 0 {
		t.Fatalf("the model was called %d times past the cap", n)
	}
	e.mustCLI(8, "runs", "wait", name)
	// Editing the agent does not change the started run.
	if st := e.do("PUT", "/v2/agents/capper", strings.Replace(agent, `"0.01"`, `"5.00"`, 1), nil); st != 200 {
		t.Fatalf("edit agent: HTTP %d", st)
	}
	// Lowering is refused.
	if res := e.mustCLI(1, "runs", "raise-cap", name, "0.005"); !strings.Contains(res.stderr, "CapNotRaised") {
		t.Errorf("lowering the cap: %s", res.stderr)
	}
	// One micro-dollar under what it needs: it parks again, asking for the same.
	e.mustCLI(0, "runs", "raise-cap", name, (needed - 1).String())
	r = e.waitPhase(name, 10*time.Second, api.PhaseWaiting)
	if r.Status.Reason != api.ReasonMaxCostReached || r.Status.Cost.NeededUSD != needed.String() || r.Status.Cost.LimitUSD != (needed-1).String() {
		t.Fatalf("one micro-dollar short: %s, cost %+v; want MaxCostReached needing %s", r.Status.Reason, r.Status.Cost, needed)
	}
	if n := agentCalls(e.model); n != 0 {
		t.Fatalf("the model was called %d times past the cap", n)
	}
	// Exactly what it needs: it goes on by itself.
	e.mustCLI(0, "runs", "raise-cap", name, needed.String())
	r = e.waitPhase(name, 10*time.Second, api.PhaseSucceeded)
	if r.Status.Cost.LimitUSD != needed.String() || usd(t, r.Status.Cost.TotalUSD) > needed {
		t.Errorf("finished with cost %+v, cap %s", r.Status.Cost, needed)
	}
	if routerCalls(e.model) != 1 {
		t.Errorf("routing calls = %d, want 1 (a recorded decision is replayed, never asked again)", routerCalls(e.model))
	}
	if !hasEvent(e.events(name), "run.cap_raised", needed.String()) {
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
	e := newEnv(t, creditsScript)
	e.start()
	// Enough for the routing call's worst case, not for the model call's (4096 output tokens of
	// haiku: $0.02 at least).
	e.mustCLI(0, "credits", "add", "0.01")
	if st := e.do("PUT", "/v2/agents/spender", `{"metadata":{"name":"spender"},"spec":{"model":{"access":"Nodus"}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var run api.AgentRun
	if st := e.do("POST", "/v2/agents/spender/runs", `{"input":{"content":"Spend credits"}}`, &run); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	name := run.Metadata.Name
	r := e.waitPhase(name, 10*time.Second, api.PhaseWaiting)
	if r.Status.Reason != api.ReasonCredits || r.Status.WaitingOn == nil || r.Status.WaitingOn.Kind != "credits" || r.Status.Cost.NeededUSD == "" {
		t.Fatalf("run waits %s: %s (cost %+v), want Credits", r.Status.Reason, r.Status.Message, r.Status.Cost)
	}
	if agentCalls(e.model) != 0 {
		t.Fatal("a model call was made without credits")
	}
	e.mustCLI(8, "runs", "wait", name)
	c := e.credits()
	if len(c.Reservations) != 0 {
		t.Errorf("a waiting run holds credits: %+v", c.Reservations)
	}
	// The least it asks for is enough.
	e.mustCLI(0, "credits", "add", r.Status.Cost.NeededUSD)
	r = e.waitPhase(name, 10*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("after the refill: %s/%s %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	// Routing: 200 + 50 = 250 µ$ → 286; model: 1000 + 500 = 1500 µ$ → 1715 (× 8/7, rounded up).
	if r.Status.Cost.TotalUSD != "0.002001" {
		t.Errorf("total = %s, want 0.002001", r.Status.Cost.TotalUSD)
	}
	checkLedger(t, e, name)
}

const unpricedScript = `
entries:
  - name: mystery
    match: "Mystery"
    turns:
      - text: "answered by a model nobody priced"
        usage: {input_tokens: 100, output_tokens: 10}
`

// A model the price table does not know: refused at start when capped, unless the agent allows
// it; then its cost reads "unknown", never $0, and the credits say so too.
func TestMoneyUnpricedModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, unpricedScript)
	e.start()
	e.mustCLI(0, "credits", "add", "1")
	agent := `{"metadata":{"name":"mystery"},"spec":{"model":{"access":"Server","provider":"anthropic","name":"mystery-model-7"}}}`
	if st := e.do("PUT", "/v2/agents/mystery", agent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var apiErr api.Error
	if st := e.do("POST", "/v2/agents/mystery/runs", `{"input":{"content":"Mystery"}}`, &apiErr); st != 422 || apiErr.Code != "UnpricedModel" || apiErr.Field != "spec.model.name" {
		t.Fatalf("capped run on an unpriced model: HTTP %d %+v, want 422 UnpricedModel", st, apiErr)
	}
	if !strings.Contains(apiErr.Message, "allowUnpricedModels") {
		t.Errorf("the error does not say how to opt in: %s", apiErr.Message)
	}
	if st := e.do("PUT", "/v2/agents/mystery", strings.Replace(agent, `"spec":{`, `"spec":{"allowUnpricedModels":true,`, 1), nil); st != 200 {
		t.Fatalf("update agent: HTTP %d", st)
	}
	var run api.AgentRun
	if st := e.do("POST", "/v2/agents/mystery/runs", `{"input":{"content":"Mystery"}}`, &run); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	r := e.waitPhase(run.Metadata.Name, 10*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run %s: %s", r.Status.Phase, r.Status.Message)
	}
	if r.Status.Cost.TotalUSD != "unknown" || r.Status.Turns[0].CostUSD != "unknown" || r.Status.Turns[0].ChosenBy != "agent" {
		t.Errorf("cost %+v turn %+v, want unknown", r.Status.Cost, r.Status.Turns[0])
	}
	c := e.credits()
	if c.UnpricedCharges != 1 || c.ChargedUSD != "unknown" || !strings.HasPrefix(c.BalanceUSD, "at most ") || len(c.Reservations) != 0 {
		t.Errorf("credits = %+v, want one unknown charge and the balance as an upper bound", c)
	}
	if out := e.mustCLI(0, "runs", "turns", run.Metadata.Name).stdout; !strings.Contains(out, "unknown") || strings.Contains(out, "$0.00") {
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
	e := newEnv(t, script)
	e.start()
	mk := func(name, families string) {
		body := fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"model":{"access":"Nodus","families":%s}}}`, name, families)
		if st := e.do("PUT", "/v2/agents/"+name, body, nil); st != 201 {
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
		{"cheap", "garbled task", "sonnet", "claude-sonnet-4-5", "fallback", "not the JSON"},
		{"ends", "unscripted task for the ends", "haiku", "claude-haiku-4-5", "fallback", "router call failed"},
		{"all", "slow router task", "sonnet", "claude-sonnet-4-5", "fallback", "no answer within 10s"},
	}
	names := make([]string, len(cases))
	for i, c := range cases {
		var run api.AgentRun
		if st := e.do("POST", "/v2/agents/"+c.agent+"/runs", fmt.Sprintf(`{"input":{"content":%q}}`, c.input), &run); st != 201 {
			t.Fatalf("start run: HTTP %d", st)
		}
		names[i] = run.Metadata.Name
	}
	for i, c := range cases {
		r := e.waitPhase(names[i], 30*time.Second, api.PhaseSucceeded, api.PhaseFailed)
		if r.Status.Phase != api.PhaseSucceeded || len(r.Status.Turns) != 1 {
			t.Errorf("%s: %s %s turns %+v", c.input, r.Status.Phase, r.Status.Message, r.Status.Turns)
			continue
		}
		tr := r.Status.Turns[0]
		if tr.Family != c.family || tr.Model != c.model || tr.ChosenBy != c.chosenBy {
			t.Errorf("%s: turn %s/%s chosen by %s, want %s/%s by %s", c.input, tr.Family, tr.Model, tr.ChosenBy, c.family, c.model, c.chosenBy)
		}
		if c.reason != "" && !hasEvent(e.events(names[i]), "turn.routed", c.reason) {
			t.Errorf("%s: the timeline does not say why it fell back (%q): %v", c.input, c.reason, e.events(names[i]))
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
	if st := e.do("POST", "/v2/agentruns", `{"metadata":{"name":"chat"},"spec":{"agent":"all","input":"jev task","keepAlive":true}}`, &run); st != 201 {
		t.Fatalf("start keep-alive run: HTTP %d", st)
	}
	e.waitPhase("chat", 10*time.Second, api.PhaseWaiting)
	e.do("POST", "/v2/agentruns/chat/messages", `{"payload":"and a follow-up"}`, nil)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && len(e.getRun("chat").Status.Turns) < 2 {
		time.Sleep(50 * time.Millisecond)
	}
	r := e.waitPhase("chat", 10*time.Second, api.PhaseWaiting)
	var keys []string
	for _, s := range e.steps("chat") {
		keys = append(keys, s.Key)
	}
	if got := strings.Join(keys, " "); !regexp.MustCompile(`^t0/route t0/model m0 t1/route t1/model$`).MatchString(got) {
		t.Errorf("steps = %s", got)
	}
	if len(r.Status.Turns) != 2 || r.Status.Turns[0].ChosenBy != "jev" || r.Status.Turns[1].ChosenBy != "fallback" {
		t.Errorf("turns = %+v", r.Status.Turns)
	}
}
