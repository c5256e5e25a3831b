package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// printedSetupCode reads the one-time setup code the server printed at start.
func printedSetupCode(e *Env) string {
	e.T.Helper()
	m := regexp.MustCompile(`setup code: ([0-9A-F]+)`).FindStringSubmatch(e.Stderr.String())
	if m == nil {
		e.T.Fatalf("the server printed no setup code:\n%s", e.Stderr.String())
	}
	return m[1]
}

const textScript = `
entries:
  - name: rules
    match: "Plain rules question"
    turns:
      - text: "Answered on haiku."
        usage: {input_tokens: 100, output_tokens: 10}
  - name: bare
    match: "Answer without a newline"
    turns:
      - text: "no newline at the end"
  - name: ended
    match: "Answer with a newline"
    turns:
      - text: "ends with one\n"
  - name: asks
    match: "Ask about the file"
    turns:
      - text: "I will write the plan and record the count."
        tool_calls:
          - name: write
            input: {path: "plan.md", content: "plan"}
          - name: dev_count
            input: {label: "echo x > /workspace/asked.txt && <b>"}
      - text: "done: {{last_tool_result}}"
`

// With --router rules, a priced run's totals are plain figures: the rules decision made no call and
// is a known zero, billed and at list price. The price table is GET /v2/prices's own output, edited
// and loaded with --prices (models as a list).
func TestRulesRouterTotalsAndPricesFromGET(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, textScript)
	e.Start()
	var prices map[string]any
	if st := e.Do("GET", "/v2/prices", nil, &prices); st != 200 {
		t.Fatalf("GET /v2/prices: HTTP %d", st)
	}
	models, ok := prices["models"].([]any)
	if !ok || len(models) == 0 {
		t.Fatalf("GET /v2/prices models = %T", prices["models"])
	}
	edited := false
	for _, m := range models {
		if m := m.(map[string]any); m["model"] == "claude-haiku-4-5" {
			m["input"], m["output"] = 2_000_000, 10_000_000 // twice the list price
			edited = true
		}
	}
	if !edited {
		t.Fatalf("no claude-haiku-4-5 in %v", models)
	}
	prices["version"] = "edited-from-get"
	b, _ := json.MarshalIndent(prices, "", "  ")
	file := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	e.Kill()
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug", "--router", "rules", "--prices", file})
	var got struct {
		Version string `json:"version"`
	}
	if e.Do("GET", "/v2/prices", nil, &got); got.Version != "edited-from-get" {
		t.Fatalf("prices version %q after --prices %s", got.Version, file)
	}
	if st := e.Do("PUT", "/v2/agents/ruled", `{"metadata":{"name":"ruled"},"spec":{"model":{"access":"Server"}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"metadata":{"name":"ruled-1"},"spec":{"agent":"ruled","input":"Plain rules question"}}`, nil)
	r := e.WaitPhase("ruled-1", 15*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run %s/%s: %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	// haiku at the edited price: 100 in × $2 + 10 out × $10 per million = 300 µ$ at list price,
	// billed 300 × 8/7 = 342.86 → 343 µ$; the rules decision adds nothing.
	c := r.Status.Cost
	if c == nil || c.TotalUSD != "0.000343" || c.VendorUSD != "0.0003" {
		t.Errorf("status.cost = %+v, want total 0.000343 and vendor 0.0003 (plain figures)", c)
	}
	if len(r.Status.Turns) != 1 || r.Status.Turns[0].ChosenBy != "rules" || r.Status.Turns[0].RouteCostUSD != "0.00" || r.Status.Turns[0].CostUSD != "0.000343" {
		t.Errorf("turns = %+v", r.Status.Turns)
	}
	out := e.MustCLI(0, "runs", "turns", "ruled-1").Stdout
	if strings.Contains(out, "at least") || !strings.Contains(out, "total: $0.000343") || !strings.Contains(out, "list price $0.0003)") {
		t.Errorf("runs turns:\n%s", out)
	}
	// A bad file is refused at start, naming the entry.
	os.WriteFile(file, []byte(`{"version": "x", "models": [{"model": "a", "input": 1}, {"model": "b", "input": "2"}]}`), 0o644)
	res := e.CLI(e.Dir, "serve", "--listen", "127.0.0.1:0", "--prices", file)
	if res.Code == 0 || !strings.Contains(res.Stdout+res.Stderr, "models[1].input") {
		t.Errorf("serve with a bad price file: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
}

// Money text puts the qualifier first: "at most $X", never "$at most X".
func TestCreditsQualifiedText(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, UnpricedScript)
	e.Start()
	e.MustCLI(0, "credits", "add", "1")
	agent := `{"metadata":{"name":"mystery"},"spec":{"allowUnpricedModels":true,"model":{"access":"Server","provider":"anthropic","name":"mystery-model-7"}}}`
	if st := e.Do("PUT", "/v2/agents/mystery", agent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"metadata":{"name":"m1"},"spec":{"agent":"mystery","input":"Mystery"}}`, nil)
	if r := e.WaitPhase("m1", 10*time.Second, api.PhaseSucceeded, api.PhaseFailed); r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run %s: %s", r.Status.Phase, r.Status.Message)
	}
	out := e.MustCLI(0, "credits").Stdout
	for _, s := range []string{"balance:   at most $1.00", "available: at most $1.00", "charged:   unknown", "-unknown"} {
		if !strings.Contains(out, s) {
			t.Errorf("credits lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "$at") {
		t.Errorf("credits puts the $ before the words:\n%s", out)
	}
}

// `runs answer` ends its output with a newline, adding one only when the answer has none.
func TestAnswerEndsWithANewline(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, textScript)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/plain", `{"metadata":{"name":"plain"},"spec":{"model":{"access":"Server","name":"claude-sonnet-4-5"}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	for name, c := range map[string]struct{ input, want string }{
		"bare":  {"Answer without a newline", "no newline at the end\n"},
		"ended": {"Answer with a newline", "ends with one\n"},
	} {
		e.Do("POST", "/v2/agentruns", `{"metadata":{"name":"`+name+`"},"spec":{"agent":"plain","input":"`+c.input+`"}}`, nil)
		if r := e.WaitPhase(name, 10*time.Second, api.PhaseSucceeded, api.PhaseFailed); r.Status.Phase != api.PhaseSucceeded {
			t.Fatalf("run %s: %s %s", name, r.Status.Phase, r.Status.Message)
		}
		for _, args := range [][]string{{"runs", "answer", name}, {"agentrun", "answer", name}} {
			if out := e.MustCLI(0, args...).Stdout; out != c.want {
				t.Errorf("agentrun %s printed %q, want %q", strings.Join(args, " "), out, c.want)
			}
		}
	}
	// -o lists its formats without an empty one.
	if r := e.CLI(e.Dir, "get", "agentruns", "-o", "xml"); r.Code != 2 || !strings.Contains(r.Stderr, "use one of table, wide, json, yaml, name") {
		t.Errorf("get -o xml: exit %d %q", r.Code, r.Stderr)
	}
}

// Approvals read as written: arguments without HTML escaping (in the table, status.message,
// status.waitingOn.detail and the timeline), the agent's reason for a call a rule denied too, and
// the person's note in its own column. A wrong password says so, not "pass --token".
func TestApprovalsTableText(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, textScript)
	e.Start()
	agent := `{"metadata":{"name":"asker"},"spec":{"tools":["write","dev_count"],
	  "approvals":{"default":"allow","rules":[{"match":"write","action":"deny"},{"match":"dev_count","action":"ask"}]}}}`
	if st := e.Do("PUT", "/v2/agents/asker", agent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"metadata":{"name":"a1"},"spec":{"agent":"asker","input":"Ask about the file"}}`, nil)
	r := e.WaitPhase("a1", 10*time.Second, api.PhaseWaiting)
	const args = `{"label":"echo x > /workspace/asked.txt && <b>"}`
	if w := r.Status.WaitingOn; r.Status.Reason != api.ReasonApproval || w == nil || w.Detail != "dev_count "+args {
		t.Fatalf("waiting %s on %+v", r.Status.Reason, r.Status.WaitingOn)
	}
	if strings.Contains(r.Status.Message, `\u00`) {
		t.Errorf("status.message is escaped: %s", r.Status.Message)
	}
	if !HasEvent(e.Events("a1"), "run.approval", "dev_count "+args) {
		t.Errorf("the timeline does not show the arguments as written: %+v", e.Events("a1"))
	}
	var list struct {
		Items []struct {
			ID                      int64
			Tool, State, Reason, By string
		}
	}
	if err := json.Unmarshal([]byte(e.MustCLI(0, "runs", "approvals", "a1", "-o", "json").Stdout), &list); err != nil || len(list.Items) != 2 {
		t.Fatalf("approvals: %v %+v", err, list)
	}
	denied, asked := list.Items[0], list.Items[1]
	if denied.Tool != "write" || denied.State != "denied" || denied.Reason != "I will write the plan and record the count." {
		t.Errorf("the call a rule denied: %+v (its reason must be recorded)", denied)
	}
	// A person signs in; a wrong password names the password.
	code := printedSetupCode(e)
	if r := e.CLIIn(e.Dir, "correct horse battery\n", "login", "--setup-code", code, "--password-stdin"); r.Code != 0 {
		t.Fatalf("login: exit %d %q", r.Code, r.Stderr)
	}
	if r := e.CLIIn(e.Dir, "not the password\n", "login", "--password-stdin"); r.Code != 1 || strings.Contains(r.Stderr, "AGENTRUN_TOKEN") || !strings.Contains(r.Stderr, "the user or the password is wrong") {
		t.Errorf("wrong password: exit %d %q", r.Code, r.Stderr)
	}
	if r := e.CLIIn(e.Dir, "correct horse battery\n", "login", "--password-stdin"); r.Code != 0 {
		t.Fatalf("login again: exit %d %q", r.Code, r.Stderr)
	}
	e.MustCLI(0, "runs", "deny", "a1", strconv.FormatInt(asked.ID, 10), "--reason", "not on main")
	if r := e.WaitPhase("a1", 10*time.Second, api.PhaseSucceeded, api.PhaseFailed); r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run %s: %s", r.Status.Phase, r.Status.Message)
	}
	out := e.MustCLI(0, "runs", "approvals", "a1").Stdout
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`^ID +STATE +TOOL +ARGUMENTS +REASON +DECIDED BY +NOTE$`).MatchString(lines[0]) {
		t.Fatalf("runs approvals:\n%s", out)
	}
	if !strings.Contains(lines[1], "write") || !strings.Contains(lines[1], "I will write the plan") || !strings.Contains(lines[1], "rule") || strings.Contains(lines[1], "<none>   rule") {
		t.Errorf("the rule-denied row: %s", lines[1])
	}
	if !strings.Contains(lines[2], args) || !strings.Contains(lines[2], "person:admin") || !strings.HasSuffix(lines[2], "not on main") {
		t.Errorf("the denied row: %s", lines[2])
	}
	if strings.Contains(out, `\u00`) {
		t.Errorf("runs approvals shows escaped arguments:\n%s", out)
	}
}
