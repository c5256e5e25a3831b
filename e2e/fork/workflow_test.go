package fork

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// threeCalls is a workflow of three tool calls in a row, each a real side effect (dev_count).
const threeCalls = `{
  "v": 2, "name": "three",
  "schemas": {"In": {"type": "object"}, "Counted": {"type": "object", "required": ["ok", "content"]}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Counted", "path": "c3"},
  "root": {"node": "chain", "steps": [
    {"node": "call", "label": "first", "via": "tool", "tool": "dev_count", "args": {"label": "wf-1"}, "out": "Counted", "as": "c1", "deadline_s": 30},
    {"node": "call", "label": "second", "via": "tool", "tool": "dev_count", "args": {"label": "wf-2"}, "out": "Counted", "as": "c2", "deadline_s": 30},
    {"node": "call", "label": "third", "via": "tool", "tool": "dev_count", "args": {"label": "wf-3"}, "out": "Counted", "as": "c3", "deadline_s": 30}
  ]}
}`

// TestForkWorkflowRun: a workflow run forked at a node's key keeps the nodes completed up to it
// (they are not run again: dev_count counts each call) and runs the rest, to the same output.
func TestForkWorkflowRun(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, "entries:\n  - name: unused\n    match: \"never asked\"\n    turns:\n      - text: unused\n")
	e.Start()
	if st := e.Do("PUT", "/v2/agents/counter", `{"metadata":{"name":"counter"},"spec":{"tools":["dev_count"]}}`, nil); st != 201 && st != 200 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	dir := t.TempDir()
	wf := WriteFile(t, dir, "three.json", threeCalls)
	r := e.MustCLI(0, "workflows", "run", wf, "--agent", "counter", "--input", "{}", "--wait")
	var v struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil || v.RunID == "" {
		t.Fatalf("workflows run printed no run_id: %q", r.Stdout)
	}
	run := v.RunID
	orig := e.GetRun(run)
	if orig.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("workflow run: %s %s", orig.Status.Phase, orig.Status.Message)
	}
	second := ""
	for _, s := range e.Steps(run) {
		if strings.Contains(s.Key, "second") && s.State == api.StepCompleted {
			second = s.Key
		}
	}
	if second == "" {
		t.Fatalf("no completed step of the second node in %s", keys(e.Steps(run)))
	}
	// A workflow reads no user message between nodes: a fork with one is refused.
	var apiErr api.Error
	if st := e.Do("POST", "/v2/agentruns/"+run+"/fork", `{"atStep": "`+second+`", "message": "hello"}`, &apiErr); st != 422 || apiErr.Code != api.CodeInvalid || apiErr.Field != "message" {
		t.Errorf("fork of a workflow run with a message: HTTP %d %s %s", st, apiErr.Code, apiErr.Field)
	}
	name := fork(t, e, run, second)
	f := e.WaitPhase(name, time.Minute, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if f.Status.Phase != api.PhaseSucceeded || f.Status.Answer == nil || orig.Status.Answer == nil {
		t.Fatalf("fork: %s %s %+v", f.Status.Phase, f.Status.Message, f.Status.Answer)
	}
	if got := e.Counted(); !slices.Equal(got, []string{"wf-1", "wf-2", "wf-3", "wf-3"}) {
		t.Errorf("dev_count ran %v, want the fork to run only the third node again", got)
	}
	var copied, own []string
	for _, s := range e.Steps(name) {
		if s.CopiedFrom == run {
			copied = append(copied, s.Key)
		} else {
			own = append(own, s.Key)
		}
	}
	if len(copied) == 0 || copied[len(copied)-1] != second || len(own) == 0 || !strings.Contains(strings.Join(own, " "), "third") {
		t.Errorf("fork steps: copied %v, own %v; want up to %s copied and the third node its own", copied, own, second)
	}
	var tree api.WorkflowTree
	if st := e.Do("GET", "/v2/agentruns/"+name+"/nodes", nil, &tree); st != 200 || tree.Root == nil {
		t.Errorf("fork's node tree: HTTP %d", st)
	}
}
