package runs

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

func TestApprovalsNeedAPerson(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, ApprovalsScript)
	deny := []string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug", "--deny", "write(secret*)"}
	e.StartWith(deny)
	if st := e.Do("PUT", "/v2/agents/careful", ApprovalsAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"c1"},"spec":{"agent":"careful","input":"Count carefully: one"}}`, nil)
	r := e.WaitPhase("c1", 10*time.Second, api.PhaseWaiting)
	if r.Status.Reason != api.ReasonApproval || r.Status.WaitingOn == nil || !strings.Contains(r.Status.WaitingOn.Detail, `"label":"Count carefully: one"`) {
		t.Fatalf("waiting %s on %+v", r.Status.Reason, r.Status.WaitingOn)
	}
	e.MustCLI(8, "runs", "wait", "c1")
	// The listing shows the exact arguments and the agent's stated reason.
	res := e.MustCLI(0, "runs", "approvals", "c1", "-o", "json")
	var list struct {
		Items []struct {
			ID     int64
			Tool   string
			State  string
			Reason string
			Input  json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(res.Stdout), &list); err != nil || len(list.Items) != 2 {
		t.Fatalf("approvals = %s (%v)", res.Stdout, err)
	}
	// The first is the write the server's deny set refused, decided without a person.
	if d := list.Items[0]; d.Tool != "write" || d.State != "denied" {
		t.Errorf("first approval = %+v", d)
	}
	a := list.Items[1]
	if a.Tool != "dev_count" || a.State != "pending" || a.Reason != "I need to count this once." || !strings.Contains(string(a.Input), "Count carefully: one") {
		t.Errorf("approval = %+v %s", a, a.Input)
	}
	id := JSONNumber(a.ID)
	// The API token cannot approve.
	if r := e.CLI(e.Dir, "runs", "approve", "c1", id); r.Code != 1 || !strings.Contains(r.Stderr, "PersonRequired") {
		t.Errorf("approve with the API token: exit %d, %q", r.Code, r.Stderr)
	}
	var perr api.Error
	if st := e.Do("POST", "/v2/agentruns/c1/approvals/"+id, `{"decision":"approve"}`, &perr); st != 403 || perr.Code != "PersonRequired" {
		t.Errorf("REST approve with the API token: HTTP %d %+v", st, perr)
	}
	// A restart while it waits: it still waits, nothing ran.
	e.Kill()
	e.StartWith(deny)
	if r := e.WaitPhase("c1", 10*time.Second, api.PhaseWaiting); r.Status.Reason != api.ReasonApproval {
		t.Fatalf("after a restart: %s/%s", r.Status.Phase, r.Status.Reason)
	}
	if n := len(e.Counted()); n != 0 {
		t.Fatalf("the asking tool ran %d times before approval", n)
	}
	// A person signs in (the first time sets the password with the setup code) and approves.
	if r := e.CLIIn(e.Dir, "wrong password!!\n", "login", "--password-stdin"); r.Code == 0 {
		t.Errorf("login before any password was set, without the setup code, succeeded")
	}
	e.MustCLI(0, "login", "--help")
	code := e.SetupCode() // a new one at each start until a password is set
	if r := e.CLIIn(e.Dir, "correct horse battery\n", "login", "--setup-code", code, "--password-stdin"); r.Code != 0 || !strings.Contains(r.Stdout, "signed in as admin") {
		t.Fatalf("login: exit %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	// An approval given while no runner is up takes effect when one comes back.
	e.Kill()
	e.StartWith(append(append([]string{}, deny...), "--no-runner"))
	out := e.MustCLI(0, "runs", "approve", "c1", id, "--reason", "fine once")
	if !strings.Contains(out.Stdout, "approved by person:admin") {
		t.Errorf("approve printed %q", out.Stdout)
	}
	time.Sleep(300 * time.Millisecond)
	if r := e.GetRun("c1"); r.Status.Phase != api.PhaseQueued || len(e.Counted()) != 0 {
		t.Fatalf("with no runner, after approval: %s, %d counts", r.Status.Phase, len(e.Counted()))
	}
	e.Kill()
	e.StartWith(deny)
	r = e.WaitPhase("c1", 15*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer.Preview != "result: counted Count carefully: one" {
		t.Fatalf("run ended %s: %+v", r.Status.Phase, r.Status.Answer)
	}
	if n := len(e.Counted()); n != 1 {
		t.Errorf("the approved tool ran %d times, want 1", n)
	}
	// The server's deny set held, the allowed write ran, the decision and who made it are recorded.
	steps := e.Steps("c1")
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
	if got := e.MustCLI(0, "runs", "read-file", "c1", "docs/plan.md").Stdout; got != "plan" {
		t.Errorf("docs/plan.md = %q", got)
	}
	// A denied call is reported to the model as denied.
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"c2"},"spec":{"agent":"careful","input":"Count carefully: two"}}`, nil)
	e.WaitPhase("c2", 10*time.Second, api.PhaseWaiting)
	if err := json.Unmarshal([]byte(e.MustCLI(0, "runs", "approvals", "c2", "-o", "json").Stdout), &list); err != nil || len(list.Items) != 2 {
		t.Fatalf("c2 approvals: %v", err)
	}
	e.MustCLI(0, "runs", "deny", "c2", JSONNumber(list.Items[1].ID), "--reason", "not today")
	approvals := e.MustCLI(0, "runs", "approvals", "c2").Stdout
	if !strings.Contains(approvals, "denied") {
		t.Errorf("approvals after deny:\n%s", approvals)
	}
	r = e.WaitPhase("c2", 15*time.Second, api.PhaseSucceeded)
	if !strings.Contains(r.Status.Answer.Preview, "denied: person:admin refused the call dev_count") || !strings.Contains(r.Status.Answer.Preview, "not today") {
		t.Errorf("the model was not told of the denial: %q", r.Status.Answer.Preview)
	}
	if n := len(e.Counted()); n != 1 {
		t.Errorf("a denied tool ran: %d counts", n)
	}
}

// never-ask runs unattended, but the server's deny set still holds.
func TestNeverAskKeepsServerDeny(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, ApprovalsScript)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--deny", "write(secret*)"})
	e.Do("PUT", "/v2/agents/careful", `{"metadata":{"name":"careful"},"spec":{"tools":["write","dev_count"],"approvals":"never-ask"}}`, nil)
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"n1"},"spec":{"agent":"careful","input":"Count carefully: three"}}`, nil)
	r := e.WaitPhase("n1", 10*time.Second, api.PhaseSucceeded, api.PhaseWaiting)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("a never-ask run waits: %s/%s", r.Status.Phase, r.Status.Reason)
	}
	if r := e.CLI(e.Dir, "runs", "read-file", "n1", "secret.txt"); r.Code == 0 {
		t.Error("never-ask overrode the server's deny set: secret.txt was written")
	}
	if n := len(e.Counted()); n != 1 {
		t.Errorf("dev_count ran %d times", n)
	}
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
	NeedBwrap(t)
	e := NewEnv(t, shellApprovalsScript)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--deny", "bash(curl *)"})
	if st := e.Do("PUT", "/v2/agents/curler", `{"metadata":{"name":"curler"},"spec":{"computer":{"kind":"sandbox"},"approvals":"never-ask"}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"s1"},"spec":{"agent":"curler","input":"Fetch it"}}`, nil)
	r := e.WaitPhase("s1", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseWaiting)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run s1: %s/%s %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	want := `result: denied by the server's rule bash(curl *): curl http://x (in "sleep 0; curl http://x; touch c.txt"); the call bash did not run`
	if r.Status.Answer.Preview != want {
		t.Errorf("the model was told %q, want %q", r.Status.Answer.Preview, want)
	}
	for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
		if res := e.CLI(e.Dir, "runs", "read-file", "s1", f); res.Code == 0 {
			t.Errorf("a denied call ran: %s = %q", f, res.Stdout)
		}
	}
	if got := e.MustCLI(0, "runs", "read-file", "s1", "quoted.txt").Stdout; got != "a; curl x\n" {
		t.Errorf("quoted.txt = %q (a quoted curl is no command)", got)
	}
	results := map[string]map[string]string{}
	for _, s := range e.Steps("s1") {
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
	if st := e.Do("PUT", "/v2/agents/tester", `{"metadata":{"name":"tester"},"spec":{"computer":{"kind":"sandbox"},
	  "approvals":{"default":"ask","rules":[{"match":"bash(go test *)","action":"allow"},{"match":"bash(rm *)","action":"deny"}]}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"s2"},"spec":{"agent":"tester","input":"Test it"}}`, nil)
	r = e.WaitPhase("s2", 60*time.Second, api.PhaseWaiting, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseWaiting || r.Status.Reason != api.ReasonApproval || r.Status.WaitingOn == nil || !strings.Contains(r.Status.WaitingOn.Detail, "pwned") {
		t.Fatalf("run s2: %s/%s waiting on %+v", r.Status.Phase, r.Status.Reason, r.Status.WaitingOn)
	}
	if !strings.Contains(r.Status.Message, `needs approval by the agent's default: echo pwned > /workspace/pwned.txt (in "go test ./x; echo pwned > /workspace/pwned.txt")`) {
		t.Errorf("status message %q does not name the command that asks", r.Status.Message)
	}
	// The plain go test was allowed and ran (go may be missing in the sandbox; its redirection ran).
	if res := e.CLI(e.Dir, "runs", "read-file", "s2", "tested.txt"); res.Code != 0 {
		t.Errorf("the allowed go test did not run: %s", res.Stderr)
	}
	if res := e.CLI(e.Dir, "runs", "read-file", "s2", "pwned.txt"); res.Code == 0 {
		t.Errorf("the chain ran without asking: pwned.txt = %q", res.Stdout)
	}
}
