package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/store"
)

// The model rubric grader runs as an ordinary AgentRun of a grader agent, so its model calls are
// routed, capped, billed from credits and journaled like any run's: the run GROUP-grade-NNN (not a
// member of the group: it counts neither in its limits nor its cap) gets the rubric, the task, the
// hidden reference answer and the answer to grade. The agent is a workflow of one decide node
// whose answer is the verdict, so the verdict is a structured answer (model.Structured: a forced
// tool call with the verdict's schema, validated, with one corrective retry), as every answer
// agentrun reads as data is.

// RubricAgent is the grader agent's name for a model ("" = routed within haiku).
func RubricAgent(model string) string {
	if model == "" {
		return "rubric-grader"
	}
	var b strings.Builder
	for _, r := range strings.ToLower(model) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	name := strings.Trim("rubric-grader-"+b.String(), "-")
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	return name
}

const rubricSystem = `You grade an answer against a rubric.`

// rubricInstructions is the decide node's question: the fake model server's scripts key on its
// first words.
const rubricInstructions = "Grade an answer against a rubric. The state holds the rubric, the task, a reference answer the answering agent never saw, and the answer to grade (answerToGrade). " +
	"Give pass (true or false), reward (a number from 0 to 1) and evidence (one or two sentences citing the answer)."

// rubricWorkflow is the grader agent's workflow for the rubric's model: one decide node whose
// out schema is the verdict. A typed question on the server's access runs on a family's model
// (haiku unless its tier names another), so a Claude model the rubric names picks its family's
// tier; another vendor's model is the agent's own and answers as named.
func rubricWorkflow(model string) json.RawMessage {
	tier := ""
	switch m := strings.ToLower(model); {
	case strings.Contains(m, "opus"), strings.Contains(m, "fable"):
		tier = "strong"
	case strings.Contains(m, "sonnet"):
		tier = "default"
	}
	str := map[string]string{"type": "string"}
	node := map[string]any{"node": "decide", "label": "grade", "instructions": rubricInstructions, "out": "Verdict", "as": "verdict"}
	if tier != "" {
		node["tier"] = tier
	}
	doc, _ := json.Marshal(map[string]any{"v": 2, "name": "rubric-grade",
		"schemas": map[string]any{
			"In": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"rubric", "task", "reference", "answerToGrade"},
				"properties": map[string]any{"rubric": str, "task": str, "reference": str, "answerToGrade": str}},
			"Verdict": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"pass", "reward", "evidence"},
				"properties": map[string]any{"pass": map[string]string{"type": "boolean"}, "reward": map[string]any{"type": "number", "minimum": 0, "maximum": 1}, "evidence": str}}},
		"input":  map[string]string{"schemaId": "In"},
		"output": map[string]string{"schemaId": "Verdict", "path": "verdict"},
		"root":   node})
	return doc
}

// GraderRunLabel marks the runs that grade evaluation cases (value: the group).
const GraderRunLabel = "agentrun.dev/evaluation-grader"

func (ev *Evaluator) rubricAgent(ctx context.Context, g api.GraderSpec) (*api.Agent, error) {
	want := &api.Agent{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Agent"}, Metadata: api.ObjectMeta{Name: RubricAgent(g.Model)},
		Spec: api.AgentSpec{DisplayName: "Evaluation rubric grader", System: rubricSystem, MaxTokens: 1024, PerRunMaxCostUSD: "0.25",
			Model: api.ModelSpec{Access: "Server", Name: g.Model}, Workflow: rubricWorkflow(g.Model)}}
	if g.Model == "" {
		want.Spec.Model.Families = []string{"haiku"}
	}
	if err := api.DefaultAndValidateAgent(want, nil); err != nil {
		return nil, err
	}
	cur, err := ev.Store.GetAgent(ctx, want.Metadata.Name)
	if errors.Is(err, store.ErrNotFound) {
		if err := ev.Store.CreateAgent(ctx, want); err != nil && !errors.Is(err, store.ErrAlreadyExists) {
			return nil, err
		}
		return ev.Store.GetAgent(ctx, want.Metadata.Name)
	}
	if err != nil {
		return nil, err
	}
	a, _ := json.Marshal(cur.Spec)
	b, _ := json.Marshal(want.Spec)
	if string(a) != string(b) {
		want.Metadata.ResourceVersion = cur.Metadata.ResourceVersion
		if err := ev.Store.UpdateAgent(ctx, want); err != nil {
			return nil, err
		}
		return want, nil
	}
	return cur, nil
}

// graderRun is the name of the run that grades a case run (GROUP-case-NNN -> GROUP-grade-NNN).
func graderRun(caseRun string) string {
	i := strings.LastIndex(caseRun, "-case-")
	if i < 0 {
		return caseRun + "-grade"
	}
	return caseRun[:i] + "-grade-" + caseRun[i+len("-case-"):]
}

// gradeRubric starts (or finds) the case's grader run, waits for it until ctx ends (then cancels
// it), and reads its verdict.
func (ev *Evaluator) gradeRubric(ctx context.Context, group string, c api.EvalCase, g api.GraderSpec, task api.Task, answer string) (Verdict, error) {
	name := graderRun(c.Run)
	run, err := ev.Store.GetRun(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		ag, err := ev.rubricAgent(ctx, g)
		if err != nil {
			return Verdict{}, fmt.Errorf("grader agent: %w", err)
		}
		// The input is JSON, whose escapes may lengthen the answer: it is cut until the whole
		// fits a run's input.
		var in []byte
		for n := 200 << 10; ; n /= 2 {
			in, _ = json.Marshal(map[string]string{"rubric": g.Rubric, "task": task.Prompt, "reference": expectedText(task.Answer), "answerToGrade": clipBytes(answer, n)})
			if len(in) <= api.MaxInputBytes || n < 1024 {
				break
			}
		}
		input := string(in)
		limit, _ := cost.ParseUSD(ag.Spec.PerRunMaxCostUSD)
		run = &api.AgentRun{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "AgentRun"},
			Metadata: api.ObjectMeta{Name: name, Labels: map[string]string{GraderRunLabel: group}},
			Spec:     api.AgentRunSpec{Agent: ag.Metadata.Name, Input: input, MaxCostUSD: ag.Spec.PerRunMaxCostUSD},
			Status: api.AgentRunStatus{Phase: api.PhaseQueued, AgentRevision: ag.Status.Revision, ConsoleURL: strings.TrimRight(ev.BaseURL, "/") + "/runs/" + name,
				Cost: &api.RunCost{TotalUSD: cost.Micros(0).String(), LimitUSD: limit.String()}}}
		if dl, ok := ctx.Deadline(); ok {
			d := dl.UTC()
			run.Spec.Deadline, run.Status.Deadline = d.Format(time.RFC3339), &d
		}
		if err := ev.Store.CreateRun(ctx, run); err != nil && !errors.Is(err, store.ErrAlreadyExists) {
			return Verdict{}, err
		}
	} else if err != nil {
		return Verdict{}, err
	}
	for !api.Finished(run.Status.Phase) {
		select {
		case <-ctx.Done():
			ev.Store.RequestCancel(context.WithoutCancel(ctx), name)
			return Verdict{}, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
		if run, err = ev.Store.GetRun(ctx, name); err != nil {
			return Verdict{}, err
		}
	}
	if run.Status.Phase != api.PhaseSucceeded {
		return Verdict{}, fmt.Errorf("grader run %s ended %s (%s): %s", name, run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	text, ok, err := ev.answer(ctx, run)
	if err != nil || !ok {
		return Verdict{}, fmt.Errorf("grader run %s gave no answer", name)
	}
	v, err := parseRubricVerdict(text)
	if err != nil {
		return Verdict{}, fmt.Errorf("grader run %s: %w", name, err)
	}
	v.Evidence = "rubric (grader run " + name + "): " + v.Evidence
	return v, nil
}

func parseRubricVerdict(text string) (Verdict, error) {
	i, j := strings.Index(text, "{"), strings.LastIndex(text, "}")
	if i < 0 || j < i {
		return Verdict{}, fmt.Errorf("the grader's answer holds no JSON verdict: %q", clip(text))
	}
	var out struct {
		Pass     *bool    `json:"pass"`
		Reward   *float64 `json:"reward"`
		Evidence string   `json:"evidence"`
	}
	if err := json.Unmarshal([]byte(text[i:j+1]), &out); err != nil || out.Pass == nil {
		return Verdict{}, fmt.Errorf("the grader's answer holds no JSON verdict: %q", clip(text))
	}
	v := Verdict{Pass: *out.Pass, Evidence: out.Evidence}
	switch {
	case out.Reward != nil:
		v.Reward = min(max(*out.Reward, 0), 1)
	case v.Pass:
		v.Reward = 1
	}
	return v, nil
}

func clipBytes(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// deleteGraderRuns removes the runs that graded a deleted group's cases.
func (ev *Evaluator) deleteGraderRuns(ctx context.Context, group string, cases int) {
	for n := 1; n <= cases; n++ {
		ev.Store.DeleteRun(ctx, fmt.Sprintf("%s-grade-%03d", group, n))
	}
}
