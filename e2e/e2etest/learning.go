package e2etest

import (
	"encoding/json"
	"fmt"
)

// LearnNote is a note in Claude Code's memory format.
func LearnNote(name, desc, fact string) string {
	return fmt.Sprintf("---\nname: %s\ndescription: %s\ntype: project\n---\n%s\n", name, desc, fact)
}

type ScriptTurn struct {
	Text      string           `json:"text,omitempty"`
	ToolCalls []map[string]any `json:"tool_calls,omitempty"`
}

type ScriptEntry struct {
	Name  string       `json:"name"`
	Match string       `json:"match"`
	Turns []ScriptTurn `json:"turns"`
}

// Proposal is a proposal as JSON text: how a harness, whose model cannot be forced to call a
// tool, answers its proposal turn.
func Proposal(items ...map[string]any) string {
	b, _ := json.Marshal(map[string]any{"items": items})
	return string(b)
}

// ProposeTurn answers the built-in loop's proposal call as it asks: a call of the forced tool.
func ProposeTurn(items ...map[string]any) ScriptTurn {
	if items == nil {
		items = []map[string]any{}
	}
	return ScriptTurn{ToolCalls: []map[string]any{{"name": "propose_learning", "input": map[string]any{"items": items}}}}
}

func NoteItem(path, content string) map[string]any {
	return map[string]any{"kind": "note", "action": "add", "path": path, "content": content}
}

// Grader answers the grade call of the run whose task starts with task, with a call of the
// forced tool.
func Grader(task string, verdicts ...map[string]any) ScriptEntry {
	return ScriptEntry{Name: "grade " + task, Match: "The run's task was:\n" + task, Turns: []ScriptTurn{
		{ToolCalls: []map[string]any{{"name": "grade_learning", "input": map[string]any{"verdicts": verdicts}}}}}}
}

func Keep(i int, reason string) map[string]any {
	return map[string]any{"item": i, "keep": true, "reason": reason}
}

func LearnScript(entries ...ScriptEntry) string {
	b, _ := json.Marshal(map[string]any{"entries": entries})
	return string(b)
}

const LearnerAgent = `{"metadata":{"name":"learner"},"spec":{"system":"You keep a service running.","learning":true,"computer":{"kind":"none"},"approvals":"never-ask"}}`

var DeployMD = LearnNote("deploy", "Where the deploy script is.", "The deploy script is scripts/deploy.sh.")
