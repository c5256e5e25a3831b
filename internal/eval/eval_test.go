package eval

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/computer/local"
	"agentrun.dev/agentrun/internal/store"
)

func task(answer string) api.Task {
	return api.Task{ID: "t", Prompt: "p", Answer: json.RawMessage(answer)}
}

func TestGraders(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		g      api.GraderSpec
		task   api.Task
		answer string
		pass   bool
	}{
		{"exact", api.GraderSpec{Kind: "exact"}, task(`"Paris"`), " Paris\n", true},
		{"exact case", api.GraderSpec{Kind: "exact"}, task(`"Paris"`), "paris", false},
		{"normalized", api.GraderSpec{Kind: "normalized"}, task(`"Paris"`), "  paris. ", true},
		{"normalized number", api.GraderSpec{Kind: "normalized"}, task(`"42"`), "42.0", true},
		{"normalized wrong", api.GraderSpec{Kind: "normalized"}, task(`"42"`), "The answer is 42.", false},
		{"regex", api.GraderSpec{Kind: "regex", Pattern: `^(red|blue)\.?$`}, task(`null`), "Red.", true},
		{"regex from answer", api.GraderSpec{Kind: "regex"}, task(`"\\bTokyo\\b"`), "It is Tokyo.", true},
		{"json", api.GraderSpec{Kind: "json", Schema: json.RawMessage(`{"type":"object","required":["city","n"],"properties":{"n":{"type":"integer"}}}`)},
			task(`{"city":"Paris"}`), "Here: {\"city\": \"Paris\", \"n\": 3}", true},
		{"json schema", api.GraderSpec{Kind: "json", Schema: json.RawMessage(`{"type":"object","required":["n"]}`)}, task(`{}`), `{"city":"Paris"}`, false},
		{"json field", api.GraderSpec{Kind: "json"}, task(`{"city":"Paris"}`), `{"city":"Lyon"}`, false},
		{"json not json", api.GraderSpec{Kind: "json"}, task(`{"city":"Paris"}`), `Paris`, false},
	}
	for _, c := range cases {
		v, err := Grade(ctx, c.g, c.task, c.answer, nil)
		if err != nil || v.Pass != c.pass || v.Evidence == "" {
			t.Errorf("%s: %+v, %v; want pass=%v", c.name, v, err, c.pass)
		}
	}
	if _, err := Grade(ctx, api.GraderSpec{Kind: "rubric"}, task(`null`), "x", nil); err == nil {
		t.Errorf("rubric grader: no error (it is not available)")
	}
}

func TestScriptGrader(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	ctx := context.Background()
	env := writeFile()
	tk := env.Spec.Splits["test"][0]
	var want struct{ Content string }
	json.Unmarshal(tk.Answer, &want)
	v, err := Grade(ctx, env.Spec.Grader, tk, "done", []store.File{{Path: "answer.txt", Content: []byte(want.Content + "\n")}})
	if err != nil || !v.Pass || v.Reward != 1 {
		t.Errorf("right file: %+v, %v", v, err)
	}
	v, err = Grade(ctx, env.Spec.Grader, tk, "done", nil)
	if err != nil || v.Pass || !strings.Contains(v.Evidence, "no answer.txt") {
		t.Errorf("no file: %+v, %v", v, err)
	}
	// A script that fails is a grader failure (unscored), not a zero.
	if _, err := Grade(ctx, api.GraderSpec{Kind: "script", Script: "exit 3"}, tk, "x", nil); err == nil {
		t.Errorf("failing script: no error")
	}
	if _, err := Grade(ctx, api.GraderSpec{Kind: "script", Script: "echo hello"}, tk, "x", nil); err == nil {
		t.Errorf("script without a verdict: no error")
	}
	// The script cannot see outside its folder's copy: the hidden answer is in expected.json.
	v, err = Grade(ctx, api.GraderSpec{Kind: "script", Script: `grep -q amber expected.json && echo '{"pass": true, "reward": 0.5}'`}, tk, "x", nil)
	if err != nil || !v.Pass || v.Reward != 0.5 {
		t.Errorf("reward from the script: %+v, %v", v, err)
	}
}

func TestSummarize(t *testing.T) {
	one, zero := 1.0, 0.0
	st := &api.EvaluationStatus{Results: []api.EvalCase{
		{TaskID: "a", Repetition: 1, State: api.CaseScored, Verdict: "pass", Reward: &one},
		{TaskID: "a", Repetition: 2, State: api.CaseScored, Verdict: "fail", Reward: &zero},
		{TaskID: "a", Repetition: 3, State: api.CaseUnscored},
		{TaskID: "b", Repetition: 1, State: api.CaseTimeout},
		{TaskID: "b", Repetition: 2, State: api.CasePending},
		{TaskID: "b", Repetition: 3, State: api.CaseScored, Verdict: "pass", Reward: &one},
	}}
	Summarize(st)
	if st.Scored != 3 || st.Passed != 2 || st.Unscored != 1 || st.TimedOut != 1 || st.Pending != 1 {
		t.Fatalf("counts %+v", st)
	}
	if math.Abs(*st.PassRate-2.0/3) > 1e-9 || math.Abs(*st.MeanReward-2.0/3) > 1e-9 {
		t.Errorf("pass rate %v mean reward %v: unscored and timeouts must not count as zero", *st.PassRate, *st.MeanReward)
	}
	a := st.PerTask[0]
	if a.TaskID != "a" || a.PassAtK["1"] != 0.5 || a.PassAtK["2"] != 1 || *a.RewardSpread != 1 {
		t.Errorf("task a %+v", a)
	}
	if passAtK(5, 1, 2) != 0.4 {
		t.Errorf("pass@2 of 1/5 = %v, want 0.4", passAtK(5, 1, 2))
	}
}

func TestBuiltinsValid(t *testing.T) {
	for _, e := range Builtins() {
		if err := api.ValidateEnvironment(e); err != nil {
			t.Errorf("%s: %v", e.Ref(), err)
		}
	}
	a, b := arithmetic(), arithmetic()
	if a.Spec.Splits["test"][5].Prompt != b.Spec.Splits["test"][5].Prompt {
		t.Errorf("arithmetic-v2's tasks are not fixed")
	}
}

func TestScriptGraderInSandbox(t *testing.T) {
	sb := local.New()
	if a := sb.Available(context.Background()); !a.Available {
		t.Skip("local sandbox not available here: " + a.Reason)
	}
	env := writeFile()
	tk := env.Spec.Splits["test"][0]
	var want struct{ Content string }
	json.Unmarshal(tk.Answer, &want)
	v, err := GradeIn(context.Background(), sb, env.Spec.Grader, tk, "done", []store.File{{Path: "answer.txt", Content: []byte(want.Content)}})
	if err != nil || !v.Pass {
		t.Fatalf("in the sandbox: %+v, %v", v, err)
	}
	// The host's files outside the grading folder are out of reach.
	outside := t.TempDir()
	v, err = GradeIn(context.Background(), sb, api.GraderSpec{Kind: "script", Script: "touch " + outside + "/marker 2>/dev/null; echo '{\"pass\": true}'"}, tk, "x", nil)
	if err != nil || !v.Pass {
		t.Fatalf("sandboxed script: %+v, %v", v, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "marker")); err == nil {
		t.Errorf("a sandboxed grader wrote a file outside its folder")
	}
}

// The rubric grader agent is a valid agent whose workflow answers with the verdict's schema.
func TestRubricAgentValid(t *testing.T) {
	for m, tier := range map[string]string{"": "", "claude-sonnet-4-5": `"tier":"default"`, "claude-opus-4-5": `"tier":"strong"`, "gpt-4.1": ""} {
		wf := rubricWorkflow(m)
		if tier != "" && !strings.Contains(string(wf), tier) || tier == "" && strings.Contains(string(wf), `"tier"`) {
			t.Errorf("rubric workflow for %q: %s; want %s", m, wf, tier)
		}
		a := &api.Agent{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Agent"}, Metadata: api.ObjectMeta{Name: RubricAgent(m)},
			Spec: api.AgentSpec{System: rubricSystem, Model: api.ModelSpec{Access: "Server", Name: m}, Workflow: wf}}
		if m == "" {
			a.Spec.Model.Families = []string{"haiku"}
		}
		if err := api.DefaultAndValidateAgent(a, nil); err != nil {
			t.Errorf("rubric agent (model %q): %v", m, err)
		}
	}
}
