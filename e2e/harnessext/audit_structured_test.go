package harnessext

import (
	. "agentrun.dev/agentrun/e2e/e2etest"
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/model/fake"
)

// Issue 24, item 2: every structured answer is a forced tool call with its schema, validated,
// with one corrective retry that says what was wrong, then a clear failure.

// TestStructuredLearning: on both wires, the learning turn's Proposal and grade are forced calls
// of their tools; a Proposal answered in kind is kept; one answered first with text ("Done: ...")
// gets a corrective retry (step learn/propose/retry, billed) naming what was wrong and is kept;
// one wrong twice is refused, naming the schema's problem, and nothing is committed.
func TestStructuredLearning(t *testing.T) {
	t.Parallel()
	for _, wire := range []string{fake.FormatAnthropic, fake.FormatOpenAI} {
		t.Run(wire, func(t *testing.T) {
			t.Parallel()
			e := NewEnv(t, LearnScript(
				Grader("Learn S1", Keep(0, "a clear, useful fact")),
				Grader("Learn S2", Keep(0, "a clear, useful fact")),
				ScriptEntry{Name: "s1", Match: "Learn S1", Turns: []ScriptTurn{{Text: "done"},
					ProposeTurn(NoteItem("notes/s1.md", LearnNote("s1", "Fact one.", "The first fact.")))}},
				ScriptEntry{Name: "s2", Match: "Learn S2", Turns: []ScriptTurn{{Text: "done"},
					{Text: "Done: I would keep where the deploy script is."},
					ProposeTurn(NoteItem("notes/s2.md", LearnNote("s2", "Fact two.", "The second fact.")))}},
				ScriptEntry{Name: "s3", Match: "Learn S3", Turns: []ScriptTurn{{Text: "done"},
					{Text: "Done: nothing to keep."},
					{ToolCalls: []map[string]any{{"name": "propose_learning", "input": map[string]any{"items": []map[string]any{{"kind": "memo", "path": "notes/s3.md"}}}}}}}},
			))
			url, bodies := RecordingProxy(t, e)
			if wire == fake.FormatOpenAI {
				e.Extra = []string{"OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=" + url + "/v1", "AGENTRUN_DEV=1"}
				e.Start()
			} else {
				e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "ANTHROPIC_BASE_URL="+url)
			}
			e.MustAgent("learner", LearnerAgent)

			billedSteps := func(run string) map[string]bool {
				out := map[string]bool{}
				for _, st := range e.Steps(run) {
					if st.Kind == "model" && st.CostMicros != nil && *st.CostMicros > 0 {
						out[st.Key] = true
					}
				}
				return out
			}

			// Answered in kind: one call each for the Proposal and the grade, both forcing their tool.
			e.StartRun("learner", "s1", "Learn S1: note a fact")
			e.AnswerOf("s1")
			if !HasEvent(e.Events("s1"), api.EventLearningCommitted, "notes/s1.md") {
				t.Errorf("s1 did not commit its proposal: %v", e.Events("s1"))
			}
			if b := billedSteps("s1"); !b["learn/propose"] || !b["learn/grade"] || b["learn/propose/retry"] {
				t.Errorf("s1's billed model steps are %v; want learn/propose and learn/grade, no retry", b)
			}
			forced := map[string]string{}
			for _, c := range e.Model.Calls() {
				if c.Format != wire {
					t.Errorf("call %s turn %d came as %s, want %s", c.Entry, c.Turn, c.Format, wire)
				}
				if c.Entry == "s1" && c.Turn == 1 || c.Entry == "grade Learn S1" {
					forced[c.Entry] = c.ForcedTool
				}
			}
			if forced["s1"] != "propose_learning" || forced["grade Learn S1"] != "grade_learning" {
				t.Errorf("the forced tools of s1's proposal and grade: %v; want propose_learning and grade_learning", forced)
			}

			// Text first: the corrective retry says so, and the retried answer is kept.
			e.StartRun("learner", "s2", "Learn S2: note another fact")
			e.AnswerOf("s2")
			if evs := e.Events("s2"); !HasEvent(evs, api.EventLearningCommitted, "notes/s2.md") || HasEvent(evs, api.EventLearningRefused, "") {
				t.Errorf("s2 did not commit its retried proposal: %v", evs)
			}
			if b := billedSteps("s2"); !b["learn/propose"] || !b["learn/propose/retry"] || !b["learn/grade"] {
				t.Errorf("s2's billed model steps are %v; want learn/propose, learn/propose/retry and learn/grade", b)
			}
			var retry []byte
			for _, b := range bodies() {
				if bytes.Contains(b, []byte("Learn S2")) && bytes.Contains(b, []byte("Answer again by calling the tool propose_learning")) {
					retry = b
				}
			}
			if !bytes.Contains(retry, []byte(`not a call of the tool propose_learning but text: \"Done: I would keep where the deploy script is.\"`)) {
				t.Errorf("s2's retry does not say what was wrong with the first answer: %.3000s", retry)
			}
			if n := e.Model.CountTurn("s2", 2); n != 1 {
				t.Errorf("s2's retry was asked %d times, want once", n)
			}

			// Wrong twice: refused, naming the schema's problem; nothing committed.
			e.StartRun("learner", "s3", "Learn S3: keep nothing")
			e.AnswerOf("s3")
			evs := e.Events("s3")
			if !HasEvent(evs, api.EventLearningRefused, "not the propose_learning JSON asked for, after a corrective retry") || !HasEvent(evs, api.EventLearningRefused, "$.items[0].kind") ||
				HasEvent(evs, api.EventLearningCommitted, "") {
				t.Errorf("s3's timeline does not refuse the proposal naming $.items[0].kind: %v", evs)
			}
			var list struct{ Items []struct{ Path string } }
			e.Do("GET", "/v2/agents/learner/learning", nil, &list)
			if fmt.Sprint(list.Items) != "[{notes/s1.md} {notes/s2.md}]" {
				t.Errorf("the learning folder holds %v, want notes/s1.md and notes/s2.md", list.Items)
			}
		})
	}
}

// TestStructuredRouter: the routing call forces the tool route; an answer in kind routes the
// turn; a text answer gets one corrective retry; two wrong answers fall back, the timeline naming
// the schema's problem.
func TestStructuredRouter(t *testing.T) {
	t.Parallel()
	const script = `
entries:
  - name: route-kind
    match: "Route this request: in kind"
    turns:
      - tool_calls: [{name: route, input: {family: opus, confidence: 0.7}}]
  - name: route-corrected
    match: "Route this request: corrected"
    turns:
      - text: "haiku, surely"
      - tool_calls: [{name: route, input: {family: haiku, confidence: 0.6}}]
  - name: route-wrong
    match: "Route this request: wrong twice"
    turns:
      - text: "opus, I think"
      - tool_calls: [{name: route, input: {family: opus, confidence: 3}}]
  - name: task
    match: "task"
    turns:
      - text: "answered"
`
	e := NewEnv(t, script)
	e.Start()
	e.MustAgent("routed", `{"metadata":{"name":"routed"},"spec":{"model":{"access":"Server","families":[]},"computer":{"kind":"none"}}}`)
	cases := []struct {
		input, family, chosenBy, reason string
		calls                           int
	}{
		{"in kind task", "opus", "jev", "", 1},
		{"corrected task", "haiku", "jev", "", 2},
		{"wrong twice task", "sonnet", "fallback", "$.confidence: maximum: got 3, want 1", 2},
	}
	for i, c := range cases {
		name := fmt.Sprintf("r%d", i)
		e.StartRun("routed", name, c.input)
		r := e.WaitPhase(name, 30*time.Second, api.PhaseSucceeded, api.PhaseFailed)
		if r.Status.Phase != api.PhaseSucceeded || len(r.Status.Turns) != 1 {
			t.Errorf("%s: %s %s turns %+v", c.input, r.Status.Phase, r.Status.Message, r.Status.Turns)
			continue
		}
		if tr := r.Status.Turns[0]; tr.Family != c.family || tr.ChosenBy != c.chosenBy {
			t.Errorf("%s: turn %s chosen by %s, want %s by %s", c.input, tr.Family, tr.ChosenBy, c.family, c.chosenBy)
		}
		if c.reason != "" && !HasEvent(e.Events(name), api.EventTurnRouted, c.reason) {
			t.Errorf("%s: the timeline does not name the schema's problem (%q): %v", c.input, c.reason, e.Events(name))
		}
		calls := 0
		for _, mc := range e.Model.Calls() {
			if strings.HasPrefix(mc.FirstUser, fake.RouterPrefix+": "+c.input) {
				calls++
				if mc.ForcedTool != "route" {
					t.Errorf("%s: routing call %d forced %q (tool_choice %s), want route", c.input, mc.Turn, mc.ForcedTool, mc.ToolChoice)
				}
			}
		}
		if calls != c.calls {
			t.Errorf("%s: %d routing calls, want %d", c.input, calls, c.calls)
		}
		// The retry is a route step of its own (t0/route/retry), billed like the first.
		var keys []string
		for _, st := range e.Steps(name) {
			if strings.HasPrefix(st.Key, "t0/route") {
				keys = append(keys, st.Key)
				if st.CostMicros == nil || *st.CostMicros <= 0 {
					t.Errorf("%s: route step %s is not billed: %+v", c.input, st.Key, st)
				}
			}
		}
		want := "t0/route"
		if c.calls == 2 {
			want = "t0/route t0/route/retry"
		}
		if got := strings.Join(keys, " "); got != want {
			t.Errorf("%s: route steps %q, want %q", c.input, got, want)
		}
	}
}

// TestStructuredHarnessLearning: a harness's model cannot be forced to call a tool, so its
// Proposal turn's text is checked against the Proposal's schema; an answer that is not that JSON
// ("Done: ...") is structured by the server's own forced call (step learn/propose/structure,
// billed) from what the harness said, and what it proposes is kept.
func TestStructuredHarnessLearning(t *testing.T) {
	t.Parallel()
	e := NewClaudeEnv(t, LearnScript(
		Grader("Learn HS", Keep(0, "a clear, useful fact")),
		ScriptEntry{Name: "structure", Match: "Structure an agent's proposal", Turns: []ScriptTurn{
			ProposeTurn(NoteItem("notes/deploy.md", DeployMD))}},
		ScriptEntry{Name: "hs", Match: "Learn HS", Turns: []ScriptTurn{{Text: "The deploy script is scripts/deploy.sh."},
			{Text: "Done: later runs should know the deploy script is scripts/deploy.sh."}}},
	))
	url, bodies := RecordingProxy(t, e)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "ANTHROPIC_BASE_URL="+url)
	claudeLearner(e, "hlearner", `["write"]`, "none")
	e.StartRun("hlearner", "hs", "Learn HS: find the deploy script")
	if got := e.AnswerOf("hs"); got != "The deploy script is scripts/deploy.sh." {
		t.Errorf("answer of hs: %q", got)
	}
	evs := e.Events("hs")
	if !HasEvent(evs, api.EventHarnessStarted, "started claude-agent") || !HasEvent(evs, api.EventLearningCommitted, "notes/deploy.md") || HasEvent(evs, api.EventLearningRefused, "") {
		t.Errorf("hs did not keep the note its harness proposed in words: %v", evs)
	}
	kinds := map[string]string{}
	for _, st := range e.Steps("hs") {
		if strings.HasPrefix(st.Key, "learn/") {
			kinds[st.Key] = string(st.Kind)
			if st.Key == "learn/propose/structure" && (st.CostMicros == nil || *st.CostMicros <= 0) {
				t.Errorf("the structuring call is not billed: %+v", st)
			}
		}
	}
	if kinds["learn/propose"] != "learning" || kinds["learn/propose/structure"] != "model" || kinds["learn/grade"] != "model" {
		t.Errorf("hs's learning steps are %v; want the harness's answer recorded, then the server's structuring and grade calls", kinds)
	}
	structured := false
	for _, c := range e.Model.Calls() {
		if c.Entry == "structure" {
			structured = c.ForcedTool == "propose_learning"
		}
	}
	var asked []byte
	for _, b := range bodies() {
		if bytes.Contains(b, []byte("Structure an agent's proposal")) {
			asked = b
		}
	}
	if !structured || !bytes.Contains(asked, []byte("Done: later runs should know the deploy script is scripts/deploy.sh.")) || !bytes.Contains(asked, []byte(`That answer is not the proposal asked for: the answer is not JSON: \"Done: later runs`)) {
		t.Errorf("the structuring call (forced propose_learning: %v) does not carry the harness's answer and what is wrong with it: %.2000s", structured, asked)
	}
}

// TestStructuredRubricGrader: the rubric Grader's verdict is a forced call of the tool answer
// (its workflow's one decide node); a Grader that answers first in words gets one corrective
// retry and scores the case; one wrong twice leaves the case unscored, naming the schema's
// problem.
func TestStructuredRubricGrader(t *testing.T) {
	t.Parallel()
	verdict := func(pass bool, reward float64, evidence string) ScriptTurn {
		return ScriptTurn{ToolCalls: []map[string]any{{"name": "answer", "input": map[string]any{
			"answer": map[string]any{"pass": pass, "reward": reward, "evidence": evidence}, "confidence": 0.9}}}}
	}
	e := NewEnv(t, LearnScript(
		ScriptEntry{Name: "grade-france", Match: `"answerToGrade": "Paris`, Turns: []ScriptTurn{{Text: "Verdict: it passes."}, verdict(true, 0.8, "it names Paris")}},
		ScriptEntry{Name: "grade-spain", Match: `"answerToGrade": "Madrid`, Turns: []ScriptTurn{{Text: "Verdict: it passes."}, verdict(true, 5, "it names Madrid")}},
		ScriptEntry{Name: "france", Match: "capital of France", Turns: []ScriptTurn{{Text: "Paris is the capital of France."}}},
		ScriptEntry{Name: "spain", Match: "capital of Spain", Turns: []ScriptTurn{{Text: "Madrid is the capital of Spain."}}},
	))
	e.Start()
	e.MustAgent("essayist", `{"metadata":{"name":"essayist"},"spec":{"computer":{"kind":"none"}}}`)
	envDoc := `{"kind":"Environment","metadata":{"name":"acme/capitals"},"spec":{"version":"1.0.0",
		"grader":{"kind":"rubric","rubric":"Pass if the answer names the right city."},
		"splits":{"test":[{"id":"france","prompt":"Name the capital of France.","answer":"Paris"},{"id":"spain","prompt":"Name the capital of Spain.","answer":"Madrid"}]}}}`
	if st := e.Do("POST", "/v2/environments", envDoc, nil); st != 201 {
		t.Fatalf("load environment: HTTP %d", st)
	}
	if st := e.Do("POST", "/v2/agentgroups", `{"kind":"AgentGroup","metadata":{"name":"caps"},"spec":{"agent":"essayist",
		"evaluation":{"environment":"acme/capitals@1.0.0","timeout":"5m"}}}`, nil); st != 201 {
		t.Fatalf("create group: HTTP %d", st)
	}
	e.WaitGroupDone("caps", 2*time.Minute)
	byTask := map[string]api.EvalCase{}
	for _, c := range e.Results("caps").Items {
		byTask[c.TaskID] = c
	}
	if c := byTask["france"]; c.State != api.CaseScored || c.Verdict != "pass" || c.Reward == nil || *c.Reward != 0.8 {
		t.Errorf("france (corrected once): %+v; want scored pass 0.8", c)
	}
	if c := byTask["spain"]; c.State != api.CaseUnscored || !strings.Contains(c.Detail, "$.answer.reward: maximum: got 5, want 1") {
		t.Errorf("spain (wrong twice): %+v; want unscored, naming $.answer.reward", c)
	}
	for _, c := range e.Model.Calls() {
		if strings.HasPrefix(c.Entry, "grade-") && c.ForcedTool != "answer" {
			t.Errorf("grader call %s turn %d forced %q, want answer", c.Entry, c.Turn, c.ForcedTool)
		}
	}
	if n := e.Model.CountTurn("grade-france", 1); n != 1 {
		t.Errorf("the france grader's retry was asked %d times, want once", n)
	}
	var keys []string
	for _, st := range e.Steps(byTask["france"].Run[:strings.LastIndex(byTask["france"].Run, "-case-")] + "-grade-" + byTask["france"].Run[strings.LastIndex(byTask["france"].Run, "-case-")+len("-case-"):]) {
		keys = append(keys, st.Key)
	}
	if !strings.Contains(strings.Join(keys, " "), "/retry") {
		t.Errorf("the france grader run's steps %v have no corrective retry step", keys)
	}
}
