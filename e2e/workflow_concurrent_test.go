package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

// TestWorkflowMapEffectsOverlap: a map's effects run at once up to its bound, in the run's real
// sandbox. Each of 4 items' shell calls marks its arrival in the run folder, then waits until all
// 4 have arrived: it can only end if the 4 calls run at the same time (one at a time, the first
// would wait its whole 60 s and fail). Each call is still its own step under its item's path, and
// a second map bounded at 1 never has two of its calls' steps open at once.
func TestWorkflowMapEffectsOverlap(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	e := newEnv(t, "entries:\n  - name: unused\n    match: \"never asked\"\n    turns:\n      - text: unused\n")
	e.start()
	e.workflowAgent("overlap", `,"computer":{"kind":"sandbox"}`)
	doc := func(conc int, wait string) string {
		return fmt.Sprintf(`{"v": 2, "name": "overlap", "schemas": {"In": {"type": "object", "required": ["items"]}, "Out": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [
    {"node": "map", "label": "each", "itemsPath": "items", "as": "all", "maxConcurrency": %d,
     "body": {"node": "call", "label": "meet", "via": "shell", "env": {"ITEM": "{item}"}, "as": "met", "deadline_s": 90,
       "command": %q}}]}}`, conc, `mkdir -p arrived && touch arrived/$ITEM; `+wait)
	}
	meet := `for i in $(seq 600); do [ "$(ls arrived | wc -l)" -ge 4 ] && { echo met; exit 0; }; sleep 0.1; done; echo alone; exit 1`
	var run api.AgentRun
	dir := t.TempDir()
	r := e.mustCLI(0, "workflows", "run", writeFile(t, dir, "meet.json", doc(4, meet)), "--agent", "overlap", "--input", `{"items": ["a", "b", "c", "d"]}`, "--wait")
	run = e.cliRun(r)
	if run.Status.Phase != api.PhaseSucceeded || run.Status.Answer == nil || strings.Count(run.Status.Answer.Preview, `"stdout":"met"`) != 4 {
		t.Fatalf("run %s/%s %s: %+v", run.Status.Phase, run.Status.Reason, run.Status.Message, run.Status.Answer)
	}
	steps := e.steps(run.Metadata.Name)
	seen := map[string]int{}
	for _, s := range steps {
		if strings.HasPrefix(s.Key, "wf/each[") {
			seen[s.Key]++
			if s.State != api.StepCompleted {
				t.Errorf("step %s %s", s.Key, s.State)
			}
		}
	}
	for i := range 4 {
		if k := fmt.Sprintf("wf/each[%d]/meet", i); seen[k] != 1 {
			t.Errorf("step %s recorded %d times, want once (all: %v)", k, seen[k], seen)
		}
	}

	// Bounded at 1: the calls' steps never overlap (each starts after the one before it ended).
	r = e.mustCLI(0, "workflows", "run", writeFile(t, dir, "one.json", doc(1, "echo one")), "--agent", "overlap", "--input", `{"items": ["e", "f", "g"]}`, "--wait")
	run = e.cliRun(r)
	if run.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("bounded run %s/%s %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	var last time.Time
	for _, s := range e.steps(run.Metadata.Name) {
		if !strings.HasPrefix(s.Key, "wf/each[") {
			continue
		}
		if s.StartedAt.Before(last) || s.CompletedAt == nil {
			b, _ := json.Marshal(s)
			t.Errorf("with maxConcurrency 1, step %s started before the one before it completed: %s", s.Key, b)
		}
		if s.CompletedAt != nil {
			last = *s.CompletedAt
		}
	}
}
