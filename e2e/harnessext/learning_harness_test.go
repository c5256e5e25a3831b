package harnessext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/harness"
)

// Learning on every loop: a harness run's instructions carry the notes index, its proposal is
// the harness's next user turn (judged by the same checks, grader and commit as the built-in
// loop's), and every learning run is offered the folder's learned skills (through the skill
// tool) and learned workflows (one tool each, its nodes journal steps under the call).

const tallyWorkflow = `{"v": 2, "name": "tally",
 "schemas": {"In": {"type": "object", "required": ["items"], "properties": {"items": {"type": "array", "items": {"type": "string"}}}},
   "Counted": {"type": "object", "required": ["ok", "content"]}, "Out": {"type": "object"}},
 "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
 "root": {"node": "chain", "steps": [
   {"node": "map", "label": "each", "itemsPath": "items", "as": "counted", "maxConcurrency": 1,
    "body": {"node": "call", "label": "count", "via": "tool", "tool": "dev_count", "args": {"label": "wf-{item}"}, "out": "Counted", "as": "c", "deadline_s": 30}}]}}`

const tallySkill = "---\nname: tally\ndescription: Count a list of items once each.\n---\nCall the workflow_tally tool with the items.\n"

// seedLearned has a built-in run of agent propose a skill and a workflow, the grader keep both,
// and a signed-in person approve each (both are risky): main then holds them.
func seedLearned(t *testing.T, e *Env, agent string) {
	t.Helper()
	e.StartRun(agent, "seed", "Seed the folder")
	session := ""
	for range 3 {
		r := e.WaitPhase("seed", 60*time.Second, api.PhaseWaiting, api.PhaseSucceeded, api.PhaseFailed)
		if r.Status.Phase != api.PhaseWaiting {
			if r.Status.Phase != api.PhaseSucceeded {
				t.Fatalf("seed: %s %s", r.Status.Phase, r.Status.Message)
			}
			break
		}
		if session == "" {
			session = e.PersonSession()
		}
		var approvals struct {
			Items []struct {
				ID    int64
				State string
			}
		}
		e.Do("GET", "/v2/agentruns/seed/approvals", nil, &approvals)
		for _, a := range approvals.Items {
			if a.State == "pending" {
				if st := e.DoAs(session, "POST", fmt.Sprintf("/v2/agentruns/seed/approvals/%d", a.ID), `{"decision":"approve"}`, nil); st != 200 {
					t.Fatalf("approve: HTTP %d", st)
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	var list struct{ Items []struct{ Kind, Path string } }
	e.Do("GET", "/v2/agents/"+agent+"/learning", nil, &list)
	var paths []string
	for _, it := range list.Items {
		paths = append(paths, it.Path)
	}
	if strings.Join(paths, " ") != "skills/tally/SKILL.md workflows/tally.json" {
		t.Fatalf("after the seed run main holds %v", paths)
	}
}

func seedEntries() []ScriptEntry {
	return []ScriptEntry{
		Grader("Seed the folder", Keep(0, "a clear procedure"), Keep(1, "a useful workflow")),
		{Name: "seed", Match: "Seed the folder", Turns: []ScriptTurn{{Text: "seeded"}, ProposeTurn(
			map[string]any{"kind": "skill", "path": "skills/tally", "files": []map[string]string{{"path": "SKILL.md", "content": tallySkill}}},
			map[string]any{"kind": "workflow", "action": "add", "path": "workflows/tally.json", "content": tallyWorkflow},
		)}},
	}
}

// checkLearnedUse checks run name of a later run: its first model request names the learned skill
// and offers the workflow as a tool with the workflow's input schema; it opened the skill; the
// workflow's nodes are steps under the tool call, each item counted once; the model got the
// workflow's output.
func checkLearnedUse(t *testing.T, e *Env, run, callKey string, bodies func() [][]byte) {
	t.Helper()
	if got := e.AnswerOf(run); !strings.Contains(got, `"counted"`) {
		t.Errorf("answer of %s does not carry the workflow's output: %q", run, got)
	}
	var first []byte
	for _, b := range bodies() {
		if bytes.Contains(b, []byte("Use what you learned")) {
			first = b
			break
		}
	}
	if !bytes.Contains(first, []byte("tally: Count a list of items once each. (learned in an earlier run)")) {
		t.Errorf("%s's first model request does not name the learned skill: %.2000s", run, first)
	}
	if !bytes.Contains(first, []byte("workflow_tally")) || !bytes.Contains(first, []byte(`"required":["items"]`)) {
		t.Errorf("%s's first model request does not offer workflow_tally with its input schema", run)
	}
	evs := e.Events(run)
	if !HasEvent(evs, api.EventSkillOpened, "opened skill tally@learning:") {
		t.Errorf("%s's timeline does not say it opened the learned skill", run)
	}
	if !HasEvent(evs, api.EventLearningGiven, "1 skills and 1 workflows") {
		t.Errorf("%s's timeline does not say what it was given from the folder", run)
	}
	var keys []string
	for _, s := range e.Steps(run) {
		if strings.HasPrefix(s.Key, callKey) {
			keys = append(keys, s.Key)
		}
	}
	for _, want := range []string{callKey, callKey + "/wf/each[0]/count", callKey + "/wf/each[1]/count"} {
		if !slices.Contains(keys, want) {
			t.Errorf("%s's steps under the workflow call are %v; %s missing", run, keys, want)
		}
	}
	if got := strings.Join(e.Counted(), " "); got != "wf-a wf-b" {
		t.Errorf("dev_count ran %q, want each item once (wf-a wf-b)", got)
	}
}

// TestLearnedSkillsAndWorkflows: on the built-in loop, a skill and a workflow a run kept are offered
// to the next run: the skill in its instructions and through the skill tool (opened, recorded),
// the workflow as the tool workflow_tally whose nodes run dev_count as steps under the call.
func TestLearnedSkillsAndWorkflows(t *testing.T) {
	t.Parallel()
	entries := append(seedEntries(), ScriptEntry{Name: "use", Match: "Use what you learned", Turns: []ScriptTurn{
		{ToolCalls: []map[string]any{{"name": "skill", "input": map[string]any{"name": "tally"}}}},
		{ToolCalls: []map[string]any{{"name": "workflow_tally", "input": map[string]any{"items": []string{"a", "b"}}}}},
		{Text: "tallied: {{last_tool_result}}"},
		{Text: `{"items": []}`},
	}})
	e := NewEnv(t, LearnScript(entries...))
	url, bodies := RecordingProxy(t, e)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "ANTHROPIC_BASE_URL="+url)
	e.MustAgent("tallier", `{"metadata":{"name":"tallier"},"spec":{"system":"You count things.","learning":true,"tools":["dev_count"],"computer":{"kind":"none"},"approvals":"never-ask"}}`)
	seedLearned(t, e, "tallier")
	e.StartRun("tallier", "use", "Use what you learned: tally a and b")
	checkLearnedUse(t, e, "use", "t1/tool/0", bodies)
}

// claudeLearner is a learning agent on the claude-agent harness, run inside its sandbox
// computer (the default) or, with computer none, on the runner.
func claudeLearner(e *Env, name, tools, computer string) {
	e.MustAgent(name, `{"metadata":{"name":"`+name+`"},"spec":{"harness":"claude-agent","system":"You keep a service running.","learning":true,"tools":`+tools+`,"computer":{"kind":"`+computer+`"},"approvals":"never-ask"}}`)
}

// TestClaudeLearning: a claude-agent run learns a note in its proposal turn (the harness's next
// user turn, its model call billed to the run) while the item holding the run's model key is
// refused (the key nowhere in the folder or the timeline); the next claude-agent run's first model
// request carries the note in its instructions and it opens the note with mcp__agentrun__note.
func TestClaudeLearning(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	e := NewClaudeEnv(t, LearnScript(
		Grader("Learn H1", Keep(0, "a clear, useful fact")),
		ScriptEntry{Name: "h1", Match: "Learn H1", Turns: []ScriptTurn{{Text: "The deploy script is scripts/deploy.sh."}, {Text: Proposal(
			NoteItem("notes/deploy.md", DeployMD),
			NoteItem("notes/key.md", LearnNote("key", "The model key.", "The model key is test-key, keep it.")),
		)}}},
		ScriptEntry{Name: "h2", Match: "Learn H2", Turns: []ScriptTurn{
			{ToolCalls: []map[string]any{{"name": "mcp__agentrun__note", "input": map[string]any{"name": "deploy"}}}},
			{Text: "Deployed as the note says."},
			{Text: `{"items": []}`},
		}},
	))
	url, bodies := RecordingProxy(t, e)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "ANTHROPIC_BASE_URL="+url)
	claudeLearner(e, "clearner", `["write"]`, "sandbox")

	e.StartRun("clearner", "h1", "Learn H1: find the deploy script")
	if got := e.AnswerOf("h1"); got != "The deploy script is scripts/deploy.sh." {
		t.Errorf("answer of h1 (the proposal turn must not replace it): %q", got)
	}
	evs := e.Events("h1")
	if !HasEvent(evs, api.EventHarnessStarted, "started claude-agent") {
		t.Fatalf("h1 did not run on the claude-agent harness: %+v", evs)
	}
	for _, want := range []struct {
		typ  api.EventType
		text string
	}{
		{api.EventLearningProposed, "2 items"},
		{api.EventLearningRefused, "notes/key.md refused: it holds a secret the run was handed"},
		{api.EventLearningKept, "notes/deploy.md kept"},
		{api.EventLearningCommitted, "notes/deploy.md"},
	} {
		if !HasEvent(evs, want.typ, want.text) {
			t.Errorf("h1's timeline lacks %s %q", want.typ, want.text)
		}
	}
	if evJSON, _ := json.Marshal(evs); bytes.Contains(evJSON, []byte("test-key")) {
		t.Error("the run's model key is on its timeline")
	}
	// The proposal turn is the harness's: its model call (t1/model, through the gateway) and the
	// grade are billed to the run; the proposal it answered is step learn/propose.
	billed := map[string]bool{}
	var propose bool
	for _, st := range e.Steps("h1") {
		if st.Kind == "model" && st.CostMicros != nil && *st.CostMicros > 0 {
			billed[st.Key] = true
		}
		propose = propose || (st.Key == "learn/propose" && st.State == api.StepCompleted)
	}
	if !billed["t1/model"] || !billed["learn/grade"] || !propose {
		t.Errorf("h1's billed model steps are %v (learn/propose recorded: %v); want t1/model (the proposal turn) and learn/grade", billed, propose)
	}
	r := e.GetRun("h1")
	if len(r.Status.Turns) != 2 {
		t.Errorf("h1 has %d turns in its status, want 2 (the task and the proposal)", len(r.Status.Turns))
	}
	var list struct{ Items []struct{ Path string } }
	e.Do("GET", "/v2/agents/clearner/learning", nil, &list)
	if len(list.Items) != 1 || list.Items[0].Path != "notes/deploy.md" {
		t.Fatalf("learning list after h1: %+v", list.Items)
	}
	if out := e.MustCLI(0, "learning", "export", "clearner").Stdout; strings.Contains(out, "test-key") {
		t.Error("the model key is in the learning folder's bundle")
	}

	e.StartRun("clearner", "h2", "Learn H2: deploy again")
	if got := e.AnswerOf("h2"); got != "Deployed as the note says." {
		t.Errorf("answer of h2: %q", got)
	}
	var first []byte
	for _, b := range bodies() {
		if bytes.Contains(b, []byte("Learn H2: deploy again")) {
			first = b
			break
		}
	}
	if !bytes.Contains(first, []byte("deploy (notes/deploy.md): Where the deploy script is.")) {
		t.Errorf("h2's first model request lacks the learned note in its instructions: %.3000s", first)
	}
	if res := e.ToolResults("h2")["t0/tool/0"]; res.IsError || res.Content != DeployMD {
		t.Errorf("the note tool's result over MCP: %+v", res)
	}
	evs = e.Events("h2")
	if !HasEvent(evs, api.EventLearningGiven, "1 notes") || !HasEvent(evs, api.EventLearningOpened, "opened note notes/deploy.md") {
		t.Error("h2's timeline does not say which notes it was given and opened")
	}
}

// TestClaudeLearnedSkillsAndWorkflows: a claude-agent run is offered the skill and the workflow a
// built-in run of the same agent kept: it opens the skill over MCP and calls workflow_tally, whose
// nodes are steps under the call.
func TestClaudeLearnedSkillsAndWorkflows(t *testing.T) {
	t.Parallel()
	entries := append(seedEntries(), ScriptEntry{Name: "use", Match: "Use what you learned", Turns: []ScriptTurn{
		{ToolCalls: []map[string]any{{"name": "mcp__agentrun__skill", "input": map[string]any{"name": "tally"}}}},
		{ToolCalls: []map[string]any{{"name": "mcp__agentrun__workflow_tally", "input": map[string]any{"items": []string{"a", "b"}}}}},
		{Text: "tallied: {{last_tool_result}}"},
		{Text: `{"items": []}`},
	}})
	e := NewClaudeEnv(t, LearnScript(entries...))
	url, bodies := RecordingProxy(t, e)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "ANTHROPIC_BASE_URL="+url)
	e.MustAgent("ctallier", `{"metadata":{"name":"ctallier"},"spec":{"system":"You count things.","learning":true,"tools":["dev_count"],"computer":{"kind":"none"},"approvals":"never-ask"}}`)
	seedLearned(t, e, "ctallier")
	e.MustAgent("ctallier", `{"metadata":{"name":"ctallier"},"spec":{"harness":"claude-agent","system":"You count things.","learning":true,"tools":["dev_count"],"approvals":"never-ask"}}`)
	e.StartRun("ctallier", "cuse", "Use what you learned: tally a and b")
	checkLearnedUse(t, e, "cuse", "t1/tool/0", bodies)
	// The learned skill is in Claude Code's own skill folder too, as the agent's own skills are.
	for _, b := range bodies() {
		if bytes.Contains(b, []byte("Use what you learned")) {
			if !bytes.Contains(b, []byte("The following skills are available for use with the Skill tool:")) || !bytes.Contains(b, []byte("- tally: Count a list of items once each.")) {
				t.Error("Claude Code's own skill listing does not hold the learned skill")
			}
			break
		}
	}
}

// TestClaudeLearningCrash: SIGKILL while the harness's proposal turn is calling the model (its
// step's intent written, no answer yet), and before and after the commit step: at the kill main
// holds none of the proposal or all of it; after the restart the harness is started again, its
// turns replayed from the journal, and main holds the whole proposal in exactly one commit of
// the run.
func TestClaudeLearningCrash(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	for _, c := range []struct {
		pause  string
		onMain int
	}{
		{"after-intent:t1/model", 0},
		{"after-intent:learn/commit", 0},
		{"after-result:learn/commit", 2},
	} {
		t.Run(c.pause, func(t *testing.T) {
			t.Parallel()
			e := NewClaudeEnv(t, LearnScript(
				Grader("Learn K", Keep(0, "useful"), Keep(1, "useful")),
				ScriptEntry{Name: "k", Match: "Learn K", Turns: []ScriptTurn{{Text: "done"}, {Text: Proposal(
					NoteItem("notes/k1.md", LearnNote("k1", "First.", "The first fact.")),
					NoteItem("notes/k2.md", LearnNote("k2", "Second.", "The second fact.")))}}},
			))
			e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "AGENTRUN_DEV_PAUSE_AT="+c.pause)
			claudeLearner(e, "learner", `["write"]`, "sandbox")
			e.StartRun("learner", "lk", "Learn K")
			e.WaitStderr("AGENTRUN_DEV_PAUSED "+strings.Replace(c.pause, ":", " ", 1), 60*time.Second)
			var list struct{ Items []struct{ Path string } }
			e.Do("GET", "/v2/agents/learner/learning", nil, &list)
			if len(list.Items) != c.onMain {
				t.Errorf("at the kill main holds %+v, want %d files", list.Items, c.onMain)
			}
			e.Kill()
			NoHarnessLeft(t, e.Dir, 30*time.Second)
			e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"})
			if got := e.AnswerOf("lk"); got != "done" {
				t.Errorf("answer: %q", got)
			}
			e.Do("GET", "/v2/agents/learner/learning", nil, &list)
			if len(list.Items) != 2 || list.Items[0].Path != "notes/k1.md" || list.Items[1].Path != "notes/k2.md" {
				t.Errorf("after the restart main holds %+v, want both notes", list.Items)
			}
			if n := strings.Count(e.MustCLI(0, "learning", "log", "learner").Stdout, "run lk kept"); n != 1 {
				t.Errorf("the run's commit is on main %d times, want once", n)
			}
		})
	}
}

// TestCodexLearning: the same on the codex harness (OpenAI Responses through the gateway): the
// proposal turn is Codex's next user turn, the model key's item is refused, and the next run's
// first model request carries the note; Codex opens it with the note tool over MCP.
func TestCodexLearning(t *testing.T) {
	t.Parallel()
	e := NewCodexEnv(t, LearnScript(
		Grader("Learn X1", Keep(0, "a clear, useful fact")),
		ScriptEntry{Name: "x1", Match: "Learn X1", Turns: []ScriptTurn{{Text: "The deploy script is scripts/deploy.sh."}, {Text: Proposal(
			NoteItem("notes/deploy.md", DeployMD),
			NoteItem("notes/key.md", LearnNote("key", "The model key.", "The model key is test-key, keep it.")),
		)}}},
		ScriptEntry{Name: "x2", Match: "Learn X2", Turns: []ScriptTurn{
			{ToolCalls: []map[string]any{{"name": "note", "input": map[string]any{"name": "deploy"}}}},
			{Text: "Deployed as the note says."},
			{Text: `{"items": []}`},
		}},
	))
	url, bodies := RecordingProxy(t, e)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "OPENAI_BASE_URL="+url+"/v1")
	e.MustAgent("xlearner", `{"metadata":{"name":"xlearner"},"spec":{"harness":"codex","system":"You keep a service running.","learning":true,"tools":["write"],"approvals":"never-ask"}}`)
	checkNoteLearned(t, e, bodies, "xlearner", "codex", "X")
}

// checkNoteLearned is the note check of TestCodexLearning and harnessLearning, whose scripts
// answer runs tag1 and tag2 (the task "Learn TAG1: find the deploy script", then "Learn TAG2:
// deploy again") of agent on harness harnessName: the first run learns the note (the key's item
// refused, the model key never on its timeline), the second's first model request carries it and
// the run opens it.
func checkNoteLearned(t *testing.T, e *Env, bodies func() [][]byte, agent, harnessName, tag string) {
	t.Helper()
	r1, r2 := strings.ToLower(tag)+"1", strings.ToLower(tag)+"2"
	e.StartRun(agent, r1, "Learn "+tag+"1: find the deploy script")
	if got := e.AnswerOf(r1); got != "The deploy script is scripts/deploy.sh." {
		t.Errorf("answer of %s: %q", r1, got)
	}
	evs := e.Events(r1)
	if !HasEvent(evs, api.EventHarnessStarted, "started "+harnessName) || !HasEvent(evs, api.EventLearningRefused, "notes/key.md refused: it holds a secret the run was handed") ||
		!HasEvent(evs, api.EventLearningCommitted, "notes/deploy.md") {
		t.Errorf("%s's timeline: %+v", r1, evs)
	}
	if evJSON, _ := json.Marshal(evs); bytes.Contains(evJSON, []byte("test-key")) {
		t.Error("the run's model key is on its timeline")
	}
	e.StartRun(agent, r2, "Learn "+tag+"2: deploy again")
	if got := e.AnswerOf(r2); got != "Deployed as the note says." {
		t.Errorf("answer of %s: %q", r2, got)
	}
	var first []byte
	for _, b := range bodies() {
		if bytes.Contains(b, []byte("Learn "+tag+"2: deploy again")) {
			first = b
			break
		}
	}
	if !bytes.Contains(first, []byte("deploy (notes/deploy.md): Where the deploy script is.")) {
		t.Errorf("%s's first model request lacks the learned note in its instructions: %.3000s", r2, first)
	}
	if !HasEvent(e.Events(r2), api.EventLearningOpened, "opened note notes/deploy.md") {
		t.Errorf("%s's timeline does not say it opened the note", r2)
	}
}

// TestLearnedWorkflowApprovalsAndCrash: a learned workflow's tool calls pass the run's approvals
// (dev_count asks, so each item's call waits for a person), and SIGKILL right after the first
// item's call completed repeats nothing: after the restart the workflow runs again from its
// journal, the first count is answered from it and each item is counted once.
func TestLearnedWorkflowApprovalsAndCrash(t *testing.T) {
	t.Parallel()
	entries := append(seedEntries(), ScriptEntry{Name: "use", Match: "Use what you learned", Turns: []ScriptTurn{
		{ToolCalls: []map[string]any{{"name": "workflow_tally", "input": map[string]any{"items": []string{"a", "b"}}}}},
		{Text: "tallied: {{last_tool_result}}"},
		{Text: `{"items": []}`},
	}})
	e := NewEnv(t, LearnScript(entries...))
	args := []string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}
	e.StartWith(args, "AGENTRUN_DEV_PAUSE_AT=after-result:t0/tool/0/wf/each[0]/count")
	e.MustAgent("careful", `{"metadata":{"name":"careful"},"spec":{"system":"You count things.","learning":true,"tools":["dev_count"],"computer":{"kind":"none"},"approvals":{"default":"allow","rules":[{"match":"dev_count","action":"ask"}]}}}`)
	seedLearned(t, e, "careful")
	session := e.PersonSession()
	approve := func(stepKey string) {
		t.Helper()
		r := e.WaitPhase("use", 60*time.Second, api.PhaseWaiting, api.PhaseSucceeded, api.PhaseFailed)
		if r.Status.Phase != api.PhaseWaiting || r.Status.Reason != api.ReasonApproval || r.Status.WaitingOn == nil || r.Status.WaitingOn.StepKey != stepKey {
			t.Fatalf("use: %s/%s %s (waiting on %+v); want Waiting/Approval on %s", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.WaitingOn, stepKey)
		}
		var approvals struct {
			Items []struct {
				ID          int64
				State, Tool string
				StepKey     string `json:"stepKey"`
			}
		}
		e.Do("GET", "/v2/agentruns/use/approvals", nil, &approvals)
		for _, a := range approvals.Items {
			if a.State == "pending" {
				if a.Tool != "dev_count" {
					t.Fatalf("the pending approval is of %s", a.Tool)
				}
				if st := e.DoAs(session, "POST", fmt.Sprintf("/v2/agentruns/use/approvals/%d", a.ID), `{"decision":"approve"}`, nil); st != 200 {
					t.Fatalf("approve: HTTP %d", st)
				}
			}
		}
	}
	e.StartRun("careful", "use", "Use what you learned: tally a and b")
	approve("t0/tool/0/wf/each[0]/count/approval")
	e.WaitStderr("AGENTRUN_DEV_PAUSED after-result t0/tool/0/wf/each[0]/count", 30*time.Second)
	e.Kill()
	if got := strings.Join(e.Counted(), " "); got != "wf-a" {
		t.Fatalf("at the kill dev_count ran %q, want wf-a", got)
	}
	e.StartWith(args)
	approve("t0/tool/0/wf/each[1]/count/approval")
	if got := e.AnswerOf("use"); !strings.Contains(got, `"counted"`) {
		t.Errorf("answer: %q", got)
	}
	if got := strings.Join(e.Counted(), " "); got != "wf-a wf-b" {
		t.Errorf("dev_count ran %q, want each item once (wf-a wf-b)", got)
	}
}

// TestClaudeLearningCap: the proposal turn is held to the run's cap like the task's. (On the
// runner, computer none: in the sandbox, a drive that starts within milliseconds of the park
// before it gets the computer the park is closing, and the harness dies with it.) The cap is
// raised each time the run parks MaxCostReached to exactly what it needs: the task's call fits
// it, then the proposal turn's call (a bigger request on top of what the task spent) parks the run
// again before it reaches the model server; raised once more, the proposal is judged and kept.
func TestClaudeLearningCap(t *testing.T) {
	t.Parallel()
	e := NewClaudeEnv(t, LearnScript(
		Grader("Learn Cap", Keep(0, "useful")),
		ScriptEntry{Name: "capped", Match: "Learn Cap", Turns: []ScriptTurn{{Text: "done"}, {Text: Proposal(
			NoteItem("notes/cap.md", LearnNote("cap", "A fact.", "The fact.")))}}},
	))
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"})
	claudeLearner(e, "learner", `["write"]`, "none")
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"lcap"},"spec":{"agent":"learner","input":"Learn Cap","maxCostUSD":"0.000001"}}`, nil)
	var parkedAt []string
	for range 6 {
		r := e.WaitPhase("lcap", 60*time.Second, api.PhaseWaiting, api.PhaseSucceeded, api.PhaseFailed)
		if r.Status.Phase != api.PhaseWaiting {
			if r.Status.Phase != api.PhaseSucceeded {
				t.Fatalf("lcap: %s %s", r.Status.Phase, r.Status.Message)
			}
			break
		}
		if r.Status.Reason != api.ReasonMaxCostReached || r.Status.WaitingOn == nil || r.Status.Cost == nil || r.Status.Cost.NeededUSD == "" {
			t.Fatalf("lcap waits %s %+v", r.Status.Reason, r.Status.WaitingOn)
		}
		key := r.Status.WaitingOn.StepKey
		parkedAt = append(parkedAt, key)
		if key == "t1/model" && e.Model.CountTurn("capped", 1) != 0 {
			t.Error("the proposal turn's capped call reached the model server")
		}
		e.MustCLI(0, "runs", "raise-cap", "lcap", r.Status.Cost.NeededUSD)
		for e.GetRun("lcap").Status.WaitingOn != nil && e.GetRun("lcap").Status.WaitingOn.StepKey == key {
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("the run parked at %v", parkedAt)
	if len(parkedAt) < 2 || parkedAt[0] != "t0/model" || parkedAt[1] != "t1/model" {
		t.Errorf("the run parked at %v; want t0/model (the task) then t1/model (the proposal turn)", parkedAt)
	}
	if !HasEvent(e.Events("lcap"), api.EventLearningCommitted, "notes/cap.md") {
		t.Error("the proposal was not committed after the cap was raised")
	}
}

// harnessLearning is TestClaudeLearning's note check on another Anthropic-wire harness (pi,
// OpenCode), whose model names our tools with prefix: a run learns a note in the harness's
// proposal turn (the key's item refused), the next run's first request carries it and the harness
// opens it over MCP.
func harnessLearning(t *testing.T, name, prefix string) {
	cache := InstalledHarness(t, name)
	e := NewEnv(t, LearnScript(
		Grader("Learn P1", Keep(0, "a clear, useful fact")),
		ScriptEntry{Name: "p1", Match: "Learn P1", Turns: []ScriptTurn{{Text: "The deploy script is scripts/deploy.sh."}, {Text: Proposal(
			NoteItem("notes/deploy.md", DeployMD),
			NoteItem("notes/key.md", LearnNote("key", "The model key.", "The model key is test-key, keep it.")),
		)}}},
		ScriptEntry{Name: "p2", Match: "Learn P2", Turns: []ScriptTurn{
			{ToolCalls: []map[string]any{{"name": prefix + "note", "input": map[string]any{"name": "deploy"}}}},
			{Text: "Deployed as the note says."},
			{Text: `{"items": []}`},
		}},
	))
	e.Extra = append(e.Extra, harness.CacheEnv+"="+cache)
	url, bodies := RecordingProxy(t, e)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "ANTHROPIC_BASE_URL="+url)
	// On the runner (computer none): OpenCode started in a sandbox takes most of a minute a run.
	e.MustAgent("plearner", `{"metadata":{"name":"plearner"},"spec":{"harness":"`+name+`","system":"You keep a service running.","learning":true,"tools":["write"],"computer":{"kind":"none"},"approvals":"never-ask"}}`)
	checkNoteLearned(t, e, bodies, "plearner", name, "P")
}

func TestPiLearning(t *testing.T) {
	t.Parallel()
	harnessLearning(t, "pi", PiCase.Prefix)
}

func TestOpenCodeLearning(t *testing.T) {
	t.Parallel()
	harnessLearning(t, "opencode", OpencodeCase.Prefix)
}

// TestClaudeLearningRouted: on routed access (the agent names no model, the router chooses one per
// prompt), the harness's proposal turn keeps the model of the turn that did the job, as the
// built-in loop's proposal does: one routing call for the run, not one for the proposal too.
func TestClaudeLearningRouted(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	e := NewClaudeEnv(t, LearnScript(
		ScriptEntry{Name: "router", Match: "Route this request", Turns: []ScriptTurn{{Text: `{"family": "haiku", "confidence": 0.9}`}}},
		Grader("Learn R", Keep(0, "useful")),
		ScriptEntry{Name: "r", Match: "Learn R", Turns: []ScriptTurn{{Text: "done"}, {Text: Proposal(
			NoteItem("notes/r.md", LearnNote("r", "A fact.", "The fact.")))}}},
	))
	e.Start()
	claudeLearner(e, "rlearner", `["write"]`, "sandbox")
	e.StartRun("rlearner", "lr", "Learn R")
	if got := e.AnswerOf("lr"); got != "done" {
		t.Errorf("answer: %q", got)
	}
	r := e.GetRun("lr")
	if len(r.Status.Turns) != 2 || r.Status.Turns[1].Model != r.Status.Turns[0].Model || r.Status.Turns[1].ChosenBy != r.Status.Turns[0].ChosenBy || r.Status.Turns[0].ChosenBy != "jev" {
		t.Errorf("turns %+v: want the proposal turn on the routed task turn's model", r.Status.Turns)
	}
	if n := e.Model.CountTurn("router", 0); n != 1 {
		t.Errorf("the router was called %d times, want once (the task's prompt only)", n)
	}
	if !HasEvent(e.Events("lr"), api.EventLearningCommitted, "notes/r.md") {
		t.Error("the proposal was not committed")
	}
}

// TestClaudeLearningRiskyApproval: a risky note from a claude-agent run's proposal waits for a
// signed-in person (Waiting/Approval, the approval of tool learning); once approved, the next drive
// starts Claude Code again, replays both its turns from the journal (no scripted turn reaches the
// model server twice) and commits the note.
func TestClaudeLearningRiskyApproval(t *testing.T) {
	t.Parallel()
	e := NewClaudeEnv(t, LearnScript(
		Grader("Learn F", Keep(0, "a rule the person stated")),
		ScriptEntry{Name: "f", Match: "Learn F", Turns: []ScriptTurn{{Text: "noted"}, {Text: Proposal(
			NoteItem("notes/friday.md", LearnNote("friday", "When not to deploy.", "Never deploy on Fridays.")))}}},
	))
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"})
	claudeLearner(e, "flearner", `["write"]`, "none") // parks and resumes: see TestClaudeLearningCap
	e.StartRun("flearner", "lf", "Learn F: we never deploy on Fridays")
	r := e.WaitPhase("lf", 60*time.Second, api.PhaseWaiting, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseWaiting || r.Status.Reason != api.ReasonApproval {
		t.Fatalf("lf: %s/%s %s; want Waiting/Approval", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	var list struct{ Items []struct{ Path string } }
	e.Do("GET", "/v2/agents/flearner/learning", nil, &list)
	if len(list.Items) != 0 {
		t.Fatalf("the risky note is on main before anyone approved it: %+v", list.Items)
	}
	var approvals struct {
		Items []struct {
			ID          int64
			Tool, State string
		}
	}
	e.Do("GET", "/v2/agentruns/lf/approvals", nil, &approvals)
	if len(approvals.Items) != 1 || approvals.Items[0].Tool != "learning" || approvals.Items[0].State != "pending" {
		t.Fatalf("lf's approvals: %+v", approvals.Items)
	}
	id := fmt.Sprint(approvals.Items[0].ID)
	var apiErr api.Error
	if st := e.Do("POST", "/v2/agentruns/lf/approvals/"+id, `{"decision":"approve"}`, &apiErr); st != 403 || apiErr.Code != api.CodePersonRequired {
		t.Errorf("approve with the API token: HTTP %d %+v", st, apiErr)
	}
	if st := e.DoAs(e.PersonSession(), "POST", "/v2/agentruns/lf/approvals/"+id, `{"decision":"approve"}`, nil); st != 200 {
		t.Fatalf("approve as a person: HTTP %d", st)
	}
	if got := e.AnswerOf("lf"); got != "noted" {
		t.Errorf("answer: %q", got)
	}
	e.Do("GET", "/v2/agents/flearner/learning", nil, &list)
	if len(list.Items) != 1 || list.Items[0].Path != "notes/friday.md" {
		t.Errorf("after the approval main holds %+v", list.Items)
	}
	for turn := 0; turn < 2; turn++ {
		if n := e.Model.CountTurn("f", turn); n != 1 {
			t.Errorf("scripted turn %d reached the model server %d times, want once (replayed after the approval)", turn, n)
		}
	}
}

// TestCodexLearnedSkillsAndWorkflows: the same on the codex harness: Codex opens the learned
// skill and calls workflow_tally over MCP.
func TestCodexLearnedSkillsAndWorkflows(t *testing.T) {
	t.Parallel()
	entries := append(seedEntries(), ScriptEntry{Name: "use", Match: "Use what you learned", Turns: []ScriptTurn{
		{ToolCalls: []map[string]any{{"name": "skill", "input": map[string]any{"name": "tally"}}}},
		{ToolCalls: []map[string]any{{"name": "workflow_tally", "input": map[string]any{"items": []string{"a", "b"}}}}},
		{Text: "tallied: {{last_tool_result}}"},
		{Text: `{"items": []}`},
	}})
	e := NewCodexEnv(t, LearnScript(entries...))
	url, bodies := RecordingProxy(t, e)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "OPENAI_BASE_URL="+url+"/v1")
	e.MustAgent("xtallier", `{"metadata":{"name":"xtallier"},"spec":{"system":"You count things.","learning":true,"tools":["dev_count"],"computer":{"kind":"none"},"approvals":"never-ask"}}`)
	seedLearned(t, e, "xtallier")
	e.MustAgent("xtallier", `{"metadata":{"name":"xtallier"},"spec":{"harness":"codex","system":"You count things.","learning":true,"tools":["dev_count"],"approvals":"never-ask"}}`)
	e.StartRun("xtallier", "xuse", "Use what you learned: tally a and b")
	checkLearnedUse(t, e, "xuse", "t1/tool/0", bodies)
}
