package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// treeDoc has a map, a loop with an ask predicate, a route by question and a report.
const treeDoc = `{"v": 2, "name": "t", "schemas": {"In": {"type": "object"}, "Out": {"type": "object"}, "R": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [
    {"node": "map", "label": "each", "itemsPath": "items", "as": "all", "maxConcurrency": 2,
     "body": {"node": "call", "label": "get", "via": "tool", "tool": "t", "args": {"n": "{item}"}, "out": "R", "as": "r", "deadline_s": 5}},
    {"node": "code", "label": "init", "code": "(s) => ({ i: 0 })"},
    {"node": "loop", "label": "again", "maxIters": 3, "until": {"predicate": "ask", "instructions": "Done?"},
     "body": {"node": "call", "label": "sh", "via": "shell", "command": "true", "as": "out", "deadline_s": 5}},
    {"node": "route", "label": "pick", "instructions": "Pick", "state": {"all": "{all}"}, "unsure": {"branch": "a", "gte": 0.5},
     "branches": {"a": {"body": {"node": "code", "label": "ca", "code": "(s) => ({ took: 'a' })"}},
                  "b": {"body": {"node": "code", "label": "cb", "code": "(s) => ({ took: 'b' })"}}}},
    {"node": "report", "label": "final", "instructions": "Report"}]}}`

func askResult(answer string, conf float64) json.RawMessage {
	text, _ := json.Marshal(fmt.Sprintf(`{"answer": %s, "confidence": %g}`, answer, conf))
	return json.RawMessage(`{"content": [{"type": "text", "text": ` + string(text) + `}]}`)
}

func micros(m int64) *int64 { return &m }

func find(t *TreeNode, key string) *TreeNode {
	if t.Key == key {
		return t
	}
	for _, c := range t.Children {
		if f := find(c, key); f != nil {
			return f
		}
	}
	return nil
}

func TestTree(t *testing.T) {
	w := mustValid(t, treeDoc)
	tool := func(key, content string) TreeStep {
		return TreeStep{Key: key, Kind: "tool", State: "Completed", Result: json.RawMessage(`{"Content": "` + content + `", "IsError": false}`)}
	}
	// A run waiting on a person at the loop's second shell call, after two items and one loop turn.
	steps := []TreeStep{
		tool("wf/each[0]/get", "zero"), tool("wf/each[1]/get", "one"),
		tool("wf/again#0/sh", "exit code 0"),
		{Key: "wf/again#0/$until", Kind: "model", State: "Completed", Result: askResult("false", 0.9), CostMicros: micros(120)},
		{Key: "wf/again#1/sh", Kind: "tool", State: "Started"},
	}
	tr := w.Tree(steps, TreeRun{WaitingKey: "wf/again#1/sh"})
	check := func(tr *TreeNode, key, state, value string) {
		t.Helper()
		n := find(tr, key)
		if n == nil {
			t.Fatalf("no node %s in the tree", key)
		}
		if n.State != state || (value != "" && n.Value != value) {
			t.Errorf("%s: state %q value %q, want %q %q", key, n.State, n.Value, state, value)
		}
	}
	check(tr, "wf/each", NodeDone, "")
	check(tr, "wf/each[1]/get", NodeDone, "one")
	check(tr, "wf/init", NodeDone, "")
	check(tr, "wf/again", NodeWaiting, "")
	check(tr, "wf/again#0", NodeDone, "")
	check(tr, "wf/again#0/$until", NodeDone, "false (confidence 0.90)")
	check(tr, "wf/again#1/sh", NodeWaiting, "")
	check(tr, "wf/pick", NodePending, "")
	check(tr, "wf/final", NodePending, "")
	check(tr, "wf", NodeWaiting, "")
	if got := find(tr, "wf/again").CostMicros; got != 120 {
		t.Errorf("the loop's cost %d, want the question's 120 rolled up", got)
	}
	if tr.Steps != 5 || tr.CostMicros != 120 {
		t.Errorf("root: %d steps, cost %d; want 5, 120", tr.Steps, tr.CostMicros)
	}

	// The same run finished: the route's answer b at confidence 0.3 is below unsure, so it took a.
	steps[4] = tool("wf/again#1/sh", "exit code 0")
	steps = append(steps,
		TreeStep{Key: "wf/again#1/$until", Kind: "model", State: "Completed", Result: askResult("true", 0.8)},
		TreeStep{Key: "wf/pick", Kind: "model", State: "Completed", Result: askResult(`"b"`, 0.3), CostMicros: micros(50)},
		TreeStep{Key: "wf/final/t0/model", Kind: "model", State: "Completed", Result: json.RawMessage(`{"content": [{"type": "text", "text": "# Report"}]}`), CostMicros: micros(1000)})
	tr = w.Tree(steps, TreeRun{Finished: true, Completed: true})
	check(tr, "wf/again#1/sh", NodeDone, "exit code 0")
	check(tr, "wf/again#1/$until", NodeDone, "")
	check(tr, "wf/pick", NodeDone, `"b" (confidence 0.30) → a`)
	check(tr, "wf/pick>a", NodeDone, "")
	check(tr, "wf/pick>b", NodeSkipped, "")
	check(tr, "wf/pick>b/cb", NodeSkipped, "")
	check(tr, "wf/final", NodeDone, "")
	check(tr, "wf/final/t0/model", NodeDone, "# Report")
	check(tr, "wf", NodeDone, "")
	if tr.CostMicros != 1170 || tr.CostUnknown != 1 {
		t.Errorf("root cost %d (+%d unknown), want 1170 and 1 unknown (the second until has no cost)", tr.CostMicros, tr.CostUnknown)
	}

	// Failed at the map's second item: the first is done, what comes after is skipped.
	tr = w.Tree([]TreeStep{tool("wf/each[0]/get", "zero"), {Key: "wf/each[1]/get", Kind: "tool", State: "Failed"}}, TreeRun{Finished: true, FailedKey: "wf/each[1]/get"})
	check(tr, "wf/each[1]/get", NodeFailed, "")
	check(tr, "wf/each", NodeFailed, "")
	check(tr, "wf/init", NodeSkipped, "")
	check(tr, "wf/again", NodeSkipped, "")
	check(tr, "wf", NodeFailed, "")
}

// The tree of a real engine run: every key the engine asked the host for is a node of the tree.
func TestTreeMatchesEngineKeys(t *testing.T) {
	w := mustValid(t, treeDoc)
	h := &askHost{recHost: &recHost{}}
	if _, err := w.Run(context.Background(), h, map[string]any{"items": []any{1.0, 2.0, 3.0}}); err != nil {
		t.Fatal(err)
	}
	var steps []TreeStep
	for _, k := range h.keys {
		if strings.HasSuffix(k, "/final") {
			k += "/t0/model" // the host makes the agent node's steps under its key
		}
		steps = append(steps, TreeStep{Key: k, Kind: "tool", State: "Completed"})
	}
	tr := w.Tree(steps, TreeRun{Finished: true})
	for _, s := range steps {
		if n := find(tr, s.Key); n == nil || n.State != NodeDone {
			t.Errorf("step %s: tree node %+v, want a done node", s.Key, n)
		}
	}
	if tr.Steps != len(steps) {
		t.Errorf("the tree holds %d steps, the run made %d", tr.Steps, len(steps))
	}
}

// askHost answers yes/no questions yes and others as recHost does.
type askHost struct{ *recHost }

func (h *askHost) Ask(ctx context.Context, key string, q Question) (Answer, error) {
	if q.Kind == "ask" {
		h.enter(key)
		defer h.leave()
		return Answer{Value: json.RawMessage(`true`), Confidence: 0.9}, nil
	}
	return h.recHost.Ask(ctx, key, q)
}

// A run that completed with no step at all (its nodes are pure): every node ran.
func TestTreePureRun(t *testing.T) {
	w := mustValid(t, `{"v": 2, "name": "p", "schemas": {"In": {"type": "object"}, "Out": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [{"node": "code", "label": "a", "code": "(s) => ({ x: 1 })"}, {"node": "code", "label": "b", "code": "(s) => ({ y: 2 })"}]}}`)
	for _, c := range []struct {
		run  TreeRun
		want string
	}{{TreeRun{Finished: true, Completed: true}, NodeDone}, {TreeRun{Finished: true}, NodeSkipped}, {TreeRun{}, NodePending}} {
		tr := w.Tree(nil, c.run)
		if n := find(tr, "wf/b"); n == nil || n.State != c.want {
			t.Errorf("%+v: node b %+v, want %s", c.run, n, c.want)
		}
	}
}
