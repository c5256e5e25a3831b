package computer

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// hiddenRuns are issue 9's shell constructs that run text no simple command shows; each creates
// its marker file if it runs. (The audit's had curl where these have touch: under the server's
// deny of bash(curl *) they are denied because approvals cannot see into them, whatever they
// hide.)
var hiddenRuns = []struct{ marker, command string }{
	{"m1.txt", "function g { curl --version; touch m1.txt; }; g"},
	{"m2.txt", "coproc X { touch m2.txt; curl --version; }; wait"},
	{"m3.txt", `x='a[$(touch m3.txt)]'; echo $((x))`},
	{"m4.txt", `x='a[$(touch m4.txt)]'; (( x ))`},
	{"m5.txt", `x='a[$(touch m5.txt)]'; [[ $x -eq 0 ]]`},
	{"m6.txt", `declare -i n; n='a[$(touch m6.txt)]'`},
	{"m7.txt", `x='a[$(touch m7.txt)]'; let y=x`},
	{"m8.txt", `x='$(touch m8.txt)'; echo ${x@P}`},
	{"m9.txt", `x='a[$(touch m9.txt)]'; echo ${!x}`},
}

// hiddenScript makes the model call bash with each command for input "Probe it", then with a
// plain command that must run, and single calls for "Count it" (arithmetic) and "Prompt it"
// (${x@P}).
func hiddenScript() string {
	var calls []string
	for _, h := range hiddenRuns {
		b, _ := json.Marshal(map[string]string{"command": h.command})
		calls = append(calls, fmt.Sprintf("          - name: bash\n            input: %s\n", b))
	}
	one := func(name, match, command string) string {
		b, _ := json.Marshal(map[string]string{"command": command})
		return fmt.Sprintf("  - name: %s\n    match: %q\n    turns:\n      - tool_calls:\n          - name: bash\n            input: %s\n      - text: \"done: {{last_tool_result}}\"\n", name, match, b)
	}
	return "entries:\n  - name: prober\n    match: \"Probe it\"\n    turns:\n      - tool_calls:\n" + strings.Join(calls, "") +
		"          - name: bash\n            input: {command: \"echo $((2*3)) > plain.txt\"}\n" +
		"      - text: \"result: {{last_tool_result}}\"\n" +
		one("counter", "Count it", hiddenRuns[2].command) + one("prompter", "Prompt it", hiddenRuns[7].command)
}

// Issue 9 item 3: function and coproc bodies, arithmetic on a variable ($((x)), (( x )),
// [[ -eq ]], declare -i, let), ${x@P} and ${!x} ran curl under the server's deny of
// bash(curl *), and the arithmetic one ran unasked under default: ask with only bash(echo *)
// allowed. Against the real binary and sandbox: each is denied under the server's deny, and
// asks under default: ask; with nothing denied and never-ask each does run what it hides (the
// markers are real).
func TestShellHiddenCommands(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	script := hiddenScript()
	markers := func(e *Env, run string) (present []string) {
		for _, h := range hiddenRuns {
			if res := e.CLI(e.Dir, "runs", "read-file", run, h.marker); res.Code == 0 {
				present = append(present, h.marker)
			}
		}
		return present
	}

	// The server denies bash(curl *): a never-ask agent's calls are all denied, none ran.
	denied := NewEnv(t, script)
	denied.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--deny", "bash(curl *)"})
	if st := denied.Do("PUT", "/v2/agents/prober", `{"metadata":{"name":"prober"},"spec":{"computer":{"kind":"sandbox"},"approvals":"never-ask"}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	denied.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"p1"},"spec":{"agent":"prober","input":"Probe it"}}`, nil)
	if r := denied.WaitPhase("p1", 90*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseWaiting); r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run p1: %s/%s %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	results := map[string]map[string]string{}
	for _, s := range denied.Steps("p1") {
		var m map[string]string
		json.Unmarshal(s.Result, &m)
		results[s.Key] = m
	}
	for i, h := range hiddenRuns {
		if d := results[fmt.Sprintf("t0/tool/%d/approval", i)]; d["by"] != "server deny: bash(curl *)" || d["decision"] != "deny" {
			t.Errorf("%q: decided %v, want denied by the server's rule", h.command, d)
		}
	}
	if got := markers(denied, "p1"); len(got) != 0 {
		t.Errorf("denied calls ran under the server's deny: %v exist", got)
	}
	if got := denied.MustCLI(0, "runs", "read-file", "p1", "plain.txt").Stdout; got != "6\n" {
		t.Errorf("the plain call after them: plain.txt = %q", got)
	}

	// No server deny. default: ask with only bash(echo *) allowed: the arithmetic and the prompt
	// expansion ask (each run waits at its call), and nothing ran.
	open := NewEnv(t, script)
	open.StartWith([]string{"serve", "--listen", "127.0.0.1:0"})
	if st := open.Do("PUT", "/v2/agents/asker", `{"metadata":{"name":"asker"},"spec":{"computer":{"kind":"sandbox"},
	  "approvals":{"default":"ask","rules":[{"match":"bash(echo *)","action":"allow"}]}}}`, nil); st != 201 {
		t.Fatalf("create agent asker: HTTP %d", st)
	}
	for _, c := range []struct{ run, input, marker, construct string }{
		{"a1", "Count it", "m3.txt", "arithmetic on a variable"},
		{"a2", "Prompt it", "m8.txt", "a prompt expansion"},
	} {
		open.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"`+c.run+`"},"spec":{"agent":"asker","input":"`+c.input+`"}}`, nil)
		r := open.WaitPhase(c.run, 60*time.Second, api.PhaseWaiting, api.PhaseSucceeded, api.PhaseFailed)
		if r.Status.Phase != api.PhaseWaiting || r.Status.Reason != api.ReasonApproval {
			t.Errorf("run %s (%s): %s/%s %s, want waiting on approval", c.run, c.input, r.Status.Phase, r.Status.Reason, r.Status.Message)
		} else if !strings.Contains(r.Status.Message, "needs approval by the agent's default") || !strings.Contains(r.Status.Message, c.construct) {
			t.Errorf("run %s: status message %q does not say the default asks for %s", c.run, r.Status.Message, c.construct)
		}
		if res := open.CLI(open.Dir, "runs", "read-file", c.run, c.marker); res.Code == 0 {
			t.Errorf("run %s: the call ran before anyone approved it: %s exists", c.run, c.marker)
		}
	}

	// Nothing denied and never-ask: each construct really runs the text it hides in the
	// sandbox's bash, so a marker's absence above is the decision's doing.
	if st := open.Do("PUT", "/v2/agents/prober", `{"metadata":{"name":"prober"},"spec":{"computer":{"kind":"sandbox"},"approvals":"never-ask"}}`, nil); st != 201 {
		t.Fatalf("create agent prober: HTTP %d", st)
	}
	open.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"f1"},"spec":{"agent":"prober","input":"Probe it"}}`, nil)
	if r := open.WaitPhase("f1", 90*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseWaiting); r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run f1: %s/%s %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	if got := markers(open, "f1"); len(got) != len(hiddenRuns) {
		t.Errorf("allowed, the constructs made %v, want all %d markers", got, len(hiddenRuns))
	}
}
