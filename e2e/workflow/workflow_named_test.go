package workflow

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// childDoc is a workflow an agent saves, to be named as a child: it answers v.
func childDoc(v int) string {
	return fmt.Sprintf(`{"v": 2, "name": "child", "schemas": {"CI": {"type": "object", "required": ["t"]}, "N": {"type": "number"}},
  "input": {"schemaId": "CI"}, "output": {"schemaId": "N", "path": "v"},
  "root": {"node": "chain", "steps": [{"node": "code", "label": "answer", "code": "(s) => ({ v: %d })"}]}}`, v)
}

// parentDoc names child by string.
func parentDoc(child string) string {
	return fmt.Sprintf(`{"v": 2, "name": "parent", "schemas": {"In": {"type": "object"}, "N": {"type": "number"}, "Out": {"type": "object", "required": ["got"]}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [
    {"node": "workflow", "label": "sub", "workflow": %q, "input": {"t": "x"}, "out": "N", "as": "got"}]}}`, child)
}

// TestWorkflowNamedChildren: a workflow node naming its child by string runs the workflow of the
// agent of that name, pinned to that agent's revision when the parent was saved (a later revision
// of the child changes nothing until the parent is saved again); an unknown child is refused at
// its pointer, a cycle through named children is refused, and a pin for a child the workflow
// does not name is refused.
func TestWorkflowNamedChildren(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, kindsScript)
	e.Start()
	put := func(name, doc, extra string) (int, api.Agent, api.Error) {
		t.Helper()
		var raw json.RawMessage
		st := e.Do("PUT", "/v2/agents/"+name, fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"workflow":%s%s}}`, name, doc, extra), &raw)
		var a api.Agent
		var ae api.Error
		_ = json.Unmarshal(raw, &a)
		_ = json.Unmarshal(raw, &ae)
		return st, a, ae
	}
	runOutput := func(agent string) float64 {
		t.Helper()
		var run api.AgentRun
		if st := e.Do("POST", "/v2/agents/"+agent+"/runs", `{"input":{"content":"{}"}}`, &run); st != 201 {
			t.Fatalf("start %s: HTTP %d", agent, st)
		}
		r := e.WaitPhase(run.Metadata.Name, 20*time.Second, api.PhaseSucceeded, api.PhaseFailed)
		if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil {
			t.Fatalf("run of %s: %s/%s %s", agent, r.Status.Phase, r.Status.Reason, r.Status.Message)
		}
		var out struct{ Got float64 }
		if err := json.Unmarshal([]byte(r.Status.Answer.Preview), &out); err != nil {
			t.Fatalf("output %q: %v", r.Status.Answer.Preview, err)
		}
		return out.Got
	}

	if st, _, ae := put("child-v", childDoc(1), ""); st != 201 {
		t.Fatalf("create child: HTTP %d %+v", st, ae)
	}
	st, parent, ae := put("parent", parentDoc("child-v"), "")
	if st != 201 || parent.Spec.WorkflowChildren["child-v"] != 1 {
		t.Fatalf("create parent: HTTP %d %+v, pins %v", st, ae, parent.Spec.WorkflowChildren)
	}
	if got := runOutput("parent"); got != 1 {
		t.Errorf("the parent's child answered %v, want 1", got)
	}
	// A new revision of the child: the parent's revision still runs revision 1.
	if st, a, _ := put("child-v", childDoc(2), ""); st != 200 || a.Status.Revision != 2 {
		t.Fatalf("update child: HTTP %d revision %d", st, a.Status.Revision)
	}
	if got := runOutput("parent"); got != 1 {
		t.Errorf("after the child changed, the parent's child answered %v, want the pinned revision's 1", got)
	}
	// Saving the parent's workflow again pins the child's current revision.
	var patched api.Agent
	if st := e.Do("PATCH", "/v2/agents/parent", `{"spec":{"workflow":`+parentDoc("child-v")+`}}`, &patched); st != 200 || patched.Spec.WorkflowChildren["child-v"] != 2 {
		t.Fatalf("patch parent: HTTP %d pins %v", st, patched.Spec.WorkflowChildren)
	}
	if got := runOutput("parent"); got != 2 {
		t.Errorf("after the parent was saved again, its child answered %v, want 2", got)
	}
	// workflows run FILE sends a document naming a child to the server, which resolves it (no
	// child-v.json beside FILE), and the run's node tree holds the child's nodes.
	dir := t.TempDir()
	workflowAgent(e, "from-file", "")
	res := e.MustCLI(0, "workflows", "run", WriteFile(t, dir, "parent.json", parentDoc("child-v")), "--agent", "from-file", "--input", "{}", "--wait")
	fr := cliRun(e, res)
	if fr.Status.Phase != api.PhaseSucceeded || fr.Status.Answer == nil || !strings.Contains(fr.Status.Answer.Preview, `"got":2`) {
		t.Errorf("workflows run of a parent naming child-v: %s/%s %s %+v", fr.Status.Phase, fr.Status.Reason, fr.Status.Message, fr.Status.Answer)
	}
	var tree api.WorkflowTree
	e.Do("GET", "/v2/agentruns/"+fr.Metadata.Name+"/nodes", "", &tree)
	if n := FindNode(tree.Root, "wf/sub/answer"); n == nil || n.Kind != "code" || n.State != "done" {
		t.Errorf("the tree has no done node of the named child: %+v", n)
	}
	// A pin given is kept.
	if st, a, ae := put("pinned", parentDoc("child-v"), `,"workflowChildren":{"child-v":1}`); st != 201 || a.Spec.WorkflowChildren["child-v"] != 1 {
		t.Fatalf("a given pin: HTTP %d %+v %v", st, ae, a.Spec.WorkflowChildren)
	}
	if got := runOutput("pinned"); got != 1 {
		t.Errorf("the pinned child answered %v, want 1", got)
	}

	for _, c := range []struct{ name, doc, extra, field, code, msg string }{
		{"orphan", parentDoc("nope"), "", "spec.workflow/root/steps/0/workflow", "child_unresolved", `no agent "nope" is stored`},
		{"no-rev", parentDoc("child-v"), `,"workflowChildren":{"child-v":9}`, "spec.workflow/root/steps/0/workflow", "child_unresolved", `agent "child-v" has no revision 9`},
		{"extra-pin", parentDoc("child-v"), `,"workflowChildren":{"child-v":1,"other":1}`, "spec.workflowChildren.other", "", `names no child "other"`},
		{"plain-child", parentDoc("plainagent"), "", "spec.workflow/root/steps/0/workflow", "child_unresolved", `has no workflow`},
	} {
		if c.name == "plain-child" {
			if st := e.Do("PUT", "/v2/agents/plainagent", `{"metadata":{"name":"plainagent"},"spec":{"tools":["dev_count"]}}`, nil); st != 201 {
				t.Fatalf("plain agent: HTTP %d", st)
			}
		}
		st, _, ae := put(c.name, c.doc, c.extra)
		if st != 422 || ae.Field != c.field || !strings.Contains(ae.Message, c.code) || !strings.Contains(ae.Message, c.msg) {
			t.Errorf("%s: HTTP %d %+v, want 422 at %s with %s and %q", c.name, st, ae, c.field, c.code, c.msg)
		}
	}

	// A cycle through named children: ping names pong; pong naming ping is refused.
	if st, _, ae := put("pong", childDoc(3), ""); st != 201 {
		t.Fatalf("pong: HTTP %d %+v", st, ae)
	}
	pingDoc := strings.Replace(parentDoc("pong"), `"name": "parent"`, `"name": "ping"`, 1)
	if st, _, ae := put("ping", pingDoc, ""); st != 201 {
		t.Fatalf("ping: HTTP %d %+v", st, ae)
	}
	pongCycle := `{"v": 2, "name": "pong", "schemas": {"CI": {"type": "object", "required": ["t"]}, "N": {"type": "number"}, "Out": {"type": "object"}},
  "input": {"schemaId": "CI"}, "output": {"schemaId": "N", "path": "got.got"},
  "root": {"node": "chain", "steps": [{"node": "workflow", "label": "back", "workflow": "ping", "input": {"t": "x"}, "out": "Out", "as": "got"}]}}`
	if st, _, ae := put("pong", pongCycle, ""); st != 422 || !strings.Contains(ae.Message, "child_cycle") || ae.Field != "spec.workflow/root/steps/0/workflow" {
		t.Errorf("a cycle through named children: HTTP %d %+v, want 422 child_cycle at the node", st, ae)
	}
}
