package e2etest

import (
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/model/fake"
)

// AgentCalls counts the model calls of agent conversations (routing calls left out).
func AgentCalls(m *fake.Server) int {
	n := 0
	for _, c := range m.Calls() {
		if !strings.HasPrefix(c.FirstUser, fake.RouterPrefix) {
			n++
		}
	}
	return n
}

// RouterCalls counts the routing calls the model server answered or refused.
func RouterCalls(m *fake.Server) int {
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

func (e *Env) Credits() creditsBody {
	e.T.Helper()
	var c creditsBody
	if st := e.Do("GET", "/v2/credits?limit=0", nil, &c); st != 200 {
		e.T.Fatalf("GET /v2/credits: HTTP %d", st)
	}
	return c
}

func USD(t *testing.T, s string) cost.Micros {
	t.Helper()
	m, err := cost.ParseUSD(s)
	if err != nil {
		t.Fatalf("amount %q: %v", s, err)
	}
	return m
}

// CheckLedger asserts the ledger is consistent: balance = adds − charges, every charge of a step
// recorded once, no reservation left, and each finished run's charges sum to its status total.
func CheckLedger(t *testing.T, e *Env, runs ...string) creditsBody {
	t.Helper()
	c := e.Credits()
	var added, charged cost.Micros
	seen := map[string]bool{}
	perRun := map[string]cost.Micros{}
	for _, en := range c.Entries {
		switch en.Kind {
		case "add":
			added += USD(t, en.AmountUSD)
		case "charge":
			k := en.Run + " " + en.StepKey
			if seen[k] {
				t.Errorf("step %s charged twice", k)
			}
			seen[k] = true
			if en.AmountUSD != "unknown" {
				charged += USD(t, en.AmountUSD)
				perRun[en.Run] += USD(t, en.AmountUSD)
			}
		}
	}
	if c.UnpricedCharges == 0 {
		if got := USD(t, c.BalanceUSD); got != added-charged {
			t.Errorf("balance $%s, but adds $%s − charges $%s = $%s", c.BalanceUSD, added, charged, added-charged)
		}
	}
	if len(c.Reservations) != 0 || c.ReservedUSD != "0.00" {
		t.Errorf("reservations left after the runs ended: %+v", c.Reservations)
	}
	for _, name := range runs {
		r := e.GetRun(name)
		if r.Status.Cost == nil || USD(t, r.Status.Cost.TotalUSD) != perRun[name] {
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
const ExactScript = `
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

const UnpricedScript = `
entries:
  - name: mystery
    match: "Mystery"
    turns:
      - text: "answered by a model nobody priced"
        usage: {input_tokens: 100, output_tokens: 10}
`
