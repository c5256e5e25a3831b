package cluster

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
)

// A crash in the middle of a billed call leaves the ledger consistent: the reservation made before
// the call is found and replaced on replay (never left dangling), each step is charged once (the
// charge commits with the step's completion), and balance = adds − charges.
func TestMoneyCrashMidCall(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pause string
		// held: a reservation for t0/model is held while the process is paused.
		held bool
	}{
		{"before-intent:t0/model", true},
		{"after-intent:t0/model", true},
		{"after-result:t0/model", false},
		// The routing decision: recorded, it is replayed; cut off, it is asked again (its first
		// attempt never reached the model server) and billed once.
		{"after-intent:t0/route", false},
		{"after-result:t0/route", false},
	}
	for _, c := range cases {
		t.Run(c.pause, func(t *testing.T) {
			t.Parallel()
			e := NewEnv(t, ExactScript)
			e.Start("AGENTRUN_DEV_PAUSE_AT=" + c.pause)
			e.MustCLI(0, "credits", "add", "1")
			if st := e.Do("PUT", "/v2/agents/pricer", `{"metadata":{"name":"pricer"},"spec":{"model":{"access":"Nodus"},"tools":["ls"]}}`, nil); st != 201 {
				t.Fatalf("create agent: HTTP %d", st)
			}
			var run api.AgentRun
			if st := e.Do("POST", "/v2/agents/pricer/runs", `{"input":{"content":"Price check"}}`, &run); st != 201 {
				t.Fatalf("start run: HTTP %d", st)
			}
			name := run.Metadata.Name
			e.WaitStderr("AGENTRUN_DEV_PAUSED "+strings.Replace(c.pause, ":", " ", 1), 15*time.Second)
			cr := e.Credits()
			held := false
			for _, r := range cr.Reservations {
				if r.Run == name && r.StepKey == "t0/model" && r.Attempt == 1 {
					held = true
				}
			}
			if held != c.held {
				t.Fatalf("paused at %s: reservation for t0/model held = %v, want %v (%+v)", c.pause, held, c.held, cr.Reservations)
			}
			e.Kill()
			e.Start()
			r := e.WaitPhase(name, 15*time.Second, api.PhaseSucceeded, api.PhaseFailed)
			if r.Status.Phase != api.PhaseSucceeded {
				t.Fatalf("after restart: %s %s", r.Status.Phase, r.Status.Message)
			}
			// The interrupted attempt returned no usage and is not billed; every completed call is
			// billed once: the same total as a run with no crash.
			if r.Status.Cost.TotalUSD != "0.004773" {
				t.Errorf("total after the crash = %s, want 0.004773", r.Status.Cost.TotalUSD)
			}
			c := CheckLedger(t, e, name)
			if c.BalanceUSD != "0.995227" {
				t.Errorf("balance = %s, want 0.995227", c.BalanceUSD)
			}
			if n := RouterCalls(e.Model); n != 1 {
				t.Errorf("routing calls = %d, want 1", n)
			}
		})
	}
}

// Bring your own key: the key lives in a sealed Secret only a signed-in person can write; the run
// uses it (the server has no key of its own here), is metered at list price, billed nothing and
// has no cap.
func TestMoneyBYOK(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, `
entries:
  - name: own
    match: "Own key"
    turns:
      - text: "paid by you"
        usage: {input_tokens: 1000, output_tokens: 500}
`)
	e.Start("ANTHROPIC_API_KEY=")
	const key = "sk-ant-test-do-not-leak-123"
	var apiErr api.Error
	if st := e.Do("PUT", "/v2/secrets/anthropic-key", `{"data":{"ANTHROPIC_API_KEY":"`+key+`"}}`, &apiErr); st != 403 || apiErr.Code != "PersonRequired" {
		t.Fatalf("the API token wrote a secret: HTTP %d %+v", st, apiErr)
	}
	if res := e.CLI(e.Dir, "secrets", "set", "anthropic-key", "ANTHROPIC_API_KEY=-"); res.Code != 1 || !strings.Contains(res.Stderr, "PersonRequired") {
		t.Errorf("the CLI with the API token set a secret: exit %d %s", res.Code, res.Stderr)
	}
	session := e.PersonSession()
	if st := e.DoAs(session, "PUT", "/v2/secrets/anthropic-key", `{"data":{"ANTHROPIC_API_KEY":"`+key+`"}}`, nil); st != 200 {
		t.Fatalf("a person writing a secret: HTTP %d", st)
	}
	var list struct {
		Items []struct {
			Name string   `json:"name"`
			Keys []string `json:"keys"`
		} `json:"items"`
	}
	if st := e.Do("GET", "/v2/secrets", nil, &list); st != 200 || len(list.Items) != 1 || list.Items[0].Keys[0] != "ANTHROPIC_API_KEY" {
		t.Fatalf("GET /v2/secrets: HTTP %d %+v", st, list)
	}
	e.MustCLI(0, "credits", "add", "1")
	// A BYOK agent naming a secret nobody set is refused at run start.
	if st := e.Do("PUT", "/v2/agents/nokey", `{"metadata":{"name":"nokey"},"spec":{"model":{"access":"BYOK","name":"claude-sonnet-4-5","apiKeySecret":"missing"}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	if st := e.Do("POST", "/v2/agents/nokey/runs", `{"input":{"content":"Own key"}}`, &apiErr); st != 422 || apiErr.Code != "SecretNotFound" || apiErr.Field != "spec.model.apiKeySecret" {
		t.Errorf("run on a missing secret: HTTP %d %+v", st, apiErr)
	}
	// The seed's YAML: access BYOK with a model name and the secret.
	if st := e.Do("PUT", "/v2/agents/mine", `{"metadata":{"name":"mine"},"spec":{"model":{"access":"BYOK","name":"claude-sonnet-5-5","apiKeySecret":"anthropic-key"}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	if st := e.Do("PUT", "/v2/agents/mine", `{"metadata":{"name":"mine"},"spec":{"model":{"access":"BYOK","name":"claude-sonnet-4-5","apiKeySecret":"anthropic-key"}}}`, nil); st != 200 {
		t.Fatalf("update agent: HTTP %d", st)
	}
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/mine/runs", `{"input":{"content":"Own key"}}`, &run); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	r := e.WaitPhase(run.Metadata.Name, 10*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("BYOK run: %s %s", r.Status.Phase, r.Status.Message)
	}
	// 1000 × $3/M + 500 × $15/M = 3000 + 7500 µ$: metered at list price, no markup, no cap.
	c := r.Status.Cost
	if c.TotalUSD != "0.0105" || c.VendorUSD != "0.0105" || c.Billing != "none" || c.LimitUSD != "" {
		t.Errorf("cost = %+v, want 0.0105 at list price, billing none, no cap", c)
	}
	if tr := r.Status.Turns; len(tr) != 1 || tr[0].ChosenBy != "agent" || tr[0].Model != "claude-sonnet-4-5" || tr[0].RouteCostUSD != "" {
		t.Errorf("turns = %+v", tr)
	}
	if steps := e.Steps(run.Metadata.Name); len(steps) != 1 || steps[0].Key != "t0/model" {
		t.Errorf("steps = %+v: a BYOK run is not routed", steps)
	}
	cr := e.Credits()
	if cr.BalanceUSD != "1.00" || len(cr.Entries) != 1 {
		t.Errorf("credits after a BYOK run: %+v (nothing may be charged)", cr)
	}
	// The key is sealed at rest.
	db, _ := os.ReadFile(filepath.Join(e.Dir, "agentrun.db"))
	wal, _ := os.ReadFile(filepath.Join(e.Dir, "agentrun.db-wal"))
	if bytes.Contains(db, []byte(key)) || bytes.Contains(wal, []byte(key)) {
		t.Error("the key is stored in clear")
	}
	if fi, err := os.Stat(filepath.Join(e.Dir, "seal.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("seal.key: %v %v", fi, err)
	}
}

// The rules router decides without a model call, for free.
func TestRouterRules(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, `
entries:
  - name: any
    match: "*"
    turns:
      - text: "ok"
`)
	e.Start("AGENTRUN_ROUTER=rules")
	if st := e.Do("PUT", "/v2/agents/r", `{"metadata":{"name":"r"},"spec":{"model":{"access":"Nodus"}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	long := strings.Repeat("Refactor this function and debug the stack trace. ", 100)
	for input, fam := range map[string]string{"What is 2+2?": "haiku", long: "opus"} {
		var run api.AgentRun
		b, _ := json.Marshal(map[string]any{"input": map[string]string{"content": input}})
		if st := e.Do("POST", "/v2/agents/r/runs", string(b), &run); st != 201 {
			t.Fatalf("start run: HTTP %d", st)
		}
		r := e.WaitPhase(run.Metadata.Name, 10*time.Second, api.PhaseSucceeded, api.PhaseFailed)
		if len(r.Status.Turns) != 1 || r.Status.Turns[0].Family != fam || r.Status.Turns[0].ChosenBy != "rules" || r.Status.Turns[0].RouteCostUSD != "0.00" {
			t.Errorf("%.30s…: turns %+v, want %s by rules at no cost", input, r.Status.Turns, fam)
		}
	}
	if n := RouterCalls(e.Model); n != 0 {
		t.Errorf("the rules router made %d model calls", n)
	}
}

// Runs sharing credits never overspend them: with room for only a few calls' worst cases at once,
// the others wait with Credits and go on as held credits come back; at no time do charges plus
// reservations exceed what was added, and in the end every run is charged exactly its total.
func TestMoneySharedCreditsNeverOverspend(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, `
entries:
  - name: route
    match: "Route this request"
    turns:
      - text: '{"family": "haiku", "confidence": 0.8}'
        usage: {input_tokens: 200, output_tokens: 10}
        latency: 200ms
  - name: work
    match: "Shared"
    turns:
      - text: "done"
        usage: {input_tokens: 1000, output_tokens: 100}
        latency: 300ms
`)
	e.Start()
	// Room for about two calls' worst cases at once. A worst case bounds the input by the request's
	// size, tool definitions included: the agent gets the server's sandbox, and with it bash and
	// the file tools (0.03 fit the sandbox's bash tools alone; with the file tools the last runs
	// could never fit what was left).
	e.MustCLI(0, "credits", "add", "0.04")
	if st := e.Do("PUT", "/v2/agents/sharer", `{"metadata":{"name":"sharer"},"spec":{"model":{"access":"Nodus","families":["haiku"]},"maxTokens":1000}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var names []string
	for i := 0; i < 8; i++ {
		var run api.AgentRun
		if st := e.Do("POST", "/v2/agents/sharer/runs", `{"input":{"content":"Shared work"}}`, &run); st != 201 {
			t.Fatalf("start run: HTTP %d", st)
		}
		names = append(names, run.Metadata.Name)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		c := e.Credits()
		if a := USD(t, strings.TrimPrefix(c.AvailableUSD, "-")); strings.HasPrefix(c.AvailableUSD, "-") && a > 0 {
			t.Fatalf("credits overspent: %+v", c)
		}
		done := 0
		for _, n := range names {
			if api.Finished(e.GetRun(n).Status.Phase) {
				done++
			}
		}
		if done == len(names) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs finished", done, len(names))
		}
		time.Sleep(100 * time.Millisecond)
	}
	waited := 0
	for _, n := range names {
		if r := e.GetRun(n); r.Status.Phase != api.PhaseSucceeded {
			t.Errorf("%s: %s %s", n, r.Status.Phase, r.Status.Message)
		}
		if HasEvent(e.Events(n), "run.waiting", "out of credits") {
			waited++
		}
	}
	if waited == 0 {
		t.Error("no run ever waited for credits: the test did not contend")
	}
	t.Logf("%d of %d runs waited for credits held by others", waited, len(names))
	c := CheckLedger(t, e, names...)
	// Each run: routing 200 + 50 = 250 µ$ → 286; model 1000 + 500 = 1500 µ$ → 1715.
	if c.ChargedUSD != cost.Micros(8*(286+1715)).String() {
		t.Errorf("charged %s, want %s", c.ChargedUSD, cost.Micros(8*(286+1715)))
	}
}

// --prices FILE replaces the embedded prices it names; a bad file stops the server at start.
func TestMoneyPricesOverride(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, `
entries:
  - name: route
    match: "Route this request"
    turns:
      - text: '{"family": "fable", "confidence": 0.5}'
        usage: {input_tokens: 100, output_tokens: 10}
  - name: work
    match: "Priced by file"
    turns:
      - text: "done"
        usage: {input_tokens: 1000, output_tokens: 100}
`)
	bad := WriteFile(t, e.Dir, "bad-prices.json", `{"version": "x", "models": {"m": {"input": -1}}}`)
	cmd := exec.Command(BinPath, "serve", "--listen", "127.0.0.1:0", "--prices", bad)
	cmd.Env = e.BaseEnv()
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "negative price") {
		t.Errorf("serve with a bad price table: %v\n%s", err, out)
	}
	// fable → a model of the file's own, at $7 / $9 per million; haiku (the router) at $2 input.
	prices := WriteFile(t, e.Dir, "prices.json", `{"version": "test-2026-12", "families": {"fable": "house-model-1"},
	  "models": {"house-model-1": {"input": 7000000, "output": 9000000, "cacheWrite5m": 7000000, "cacheWrite1h": 7000000, "cacheRead": 700000},
	             "claude-haiku-4-5": {"input": 2000000, "output": 10000000, "cacheWrite5m": 2500000, "cacheWrite1h": 4000000, "cacheRead": 200000}}}`)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--prices", prices})
	var tab struct {
		Version string `json:"version"`
	}
	if e.Do("GET", "/v2/prices", nil, &tab); tab.Version != "test-2026-12" {
		t.Errorf("prices version = %q", tab.Version)
	}
	if st := e.Do("PUT", "/v2/agents/filed", `{"metadata":{"name":"filed"},"spec":{"model":{"access":"Nodus"}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/filed/runs", `{"input":{"content":"Priced by file"}}`, &run); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	r := e.WaitPhase(run.Metadata.Name, 10*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	// Routing: 100 × $2 + 10 × $10 = 300 µ$ → 342.86… → 343 billed. Model: 1000 × $7 + 100 × $9 =
	// 7900 µ$ → 9028.57… → 9029 billed. Total 9372; list price 8200.
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Turns[0].Model != "house-model-1" || r.Status.Cost.TotalUSD != "0.009372" || r.Status.Cost.VendorUSD != "0.0082" {
		t.Errorf("run %s, turns %+v, cost %+v; want house-model-1, total 0.009372, vendor 0.0082", r.Status.Phase, r.Status.Turns, r.Status.Cost)
	}
}

// A model call on the user's own key that a crash cut off may have been billed by the vendor:
// it is not repeated silently; the run parks in NeedsResolution on it.
func TestMoneyBYOKCrashNeedsResolution(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, `
entries:
  - name: own
    match: "Own key"
    turns:
      - text: "paid by you"
`)
	e.Start("AGENTRUN_DEV_PAUSE_AT=after-intent:t0/model")
	session := e.PersonSession()
	if st := e.DoAs(session, "PUT", "/v2/secrets/k", `{"data":{"ANTHROPIC_API_KEY":"sk-test"}}`, nil); st != 200 {
		t.Fatalf("set secret: HTTP %d", st)
	}
	if st := e.Do("PUT", "/v2/agents/mine", `{"metadata":{"name":"mine"},"spec":{"model":{"access":"BYOK","name":"claude-sonnet-4-5","apiKeySecret":"k"}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/mine/runs", `{"input":{"content":"Own key"}}`, &run); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	e.WaitStderr("AGENTRUN_DEV_PAUSED after-intent t0/model", 15*time.Second)
	e.Kill()
	e.Start()
	r := e.WaitPhase(run.Metadata.Name, 15*time.Second, api.PhaseNeedsResolution, api.PhaseSucceeded)
	if r.Status.Phase != api.PhaseNeedsResolution || r.Status.WaitingOn == nil || r.Status.WaitingOn.StepKey != "t0/model" {
		t.Fatalf("after the crash: %s waiting on %+v", r.Status.Phase, r.Status.WaitingOn)
	}
	if AgentCalls(e.Model) != 0 {
		t.Error("the interrupted call on the user's key was repeated without a person")
	}
	e.RetryAsPerson(run.Metadata.Name)
	if r := e.WaitPhase(run.Metadata.Name, 15*time.Second, api.PhaseSucceeded); r.Status.Cost.Billing != "none" {
		t.Errorf("cost %+v", r.Status.Cost)
	}
}
