package harnessext

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/harness"
)

// harnessWorkflow has one agent node with an out schema between a code node and a decide node.
const harnessWorkflow = `{"v": 2, "name": "on-claude",
  "schemas": {"In": {"type": "object"}, "Found": {"type": "object", "required": ["summary"], "properties": {"summary": {"type": "string"}}},
    "Verdict": {"type": "object", "required": ["urgent"], "properties": {"urgent": {"type": "boolean"}}},
    "Out": {"type": "object", "required": ["found", "verdict"]}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [
    {"node": "code", "label": "prep", "code": "(s) => ({ topic: 'billing' })"},
    {"node": "agent", "label": "research", "instructions": "Research with claude the topic", "state": {"topic": "{topic}"}, "out": "Found", "as": "found"},
    {"node": "decide", "label": "triage", "instructions": "Triage the ticket", "state": {"found": "{found}"}, "out": "Verdict", "as": "verdict"}]}}`

// TestWorkflowAgentNodeOnClaude: a workflow of an agent on the claude-agent harness runs in the
// server's engine, and its agent node on the real Claude Code CLI: the node's tool call comes
// over MCP through the run's tools, its model calls through the gateway, each a journal step
// under the node's execution path; its JSON answer is checked against the node's out schema.
// SIGKILL right after the node's tool call completed, then a restart: Claude Code starts again,
// is answered from the journal, and nothing completed reaches the model server or the tool again.
func TestWorkflowAgentNodeOnClaude(t *testing.T) {
	t.Parallel()
	e := NewClaudeEnv(t, HarnessWorkflowScript)
	e.Start("AGENTRUN_DEV_PAUSE_AT=after-result:wf/research/t0/tool/0")
	if st := e.Do("PUT", "/v2/agents/wfclaude", `{"metadata":{"name":"wfclaude"},"spec":{"harness":"claude-agent","tools":["dev_count"],"workflow":`+harnessWorkflow+`}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/wfclaude/runs", `{"input":{"content":"{}"}}`, &run); st != 201 {
		t.Fatalf("start: HTTP %d", st)
	}
	e.WaitStderr("AGENTRUN_DEV_PAUSED after-result wf/research/t0/tool/0", 90*time.Second)
	e.Kill()
	NoHarnessLeft(t, e.Dir, 10*time.Second)
	e.Start()
	r := e.WaitPhase(run.Metadata.Name, 90*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil {
		t.Fatalf("run ended %s/%s %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	var out struct {
		Found   struct{ Summary string }
		Verdict struct{ Urgent bool }
	}
	if err := json.Unmarshal([]byte(r.Status.Answer.Preview), &out); err != nil || out.Found.Summary != "node done" {
		t.Errorf("output %q (%v): want the node's JSON answer", r.Status.Answer.Preview, err)
	}
	if got := e.Counted(); !slices.Equal(got, []string{"claude-node"}) {
		t.Errorf("dev_count ran %v, want once", got)
	}
	for turn := 0; turn < 2; turn++ {
		if n := e.Model.CountTurn("clnode", turn); n != 1 {
			t.Errorf("the node's scripted turn %d reached the model server %d times, want 1", turn, n)
		}
	}
	keys := map[string]string{}
	for _, s := range e.Steps(run.Metadata.Name) {
		keys[s.Key] = string(s.Kind) + " " + s.Title
	}
	for _, k := range []string{"wf/research/t0/model", "wf/research/t0/tool/0", "wf/research/t1/model", "wf/triage"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("no step %s: %v", k, keys)
		}
	}
	if !strings.Contains(keys["wf/research/t0/model"], "via claude-agent") {
		t.Errorf("the node's model call %q is not the harness's", keys["wf/research/t0/model"])
	}
	for k := range keys {
		if strings.HasPrefix(k, "t") {
			t.Errorf("step %s is outside the workflow's keys", k)
		}
	}
	if !HasEvent(e.Events(run.Metadata.Name), "harness.started", "for workflow node wf/research") {
		t.Errorf("the timeline does not say the harness started for the node")
	}
	// The tree: the node done with its calls under it, its cost its model calls'.
	var tree api.WorkflowTree
	e.Do("GET", "/v2/agentruns/"+run.Metadata.Name+"/nodes", "", &tree)
	node := FindNode(tree.Root, "wf/research")
	if node == nil || node.State != "done" || node.Steps != 3 || node.CostMicros == 0 || !strings.Contains(node.Value, "node done") {
		t.Errorf("tree node of the agent: %+v", node)
	}
	NoHarnessLeft(t, e.Dir, 10*time.Second)
}

// TestWorkflowAgentNodesOnClaudeInAMap: a map's agent nodes on the claude-agent harness run at
// once, each its own Claude Code process and home, each call a step under its item's node.
func TestWorkflowAgentNodesOnClaudeInAMap(t *testing.T) {
	t.Parallel()
	e := NewClaudeEnv(t, HarnessWorkflowScript)
	e.Start()
	doc := `{"v": 2, "name": "claude-map",
  "schemas": {"In": {"type": "object", "required": ["items"]}, "Found": {"type": "object", "required": ["summary"], "properties": {"summary": {"type": "string"}}}, "Out": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [
    {"node": "map", "label": "each", "itemsPath": "items", "as": "all", "maxConcurrency": 2,
     "body": {"node": "agent", "label": "research", "instructions": "Research with claude the topic", "state": {"topic": "{item}"}, "out": "Found", "as": "found"}}]}}`
	if st := e.Do("PUT", "/v2/agents/wfmap", `{"metadata":{"name":"wfmap"},"spec":{"harness":"claude-agent","tools":["dev_count"],"workflow":`+doc+`}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/wfmap/runs", `{"input":{"content":"{\"items\": [\"x\", \"y\"]}"}}`, &run); st != 201 {
		t.Fatalf("start: HTTP %d", st)
	}
	r := e.WaitPhase(run.Metadata.Name, 120*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || strings.Count(r.Status.Answer.Preview, "node done") != 2 {
		t.Fatalf("run ended %s/%s %s: %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer)
	}
	if got := e.Counted(); !slices.Equal(got, []string{"claude-node", "claude-node"}) {
		t.Errorf("dev_count ran %v, want once per item", got)
	}
	keys := map[string]bool{}
	for _, s := range e.Steps(run.Metadata.Name) {
		keys[s.Key] = true
	}
	for _, k := range []string{"wf/each[0]/research/t0/model", "wf/each[0]/research/t0/tool/0", "wf/each[1]/research/t0/tool/0", "wf/each[1]/research/t1/model"} {
		if !keys[k] {
			t.Errorf("no step %s: %v", k, keys)
		}
	}
	n := 0
	for _, ev := range e.Events(run.Metadata.Name) {
		if ev.Type == "harness.started" && strings.Contains(ev.Message, "for workflow node wf/each[") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d harnesses started for the map's nodes, want 2", n)
	}
	NoHarnessLeft(t, e.Dir, 10*time.Second)
}

// TestWorkflowAgentNodeOnEveryHarness: the agent node of TestWorkflowAgentNodeOnClaude on the
// other harnesses (codex on the OpenAI Responses API, pi, opencode), each the real CLI: its tool
// call over MCP and its model calls are steps under the node's key, the tool runs once, and the
// node's JSON answer is the run's output.
func TestWorkflowAgentNodeOnEveryHarness(t *testing.T) {
	t.Parallel()
	doc := `{"v": 2, "name": "on-harness",
  "schemas": {"In": {"type": "object"}, "Found": {"type": "object", "required": ["summary"], "properties": {"summary": {"type": "string"}}}, "Out": {"type": "object", "required": ["found"]}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [
    {"node": "code", "label": "prep", "code": "(s) => ({ topic: 'billing' })"},
    {"node": "agent", "label": "research", "instructions": "Research with the harness the topic", "state": {"topic": "{topic}"}, "out": "Found", "as": "found"}]}}`
	script := func(tool string) string {
		return `
entries:
  - name: node
    match: "Research with the harness"
    turns:
      - tool_calls:
          - name: ` + tool + `
            input: {label: "harness-node"}
      - text: '{"summary": "node done"}'
`
	}
	for _, c := range []struct {
		name string
		env  func(t *testing.T) *Env
	}{
		{"codex", func(t *testing.T) *Env { return NewCodexEnv(t, script("dev_count")) }},
		{"pi", func(t *testing.T) *Env {
			e := NewEnv(t, script("dev_count"))
			e.Extra = append(e.Extra, harness.CacheEnv+"="+InstalledHarness(t, "pi"))
			return e
		}},
		{"opencode", func(t *testing.T) *Env {
			e := NewEnv(t, script(OpencodeCase.Prefix+"dev_count"))
			e.Extra = append(e.Extra, harness.CacheEnv+"="+InstalledHarness(t, "opencode"))
			return e
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := c.env(t)
			e.Start()
			if st := e.Do("PUT", "/v2/agents/wf-"+c.name, `{"metadata":{"name":"wf-`+c.name+`"},"spec":{"harness":"`+c.name+`","tools":["dev_count"],"workflow":`+doc+`}}`, nil); st != 201 {
				t.Fatalf("create agent: HTTP %d", st)
			}
			var run api.AgentRun
			if st := e.Do("POST", "/v2/agents/wf-"+c.name+"/runs", `{"input":{"content":"{}"}}`, &run); st != 201 {
				t.Fatalf("start: HTTP %d", st)
			}
			r := e.WaitPhase(run.Metadata.Name, 120*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
			if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || !strings.Contains(r.Status.Answer.Preview, `"summary":"node done"`) {
				t.Fatalf("run ended %s/%s %s: %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer)
			}
			if got := e.Counted(); !slices.Equal(got, []string{"harness-node"}) {
				t.Errorf("dev_count ran %v, want once", got)
			}
			keys := map[string]string{}
			for _, s := range e.Steps(run.Metadata.Name) {
				keys[s.Key] = s.Title
			}
			for _, k := range []string{"wf/research/t0/model", "wf/research/t0/tool/0"} {
				if _, ok := keys[k]; !ok {
					t.Errorf("no step %s: %v", k, keys)
				}
			}
			if !strings.Contains(keys["wf/research/t0/model"], "via "+c.name) {
				t.Errorf("the node's first model call %q is not %s's", keys["wf/research/t0/model"], c.name)
			}
		})
	}
}
