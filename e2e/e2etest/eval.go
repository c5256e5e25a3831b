package e2etest

import (
	"encoding/json"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/eval"
)

// EvalScript answers every arithmetic task correctly except wrongTask, and writes the asked word
// into answer.txt for every write-file task except wrongWord (which writes another word).
func EvalScript(t *testing.T, wrongTask, wrongWord string) string {
	t.Helper()
	type turn map[string]any
	var entries []map[string]any
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
				if task.ID == wrongWord {
					want.Content = "wrong"
				}
				entries = append(entries, map[string]any{"name": task.ID, "match": task.Prompt, "turns": []turn{
					{"tool_calls": []map[string]any{{"name": "write", "input": map[string]string{"path": want.File, "content": want.Content}}}},
					{"text": "done"}}})
			}
		}
	}
	entries = append(entries, map[string]any{"name": "custom", "match": "Name a primary colour", "turns": []turn{{"text": "Red."}}})
	b, _ := json.Marshal(map[string]any{"entries": entries})
	return string(b)
}

func (e *Env) Results(group string) (out struct {
	Phase      string
	Evaluation api.EvaluationStatus
	Items      []api.EvalCase
}) {
	e.T.Helper()
	if st := e.Do("GET", "/v2/agentgroups/"+group+"/results", nil, &out); st != 200 {
		e.T.Fatalf("results of %s: HTTP %d", group, st)
	}
	return out
}

func (e *Env) WaitGroupDone(name string, d time.Duration) api.AgentGroup {
	e.T.Helper()
	deadline := time.Now().Add(d)
	for {
		g := e.GetGroup(name)
		switch g.Status.Phase {
		case api.GroupSucceeded, api.GroupFailed, api.GroupCancelled:
			return g
		}
		if time.Now().After(deadline) {
			e.T.Fatalf("group %s is still %s: %+v %+v", name, g.Status.Phase, g.Status.Counts, g.Status.Evaluation)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
