package fork

import (
	"slices"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// harnessScript is a harness's conversation, its tools named with prefix (Claude Code sees ours
// as mcp__agentrun__NAME, Codex as NAME): two writes of a.txt, the answer, and an answer to a
// message after it.
func harnessScript(prefix string) string {
	return strings.ReplaceAll(`
entries:
  - name: hfiles
    match: "Harness writes"
    turns:
      - tool_calls:
          - name: PREFIXwrite
            input: {path: a.txt, content: "one"}
      - tool_calls:
          - name: PREFIXwrite
            input: {path: a.txt, content: "two"}
      - text: "finished"
      - text: "again: {{last_user}}"
`, "PREFIX", prefix)
}

// TestForkHarnessRun: a claude-agent run and a codex run forked at their first tool call: the
// fork's folder is as that call left it, the harness (started afresh) replays the copied prefix from the journal as
// after a takeover (the scripted server sees no request for the copied turn) and goes on live to
// the same answer. A fork with a message takes it as the harness's next turn, once the turn in
// flight ends.
func TestForkHarnessRun(t *testing.T) {
	t.Parallel()
	t.Run("claude-agent", func(t *testing.T) {
		t.Parallel()
		forkHarnessRun(t, NewClaudeEnv(t, harnessScript("mcp__agentrun__")), "claude-agent")
	})
	t.Run("codex", func(t *testing.T) {
		t.Parallel()
		forkHarnessRun(t, NewCodexEnv(t, harnessScript("")), "codex")
	})
}

func forkHarnessRun(t *testing.T, e *Env, harness string) {
	e.Start()
	if st := e.Do("PUT", "/v2/agents/hwriter", `{"metadata":{"name":"hwriter"},"spec":{"harness":"`+harness+`","tools":["write"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	if st := e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"h1"},"spec":{"agent":"hwriter","input":"Harness writes a file twice"}}`, nil); st != 201 {
		t.Fatalf("create run: HTTP %d", st)
	}
	r := e.WaitPhase("h1", 2*time.Minute, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || !strings.Contains(r.Status.Answer.Preview, "finished") {
		t.Fatalf("harness run: %s %s %+v", r.Status.Phase, r.Status.Message, r.Status.Answer)
	}
	if steps := e.Steps("h1"); !slices.ContainsFunc(steps, func(s api.Step) bool { return s.Key == "t0/tool/0" && s.State == api.StepCompleted }) {
		t.Fatalf("run h1 has no completed step t0/tool/0 to fork at; its steps: %s", StepList(steps))
	}
	e.Kill()
	NoHarnessLeft(t, e.Dir, 10*time.Second)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--no-runner"})
	name := fork(t, e, "h1", "t0/tool/0")
	if got, st := file(t, e, name, "a.txt"); st != 200 || got != "one" {
		t.Errorf("fork a.txt = %q (HTTP %d), want \"one\"", got, st)
	}
	withMsg := fork(t, e, "h1", "t0/tool/0", "--message", "one more thing")
	e.Kill()
	e.Start()
	f := e.WaitPhase(name, 2*time.Minute, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if f.Status.Phase != api.PhaseSucceeded || f.Status.Answer == nil || !strings.Contains(f.Status.Answer.Preview, "finished") {
		t.Fatalf("fork: %s %s %s %+v", f.Status.Phase, f.Status.Reason, f.Status.Message, f.Status.Answer)
	}
	m := e.WaitPhase(withMsg, 2*time.Minute, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if m.Status.Phase != api.PhaseSucceeded || m.Status.Answer == nil || !strings.Contains(m.Status.Answer.Preview, "again: ") || !strings.Contains(m.Status.Answer.Preview, "one more thing") {
		t.Errorf("fork with a message: %s %s %+v, want its next turn to answer the message", m.Status.Phase, m.Status.Message, m.Status.Answer)
	}
	for turn, want := range []int{1, 3, 3} {
		if n := e.Model.CountTurn("hfiles", turn); n != want {
			t.Errorf("scripted turn %d reached the model server %d times, want %d", turn, n, want)
		}
	}
	if got, _ := file(t, e, name, "a.txt"); got != "two" {
		t.Errorf("fork a.txt after its own turn = %q, want \"two\"", got)
	}
	for _, s := range e.Steps(name) {
		if s.Key == "t0/tool/0" && s.CopiedFrom != "h1" {
			t.Errorf("fork's t0/tool/0 is not marked copied: %+v", s)
		}
		if s.Key == "t1/model" && s.CopiedFrom != "" {
			t.Errorf("fork's t1/model is marked copied: %+v", s)
		}
	}
}
