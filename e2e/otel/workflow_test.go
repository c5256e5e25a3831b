package otel

import (
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/telemetry"
)

const probeWorkflow = `{"v": 2, "name": "probe",
  "schemas": {"In": {"type": "object"}, "Counted": {"type": "object", "required": ["ok", "content"]}, "Out": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [
    {"node": "call", "label": "count", "via": "tool", "tool": "dev_count", "args": {"label": "wf"}, "out": "Counted", "as": "c", "deadline_s": 30},
    {"node": "agent", "label": "research", "instructions": "Research the ticket", "as": "notes"}]}}`

const workflowScript = `
entries:
  - name: research
    match: "Research the ticket"
    turns:
      - tool_calls:
          - name: dev_count
            input: {label: "agent-probe"}
      - text: "The ticket is about billing ({{last_tool_result}})."
`

// TestWorkflowTrace: a workflow run is invoke_agent → invoke_workflow, its tool node an
// execute_tool span and its agent node an invoke_agent span holding the node's model and tool
// calls.
func TestWorkflowTrace(t *testing.T) {
	t.Parallel()
	r := newHTTPReceiver(t)
	e := NewEnv(t, workflowScript)
	e.Start(otelEnv(r)...)
	if st := e.Do("PUT", "/v2/agents/probe", `{"metadata":{"name":"probe"},"spec":{"tools":["dev_count"],"workflow":`+probeWorkflow+`}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.StartRun("probe", "w1", `{"x": 1}`)
	run := e.WaitPhase("w1", 30*time.Second, api.PhaseSucceeded)
	spans := waitSpans(t, r, telemetry.RunTraceID(run.Metadata.UID).String(), "invoke_agent probe", 15*time.Second)
	byID := map[string]span{}
	for _, s := range spans {
		byID[s.SpanID()] = s
	}
	wf := named(spans, "invoke_workflow probe")
	if len(wf) != 1 || byID[wf[0].ParentID()].Name != "invoke_agent probe" {
		t.Fatalf("invoke_workflow under invoke_agent: %s", names(spans))
	}
	wantAttr(t, wf[0], "gen_ai.operation.name", "invoke_workflow")
	var node span
	for _, s := range named(spans, "invoke_agent ") {
		if s.ParentID() == wf[0].SpanID() {
			node = s
		}
	}
	if node.Span == nil || !strings.Contains(node.Name, "research") {
		t.Fatalf("no agent node span under invoke_workflow: %s", names(spans))
	}
	var underNode, underWorkflow []string
	for _, s := range spans {
		switch s.ParentID() {
		case node.SpanID():
			underNode = append(underNode, s.Name)
		case wf[0].SpanID():
			underWorkflow = append(underWorkflow, s.Name)
		}
	}
	if len(underNode) != 3 || !Contains(underNode, "execute_tool dev_count") {
		t.Errorf("the agent node's spans: %v, want two chat and one execute_tool", underNode)
	}
	if !Contains(underWorkflow, "execute_tool dev_count") {
		t.Errorf("the workflow's own spans: %v, want the tool node's execute_tool", underWorkflow)
	}
}
