package harness

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/eval"
)

// harnessEvalScript is the group script's answers and every built-in evaluation task answered
// right (the write-file tasks through the harness's name for our write tool, mcp__agentrun__write),
// but wrongTask, answered wrong.
func harnessEvalScript(t *testing.T, wrongTask string) string {
	t.Helper()
	type turn map[string]any
	entries := []map[string]any{
		{"name": "router", "match": "Route this request", "turns": []turn{{"text": `{"family": "haiku", "confidence": 0.9}`}}},
		{"name": "france", "match": "capital of France", "turns": []turn{{"text": "Paris."}}},
		{"name": "japan", "match": "capital of Japan", "turns": []turn{{"text": "Tokyo."}}},
		{"name": "both", "match": "both questions", "turns": []turn{{"text": "Both questions have been answered."}}},
	}
	for _, env := range eval.Builtins() {
		for _, task := range env.Spec.Splits["test"] {
			switch env.Spec.Grader.Kind {
			case "normalized":
				var ans string
				json.Unmarshal(task.Answer, &ans)
				if task.ID == wrongTask {
					ans = "12345"
				}
				entries = append(entries, map[string]any{"name": task.ID, "match": task.Prompt, "turns": []turn{{"text": ans}}})
			case "script":
				var want struct{ File, Content string }
				json.Unmarshal(task.Answer, &want)
				entries = append(entries, map[string]any{"name": task.ID, "match": task.Prompt, "turns": []turn{
					{"tool_calls": []map[string]any{{"name": "mcp__agentrun__write", "input": map[string]string{"path": want.File, "content": want.Content}}}},
					{"text": "done"}}})
			}
		}
	}
	b, _ := json.Marshal(map[string]any{"entries": entries})
	return string(b)
}

// A group of claude-agent runs and an evaluation of a claude-agent agent work as for builtin, with
// the seed's files and commands ("Run agents in parallel", "Evaluate an agent") and only
// "harness: claude-agent" added to the agent: the group's limits and dependsOn hold (c starts
// after a and b succeeded), each run's model calls are gateway steps of the harness, the group's
// cost adds them up; the evaluation's cases are claude-agent runs graded and scored, the wrongly
// answered task failing, and a script grader checks the file the harness wrote with our tool.
func TestClaudeGroupAndEvaluation(t *testing.T) {
	t.Parallel()
	groupAndEvaluation(t, NewClaudeEnv(t, harnessEvalScript(t, "test-03")), "claude-agent")
}

// The same with codex on the seed's Anthropic-only setup, its calls translated (Codex's MCP
// namespace flattened, so the scripts' mcp__agentrun__write is its write too).
func TestCodexAnthropicGroupAndEvaluation(t *testing.T) {
	t.Parallel()
	groupAndEvaluation(t, newCodexAnthropicEnv(t, harnessEvalScript(t, "test-03")), "codex")
}

func groupAndEvaluation(t *testing.T, e *Env, harnessName string) {
	e.Start()
	via := "via " + harnessName
	agent := strings.Replace(SeedGroupAgentYAML, "spec:\n", "spec:\n  harness: "+harnessName+"\n", 1)
	e.MustCLI(0, "apply", "-f", WriteFile(t, e.Dir, "agent.yaml", agent))
	e.MustCLI(0, "apply", "-f", WriteFile(t, e.Dir, "group.yaml", SeedGroupYAML))
	e.MustCLI(0, "apply", "-f", WriteFile(t, e.Dir, "runs.yaml", SeedRunsYAML))
	e.MustCLI(0, "patch", "ag/parallel-agents", "--patch", `{"spec":{"sealed":true}}`)
	if r := e.MustCLI(0, "wait", "ag/parallel-agents", "--for=jsonpath={.status.phase}=Succeeded", "--timeout=3m"); !strings.Contains(r.Stdout, "condition met") {
		t.Errorf("wait printed %q", r.Stdout)
	}
	if r := e.MustCLI(0, "get", "ag"); !strings.Contains(r.Stdout, "Succeeded") || !strings.Contains(r.Stdout, "3/3") {
		t.Errorf("get ag:\n%s", r.Stdout)
	}
	if r := e.MustCLI(0, "agentrun", "answer", "parallel-agents-c"); strings.TrimSpace(r.Stdout) != "Both questions have been answered." {
		t.Errorf("answer = %q", r.Stdout)
	}
	a, b, c := e.GetRun("parallel-agents-a"), e.GetRun("parallel-agents-b"), e.GetRun("parallel-agents-c")
	if c.Status.StartedAt == nil || a.Status.FinishedAt == nil || b.Status.FinishedAt == nil ||
		c.Status.StartedAt.Before(*a.Status.FinishedAt) || c.Status.StartedAt.Before(*b.Status.FinishedAt) {
		t.Errorf("c started %v; a finished %v, b finished %v", c.Status.StartedAt, a.Status.FinishedAt, b.Status.FinishedAt)
	}
	for _, r := range []api.AgentRun{a, b, c} {
		calls := 0
		for _, turn := range r.Status.Turns {
			calls += turn.ModelCalls
			if turn.Family != "haiku" || !strings.Contains(turn.Model, "haiku") {
				t.Errorf("%s: turn %+v, want the agent's haiku family", r.Metadata.Name, turn)
			}
		}
		harnessSteps := 0
		for _, s := range e.Steps(r.Metadata.Name) {
			if s.Kind == "model" && strings.Contains(s.Title, via) {
				harnessSteps++
			}
		}
		if calls == 0 || harnessSteps != calls {
			t.Errorf("%s: %d model calls in its turns, %d %s model steps", r.Metadata.Name, calls, harnessSteps, harnessName)
		}
	}
	g := e.GetGroup("parallel-agents")
	if g.Status.Counts != (api.GroupCounts{Succeeded: 3}) || g.Status.Cost == nil || g.Status.Cost.LimitUSD != "0.60" ||
		g.Status.Cost.TotalUSD == "" || g.Status.Cost.TotalUSD == "0.00" || strings.Contains(g.Status.Cost.TotalUSD, "unknown") {
		t.Errorf("group status: %+v cost %+v", g.Status.Counts, g.Status.Cost)
	}

	// The seed's evaluation.py as CLI commands, on the harness agent.
	r := e.MustCLI(0, "eval", "run", "parallel-agents-eval", "--agent", "parallel-agents-worker", "--max-active", "2", "--max-cost", "0.20",
		"--environment", "nodus/arithmetic-v2@2.0.0", "--split", "test", "--tasks", "2", "--repetitions", "1", "--seed", "42", "--timeout", "10m")
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "Succeeded: cases=2, pending=0") || lines[5] != "deleted agentgroup/parallel-agents-eval" {
		t.Errorf("eval run printed:\n%s", r.Stdout)
	}
	for _, l := range lines[min(3, len(lines)):min(5, len(lines))] {
		if f := strings.Fields(l); len(f) != 3 || !strings.HasPrefix(f[0], "test-") || f[1] != "scored" || f[2] != map[bool]string{true: "fail", false: "pass"}[f[0] == "test-03"] {
			t.Errorf("case line %q", l)
		}
	}

	// Underneath: every task of the split, each case a harness run, test-03 failing; and a
	// script grader reading the file the harness wrote through our write tool.
	if st := e.Do("POST", "/v2/agentgroups", `{"kind":"AgentGroup","metadata":{"name":"ev-h"},"spec":{"agent":"parallel-agents-worker","limits":{"maxActive":2},
		"evaluation":{"environment":"nodus/arithmetic-v2@2.0.0","split":"test","tasks":4,"seed":7,"timeout":"5m"}}}`, nil); st != 201 {
		t.Fatalf("create ev-h: HTTP %d", st)
	}
	if st := e.Do("PUT", "/v2/agents/writer", `{"metadata":{"name":"writer"},"spec":{"harness":"`+harnessName+`","tools":["write"]}}`, nil); st != 201 {
		t.Fatalf("create writer: HTTP %d", st)
	}
	if st := e.Do("POST", "/v2/agentgroups", `{"kind":"AgentGroup","metadata":{"name":"ev-files"},"spec":{"agent":"writer","limits":{"maxActive":2},
		"evaluation":{"environment":"agentrun/write-file@1.0.0","tasks":3,"seed":3,"timeout":"5m"}}}`, nil); st != 201 {
		t.Fatalf("create ev-files: HTTP %d", st)
	}
	for _, name := range []string{"ev-h", "ev-files"} {
		g := e.WaitGroupDone(name, 3*time.Minute)
		res := e.Results(name)
		if g.Status.Phase != api.GroupSucceeded || res.Evaluation.Scored != len(res.Items) || res.Evaluation.Pending != 0 || len(res.Items) == 0 {
			t.Errorf("%s: %s, evaluation %+v", name, g.Status.Phase, res.Evaluation)
		}
		for _, cs := range res.Items {
			want := map[bool]string{true: "fail", false: "pass"}[cs.TaskID == "test-03"]
			if cs.State != api.CaseScored || cs.Verdict != want {
				t.Errorf("%s %s: %s %s (%s %s)", name, cs.TaskID, cs.State, cs.Verdict, cs.Evidence, cs.Detail)
			}
			harnessStep := false
			for _, s := range e.Steps(cs.Run) {
				harnessStep = harnessStep || (s.Kind == "model" && strings.Contains(s.Title, via))
			}
			if !harnessStep {
				t.Errorf("%s %s: run %s has no %s model step", name, cs.TaskID, cs.Run, harnessName)
			}
		}
	}
	NoHarnessLeft(t, e.Dir, 10*time.Second)
}
