package e2e

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

const approvalsScript = `
entries:
  - name: careful
    match: "Count carefully"
    turns:
      - text: "I need to count this once."
        tool_calls:
          - name: write
            input: {path: "docs/plan.md", content: "plan"}
          - name: write
            input: {path: "secret.txt", content: "leak"}
          - name: dev_count
            input: {label: "{{last_user}}"}
      - text: "result: {{last_tool_result}}"
`

const approvalsAgent = `{"metadata":{"name":"careful"},"spec":{"tools":["write","dev_count"],
  "approvals":{"default":"allow","rules":[{"match":"write(docs/**)","action":"allow"},{"match":"dev_count","action":"ask"}]}}}`

// setupCode reads the one-time setup code the server printed.
func (e *env) setupCode() string {
	e.t.Helper()
	m := regexp.MustCompile(`setup code: ([0-9A-F]+)`).FindStringSubmatch(e.stderr.String())
	if m == nil {
		e.t.Fatalf("the server printed no setup code:\n%s", e.stderr.String())
	}
	return m[1]
}

func TestApprovalsNeedAPerson(t *testing.T) {
	t.Parallel()
	e := newEnv(t, approvalsScript)
	deny := []string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug", "--deny", "write(secret*)"}
	e.startWith(deny)
	if st := e.do("PUT", "/v2/agents/careful", approvalsAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"c1"},"spec":{"agent":"careful","input":"Count carefully: one"}}`, nil)
	r := e.waitPhase("c1", 10*time.Second, api.PhaseWaiting)
	if r.Status.Reason != api.ReasonApproval || r.Status.WaitingOn == nil || !strings.Contains(r.Status.WaitingOn.Detail, `"label":"Count carefully: one"`) {
		t.Fatalf("waiting %s on %+v", r.Status.Reason, r.Status.WaitingOn)
	}
	e.mustCLI(8, "runs", "wait", "c1")
	// The listing shows the exact arguments and the agent's stated reason.
	res := e.mustCLI(0, "runs", "approvals", "c1", "-o", "json")
	var list struct {
		Items []struct {
			ID     int64
			Tool   string
			State  string
			Reason string
			Input  json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(res.stdout), &list); err != nil || len(list.Items) != 2 {
		t.Fatalf("approvals = %s (%v)", res.stdout, err)
	}
	// The first is the write the server's deny set refused, decided without a person.
	if d := list.Items[0]; d.Tool != "write" || d.State != "denied" {
		t.Errorf("first approval = %+v", d)
	}
	a := list.Items[1]
	if a.Tool != "dev_count" || a.State != "pending" || a.Reason != "I need to count this once." || !strings.Contains(string(a.Input), "Count carefully: one") {
		t.Errorf("approval = %+v %s", a, a.Input)
	}
	id := jsonNumber(a.ID)
	// The API token cannot approve.
	if r := e.cli(e.dir, "runs", "approve", "c1", id); r.code != 1 || !strings.Contains(r.stderr, "PersonRequired") {
		t.Errorf("approve with the API token: exit %d, %q", r.code, r.stderr)
	}
	var perr api.Error
	if st := e.do("POST", "/v2/agentruns/c1/approvals/"+id, `{"decision":"approve"}`, &perr); st != 403 || perr.Code != "PersonRequired" {
		t.Errorf("REST approve with the API token: HTTP %d %+v", st, perr)
	}
	// A restart while it waits: it still waits, nothing ran.
	e.kill()
	e.startWith(deny)
	if r := e.waitPhase("c1", 10*time.Second, api.PhaseWaiting); r.Status.Reason != api.ReasonApproval {
		t.Fatalf("after a restart: %s/%s", r.Status.Phase, r.Status.Reason)
	}
	if n := len(e.counted()); n != 0 {
		t.Fatalf("the asking tool ran %d times before approval", n)
	}
	// A person signs in (the first time sets the password with the setup code) and approves.
	if r := e.cliIn(e.dir, "wrong password!!\n", "login", "--password-stdin"); r.code == 0 {
		t.Errorf("login before any password was set, without the setup code, succeeded")
	}
	e.mustCLI(0, "login", "--help")
	code := e.setupCode() // a new one at each start until a password is set
	if r := e.cliIn(e.dir, "correct horse battery\n", "login", "--setup-code", code, "--password-stdin"); r.code != 0 || !strings.Contains(r.stdout, "signed in as admin") {
		t.Fatalf("login: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	// An approval given while no runner is up takes effect when one comes back.
	e.kill()
	e.startWith(append(append([]string{}, deny...), "--no-runner"))
	out := e.mustCLI(0, "runs", "approve", "c1", id, "--reason", "fine once")
	if !strings.Contains(out.stdout, "approved by person:admin") {
		t.Errorf("approve printed %q", out.stdout)
	}
	time.Sleep(300 * time.Millisecond)
	if r := e.getRun("c1"); r.Status.Phase != api.PhaseQueued || len(e.counted()) != 0 {
		t.Fatalf("with no runner, after approval: %s, %d counts", r.Status.Phase, len(e.counted()))
	}
	e.kill()
	e.startWith(deny)
	r = e.waitPhase("c1", 15*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer.Preview != "result: counted Count carefully: one" {
		t.Fatalf("run ended %s: %+v", r.Status.Phase, r.Status.Answer)
	}
	if n := len(e.counted()); n != 1 {
		t.Errorf("the approved tool ran %d times, want 1", n)
	}
	// The server's deny set held, the allowed write ran, the decision and who made it are recorded.
	steps := e.steps("c1")
	results := map[string]map[string]string{}
	for _, s := range steps {
		var m map[string]string
		json.Unmarshal(s.Result, &m)
		results[s.Key] = m
	}
	if d := results["t0/tool/1/approval"]; d["by"] != "server deny: write(secret*)" || d["decision"] != "deny" {
		t.Errorf("the denied write's decision: %v", d)
	}
	if d := results["t0/tool/2/approval"]; d["by"] != "person:admin" || d["decision"] != "approve" || d["reason"] != "fine once" {
		t.Errorf("the approval's record: %v", d)
	}
	if _, ok := results["t0/tool/1"]; ok {
		t.Error("the denied write ran")
	}
	if got := e.mustCLI(0, "runs", "read-file", "c1", "docs/plan.md").stdout; got != "plan" {
		t.Errorf("docs/plan.md = %q", got)
	}
	// A denied call is reported to the model as denied.
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"c2"},"spec":{"agent":"careful","input":"Count carefully: two"}}`, nil)
	e.waitPhase("c2", 10*time.Second, api.PhaseWaiting)
	if err := json.Unmarshal([]byte(e.mustCLI(0, "runs", "approvals", "c2", "-o", "json").stdout), &list); err != nil || len(list.Items) != 2 {
		t.Fatalf("c2 approvals: %v", err)
	}
	e.mustCLI(0, "runs", "deny", "c2", jsonNumber(list.Items[1].ID), "--reason", "not today")
	approvals := e.mustCLI(0, "runs", "approvals", "c2").stdout
	if !strings.Contains(approvals, "denied") {
		t.Errorf("approvals after deny:\n%s", approvals)
	}
	r = e.waitPhase("c2", 15*time.Second, api.PhaseSucceeded)
	if !strings.Contains(r.Status.Answer.Preview, "denied: person:admin refused the call dev_count") || !strings.Contains(r.Status.Answer.Preview, "not today") {
		t.Errorf("the model was not told of the denial: %q", r.Status.Answer.Preview)
	}
	if n := len(e.counted()); n != 1 {
		t.Errorf("a denied tool ran: %d counts", n)
	}
}

// never-ask runs unattended, but the server's deny set still holds.
func TestNeverAskKeepsServerDeny(t *testing.T) {
	t.Parallel()
	e := newEnv(t, approvalsScript)
	e.startWith([]string{"serve", "--listen", "127.0.0.1:0", "--deny", "write(secret*)"})
	e.do("PUT", "/v2/agents/careful", `{"metadata":{"name":"careful"},"spec":{"tools":["write","dev_count"],"approvals":"never-ask"}}`, nil)
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"n1"},"spec":{"agent":"careful","input":"Count carefully: three"}}`, nil)
	r := e.waitPhase("n1", 10*time.Second, api.PhaseSucceeded, api.PhaseWaiting)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("a never-ask run waits: %s/%s", r.Status.Phase, r.Status.Reason)
	}
	if r := e.cli(e.dir, "runs", "read-file", "n1", "secret.txt"); r.code == 0 {
		t.Error("never-ask overrode the server's deny set: secret.txt was written")
	}
	if n := len(e.counted()); n != 1 {
		t.Errorf("dev_count ran %d times", n)
	}
}

func jsonNumber(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

const shellApprovalsScript = `
entries:
  - name: curler
    match: "Fetch it"
    turns:
      - tool_calls:
          - name: bash
            input: {command: "echo ran > a.txt && curl --version"}
          - name: bash
            input: {command: "/usr/bin/curl --version > b.txt"}
          - name: bash
            input: {command: "echo 'a; curl x' > quoted.txt"}
          - name: bash
            input: {command: "sleep 0; curl http://x; touch c.txt"}
      - text: "result: {{last_tool_result}}"
  - name: tester
    match: "Test it"
    turns:
      - tool_calls:
          - name: bash
            input: {command: "go test ./x > tested.txt"}
          - name: bash
            input: {command: "go test ./x; echo pwned > /workspace/pwned.txt"}
      - text: "done: {{last_tool_result}}"
`

// The audit's cases: a shell call is matched per simple command, so the server's deny of
// bash(curl *) holds over a never-ask agent however curl is chained or spelled, and an allowed
// `go test *` does not carry a command chained after it.
func TestShellApprovalsPerCommand(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	e := newEnv(t, shellApprovalsScript)
	e.startWith([]string{"serve", "--listen", "127.0.0.1:0", "--deny", "bash(curl *)"})
	if st := e.do("PUT", "/v2/agents/curler", `{"metadata":{"name":"curler"},"spec":{"computer":{"kind":"sandbox"},"approvals":"never-ask"}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"s1"},"spec":{"agent":"curler","input":"Fetch it"}}`, nil)
	r := e.waitPhase("s1", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseWaiting)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run s1: %s/%s %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	want := `result: denied by the server's rule bash(curl *): curl http://x (in "sleep 0; curl http://x; touch c.txt"); the call bash did not run`
	if r.Status.Answer.Preview != want {
		t.Errorf("the model was told %q, want %q", r.Status.Answer.Preview, want)
	}
	for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
		if res := e.cli(e.dir, "runs", "read-file", "s1", f); res.code == 0 {
			t.Errorf("a denied call ran: %s = %q", f, res.stdout)
		}
	}
	if got := e.mustCLI(0, "runs", "read-file", "s1", "quoted.txt").stdout; got != "a; curl x\n" {
		t.Errorf("quoted.txt = %q (a quoted curl is no command)", got)
	}
	results := map[string]map[string]string{}
	for _, s := range e.steps("s1") {
		var m map[string]string
		json.Unmarshal(s.Result, &m)
		results[s.Key] = m
	}
	for _, k := range []string{"t0/tool/0/approval", "t0/tool/1/approval", "t0/tool/3/approval"} {
		if d := results[k]; d["by"] != "server deny: bash(curl *)" || d["decision"] != "deny" {
			t.Errorf("%s: %v", k, d)
		}
	}

	// Allow bash(go test *), deny bash(rm *), ask for the rest: a chain after go test asks.
	if st := e.do("PUT", "/v2/agents/tester", `{"metadata":{"name":"tester"},"spec":{"computer":{"kind":"sandbox"},
	  "approvals":{"default":"ask","rules":[{"match":"bash(go test *)","action":"allow"},{"match":"bash(rm *)","action":"deny"}]}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"s2"},"spec":{"agent":"tester","input":"Test it"}}`, nil)
	r = e.waitPhase("s2", 60*time.Second, api.PhaseWaiting, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseWaiting || r.Status.Reason != api.ReasonApproval || r.Status.WaitingOn == nil || !strings.Contains(r.Status.WaitingOn.Detail, "pwned") {
		t.Fatalf("run s2: %s/%s waiting on %+v", r.Status.Phase, r.Status.Reason, r.Status.WaitingOn)
	}
	if !strings.Contains(r.Status.Message, `needs approval by the agent's default: echo pwned > /workspace/pwned.txt (in "go test ./x; echo pwned > /workspace/pwned.txt")`) {
		t.Errorf("status message %q does not name the command that asks", r.Status.Message)
	}
	// The plain go test was allowed and ran (go may be missing in the sandbox; its redirection ran).
	if res := e.cli(e.dir, "runs", "read-file", "s2", "tested.txt"); res.code != 0 {
		t.Errorf("the allowed go test did not run: %s", res.stderr)
	}
	if res := e.cli(e.dir, "runs", "read-file", "s2", "pwned.txt"); res.code == 0 {
		t.Errorf("the chain ran without asking: pwned.txt = %q", res.stdout)
	}
}
