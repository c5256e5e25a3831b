package computer

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"

	"agentrun.dev/agentrun/internal/api"
)

// optionRuns are issue 24's commands hidden in program options and environment, as the audit
// ran them, with touch in place of curl: each makes its marker file if what it hides runs.
var optionRuns = []struct{ name, marker, command string }{
	{"git ssh", "o1.txt", `GIT_SSH_COMMAND='touch o1.txt; false' git ls-remote ssh://h/r`},
	{"git alias", "o2.txt", `git -c alias.zz='!touch o2.txt' zz`},
	{"git env config", "o3.txt", `GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.zz GIT_CONFIG_VALUE_0='!touch o3.txt' git zz`},
	{"tar checkpoint", "o4.txt", `tar --checkpoint=1 --checkpoint-action=exec='touch o4.txt' -cf /tmp/a.tar .`},
}

// optionScript: "Probe options" calls bash with every command, then a plain one; each command's
// name calls it alone; "Plain tar" archives the folder.
func optionScript() string {
	call := func(command string) string {
		b, _ := json.Marshal(map[string]string{"command": command})
		return fmt.Sprintf("          - name: bash\n            input: %s\n", b)
	}
	var all []string
	for _, o := range optionRuns {
		all = append(all, call(o.command))
	}
	s := "entries:\n  - name: prober\n    match: \"Probe options\"\n    turns:\n      - tool_calls:\n" + strings.Join(all, "") +
		call("echo plain > plain.txt") + "      - text: \"result: {{last_tool_result}}\"\n"
	one := func(name, match, command string) string {
		return fmt.Sprintf("  - name: %s\n    match: %q\n    turns:\n      - tool_calls:\n%s      - text: \"done: {{last_tool_result}}\"\n", name, match, call(command))
	}
	for i, o := range optionRuns {
		s += one(fmt.Sprintf("single%d", i), "Run "+o.name, o.command)
	}
	return s + one("plain", "Plain tar", "tar -czf /tmp/x.tgz . && git --version")
}

// Issue 24 item 1 against the real binary and sandbox: under the server's deny of bash(curl *)
// a never-ask agent's hidden commands are all denied (none ran); under default: ask with
// bash(git *) and bash(tar *) allowed each waits for a person; a plain tar and git still run
// unasked; and with nothing denied and never-ask each really runs what it hides.
func TestOptionHiddenCommands(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	for _, p := range []string{"git", "tar"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not installed: the sandbox's programs are the host's", p)
		}
	}
	script := optionScript()
	markers := func(e *Env, run string) (present []string) {
		for _, o := range optionRuns {
			if res := e.CLI(e.Dir, "runs", "read-file", run, o.marker); res.Code == 0 {
				present = append(present, o.marker)
			}
		}
		return present
	}
	create := func(e *Env, name, approvals string) {
		t.Helper()
		if st := e.Do("PUT", "/v2/agents/"+name, `{"metadata":{"name":"`+name+`"},"spec":{"computer":{"kind":"sandbox"},"approvals":`+approvals+`}}`, nil); st != 201 {
			t.Fatalf("create agent %s: HTTP %d", name, st)
		}
	}
	start := func(e *Env, run, agent, input string) {
		e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"`+run+`"},"spec":{"agent":"`+agent+`","input":"`+input+`"}}`, nil)
	}

	denied := NewEnv(t, script)
	denied.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--deny", "bash(curl *)"})
	create(denied, "prober", `"never-ask"`)
	start(denied, "p1", "prober", "Probe options")
	if r := denied.WaitPhase("p1", 90*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseWaiting); r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run p1: %s/%s %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	results := map[string]map[string]string{}
	for _, s := range denied.Steps("p1") {
		var m map[string]string
		json.Unmarshal(s.Result, &m)
		results[s.Key] = m
	}
	for i, o := range optionRuns {
		if d := results[fmt.Sprintf("t0/tool/%d/approval", i)]; d["by"] != "server deny: bash(curl *)" || d["decision"] != "deny" {
			t.Errorf("%s %q: decided %v, want denied by the server's rule", o.name, o.command, d)
		}
	}
	if got := markers(denied, "p1"); len(got) != 0 {
		t.Errorf("denied calls ran under the server's deny: %v exist", got)
	}
	if got := denied.MustCLI(0, "runs", "read-file", "p1", "plain.txt").Stdout; got != "plain\n" {
		t.Errorf("the plain call after them: plain.txt = %q", got)
	}

	open := NewEnv(t, script)
	open.StartWith([]string{"serve", "--listen", "127.0.0.1:0"})
	create(open, "asker", `{"default":"ask","rules":[{"match":"bash(git *)","action":"allow"},{"match":"bash(tar *)","action":"allow"}]}`)
	for i, o := range optionRuns {
		run := fmt.Sprintf("a%d", i)
		start(open, run, "asker", "Run "+o.name)
		r := open.WaitPhase(run, 60*time.Second, api.PhaseWaiting, api.PhaseSucceeded, api.PhaseFailed)
		if r.Status.Phase != api.PhaseWaiting || r.Status.Reason != api.ReasonApproval {
			t.Errorf("%s under bash(git *)/bash(tar *) allowed: %s/%s %s, want waiting on approval", o.name, r.Status.Phase, r.Status.Reason, r.Status.Message)
		}
		if res := open.CLI(open.Dir, "runs", "read-file", run, o.marker); res.Code == 0 {
			t.Errorf("%s: the call ran before anyone approved it: %s exists", o.name, o.marker)
		}
	}
	start(open, "a9", "asker", "Plain tar")
	if r := open.WaitPhase("a9", 60*time.Second, api.PhaseWaiting, api.PhaseSucceeded, api.PhaseFailed); r.Status.Phase != api.PhaseSucceeded {
		t.Errorf("plain tar and git --version under bash(tar *)/bash(git *): %s/%s %s, want to run unasked", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}

	// Nothing denied and never-ask: each command really runs what it hides.
	create(open, "prober", `"never-ask"`)
	start(open, "f1", "prober", "Probe options")
	if r := open.WaitPhase("f1", 90*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseWaiting); r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run f1: %s/%s %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	if got := markers(open, "f1"); len(got) != len(optionRuns) {
		t.Errorf("allowed, the commands made %v, want all %d markers", got, len(optionRuns))
	}
}
