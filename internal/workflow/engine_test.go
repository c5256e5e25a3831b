package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// recHost records every effect's key and answers tool calls with their arguments; the tests
// check what the engine asks for, under which keys, and how many at once.
type recHost struct {
	mu       sync.Mutex
	keys     []string
	inFlight int
	most     int
	// answer is every question's answer (default "b" at confidence 0.4).
	answer json.RawMessage
	asked  []Question
	// block makes tool calls wait until their context ends.
	block bool
}

func (h *recHost) enter(key string) {
	h.mu.Lock()
	h.keys = append(h.keys, key)
	h.inFlight++
	h.most = max(h.most, h.inFlight)
	h.mu.Unlock()
}

func (h *recHost) leave() { h.mu.Lock(); h.inFlight--; h.mu.Unlock() }

func (h *recHost) Tool(ctx context.Context, key, tool string, args map[string]any) (ToolResult, error) {
	h.enter(key)
	defer h.leave()
	if h.block {
		<-ctx.Done()
		return ToolResult{}, ctx.Err()
	}
	time.Sleep(time.Millisecond) // let other items start, so the bound is exercised
	b, _ := json.Marshal(args)
	return ToolResult{Content: string(b)}, nil
}

func (h *recHost) Shell(ctx context.Context, key, command string, env map[string]string, d time.Duration) (ShellResult, error) {
	h.enter(key)
	defer h.leave()
	return ShellResult{Code: 0, Stdout: command}, nil
}

func (h *recHost) Ask(ctx context.Context, key string, q Question) (Answer, error) {
	h.enter(key)
	defer h.leave()
	h.mu.Lock()
	h.asked = append(h.asked, q)
	h.mu.Unlock()
	if h.answer != nil {
		return Answer{Value: h.answer, Confidence: 0.8}, nil
	}
	return Answer{Value: json.RawMessage(`"b"`), Confidence: 0.4}, nil
}

func (h *recHost) Agent(ctx context.Context, key string, t Task) (string, error) {
	h.enter(key)
	defer h.leave()
	return "# Report\n\nEverything in the state was looked at carefully.", nil
}

func mustValid(t *testing.T, doc string) *Workflow {
	t.Helper()
	w, errs := Validate([]byte(doc), Options{Runnable: true})
	if len(errs) > 0 {
		t.Fatalf("invalid: %v", errs)
	}
	return w
}

// TestEngineMapKeys: a map's items run at most maxConcurrency at a time, each effect keyed by
// its item's path, results in item order; a loop's iterations and a route's branch are in the
// keys too; a route below unsure's threshold takes the unsure branch.
func TestEngineMapKeys(t *testing.T) {
	w := mustValid(t, `{"v": 2, "name": "m", "schemas": {"In": {"type": "object"}, "R": {"type": "object"}, "Out": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [
    {"node": "map", "label": "each", "itemsPath": "items", "as": "all", "maxConcurrency": 2, "resultPath": "r.data.n",
     "body": {"node": "call", "label": "get", "via": "tool", "tool": "t", "args": {"n": "{item}"}, "out": "R", "as": "r", "deadline_s": 5}},
    {"node": "code", "label": "init", "code": "(s) => ({ i: 0 })"},
    {"node": "loop", "label": "again", "maxIters": 9, "until": {"predicate": "gte", "path": "i", "n": 2},
     "body": {"node": "chain", "steps": [
       {"node": "call", "label": "sh", "via": "shell", "command": "true", "as": "out", "deadline_s": 5},
       {"node": "code", "label": "inc", "code": "(s) => ({ i: s.i + 1 })"}]}},
    {"node": "route", "label": "pick", "instructions": "Pick", "state": {"all": "{all}"}, "unsure": {"branch": "a", "gte": 0.5},
     "branches": {"a": {"body": {"node": "code", "label": "ca", "code": "(s) => ({ took: 'a' })"}},
                  "b": {"body": {"node": "code", "label": "cb", "code": "(s) => ({ took: 'b' })"}}}},
    {"node": "report", "label": "final", "instructions": "Report"}]}}`)
	h := &recHost{}
	items := []any{}
	for i := range 7 {
		items = append(items, float64(i*10))
	}
	res, err := w.Run(context.Background(), h, map[string]any{"items": items})
	if err != nil {
		t.Fatal(err)
	}
	if h.most > 2 {
		t.Errorf("%d effects at once, want at most maxConcurrency 2", h.most)
	}
	var out map[string]any
	if err := json.Unmarshal(res.Output, &out); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(out["all"]) != "[0 10 20 30 40 50 60]" || out["took"] != "a" || out["i"] != 2.0 {
		t.Errorf("output %v", out)
	}
	sort.Strings(h.keys)
	want := []string{"wf/again#0/sh", "wf/again#1/sh", "wf/each[0]/get", "wf/each[1]/get", "wf/each[2]/get", "wf/each[3]/get",
		"wf/each[4]/get", "wf/each[5]/get", "wf/each[6]/get", "wf/final", "wf/pick"}
	if strings.Join(h.keys, " ") != strings.Join(want, " ") {
		t.Errorf("keys\n %v\nwant\n %v", h.keys, want)
	}
}

// TestEngineStops: escalate stops with its interpolated summary, requires stops naming the path,
// a value its out schema refuses fails output_invalid, a bad input fails before any effect, and a
// route on valuePath takes otherwise for an unknown value.
func TestEngineStops(t *testing.T) {
	const head = `{"v": 2, "name": "s", "schemas": {"In": {"type": "object", "required": ["x"]}, "Out": {"type": "object"}, "Num": {"type": "number"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"}, "root": {"node": "chain", "steps": [`
	esc := mustValid(t, head+`{"node": "escalate", "label": "e", "when": {"predicate": "field_equals", "path": "x", "value": "bad"}, "kind": "human", "stage": "s1", "summary": "x is {x}, y {y}"},
    {"node": "code", "label": "c", "code": "(s) => ({ done: true })"}]}}`)
	if r, err := esc.Run(context.Background(), &recHost{}, map[string]any{"x": "bad"}); err != nil || r.Escalation == nil || r.Escalation.Summary != "x is bad, y (y unset)" || r.Escalation.Path != "wf/e" {
		t.Errorf("escalate: %+v %v", r, err)
	}
	if r, err := esc.Run(context.Background(), &recHost{}, map[string]any{"x": "good"}); err != nil || r.Escalation != nil || !strings.Contains(string(r.Output), `"done":true`) {
		t.Errorf("no escalation: %+v %v", r, err)
	}
	h := &recHost{}
	if _, err := esc.Run(context.Background(), h, map[string]any{"y": 1}); !isFailure(err, FailInput) || len(h.keys) != 0 {
		t.Errorf("bad input: %v, effects %v", err, h.keys)
	}
	req := mustValid(t, head+`{"node": "call", "label": "get", "via": "tool", "tool": "t", "args": {}, "out": "Out", "as": "r", "deadline_s": 5, "requires": ["x"]}]}}`)
	if _, err := req.Run(context.Background(), &recHost{}, map[string]any{"x": " "}); !isFailure(err, FailRequires) || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("requires: %v", err)
	}
	out := mustValid(t, head+`{"node": "call", "label": "get", "via": "tool", "tool": "t", "args": {}, "out": "Num", "as": "r", "deadline_s": 5}]}}`)
	if _, err := out.Run(context.Background(), &recHost{}, map[string]any{"x": 1}); !isFailure(err, FailOutput) || !strings.Contains(err.Error(), `"Num"`) {
		t.Errorf("out schema: %v", err)
	}
	disp := mustValid(t, head+`{"node": "route", "label": "d", "valuePath": "x", "otherwise": "no", "as": "rt", "branches": {
      "yes": {"body": {"node": "code", "label": "y", "code": "(s) => ({ v: 1 })"}}, "no": {"body": {"node": "code", "label": "n", "code": "(s) => ({ v: 2 })"}}}}]}}`)
	for in, want := range map[string]string{"yes": `"v":1`, "maybe": `"v":2`} {
		h := &recHost{}
		r, err := disp.Run(context.Background(), h, map[string]any{"x": in})
		if err != nil || !strings.Contains(string(r.Output), want) || len(h.keys) != 0 {
			t.Errorf("dispatch on %q: %s %v (no model call: %v)", in, r.Output, err, h.keys)
		}
	}
	if _, err := disp.Run(context.Background(), &recHost{}, map[string]any{"x": 3}); !isFailure(err, FailBranch) {
		t.Errorf("dispatch on a number: %v", err)
	}
}

// TestEngineNotRunnable: a field the engine does not run (sopSection: this server has no SOP) is
// refused at run start naming it, before any effect.
func TestEngineNotRunnable(t *testing.T) {
	w, errs := Validate([]byte(`{"v": 2, "name": "s", "schemas": {"In": {"type": "object", "properties": {"items": {"type": "array"}}},
  "Q": {"type": "object", "properties": {"ok": {"type": "boolean", "description": "ok?"}}}, "A": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "A"},
  "root": {"node": "chain", "steps": [{"node": "call", "label": "first", "via": "tool", "tool": "t", "args": {}, "out": "A", "as": "f", "deadline_s": 5},
    {"node": "decide", "label": "keep", "instructions": "Decide", "sopSection": "Triage", "out": "A", "as": "r"}]}}`), Options{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	h := &recHost{}
	_, err := w.Run(context.Background(), h, map[string]any{"items": []any{}})
	if !isFailure(err, CodeNotRunnable) || !strings.Contains(err.Error(), `sopSection of "keep"`) || len(h.keys) != 0 {
		t.Errorf("got %v, effects %v", err, h.keys)
	}
}

// TestEngineParallel: branches start from the same state, run at once, and their writes merge.
func TestEngineParallel(t *testing.T) {
	w := mustValid(t, `{"v": 2, "name": "p", "schemas": {"A": {"type": "object"}}, "output": {"schemaId": "A"},
  "root": {"node": "chain", "steps": [{"node": "parallel", "label": "both", "branches": [
    {"node": "call", "label": "a", "via": "tool", "tool": "t", "args": {"n": 1}, "out": "A", "as": "x", "deadline_s": 5},
    {"node": "code", "label": "b", "code": "(s) => ({ y: 2 })"}]}]}}`)
	h := &recHost{}
	r, err := w.Run(context.Background(), h, nil)
	if err != nil || !strings.Contains(string(r.Output), `"y":2`) || !strings.Contains(string(r.Output), `"x":{`) || strings.Join(h.keys, " ") != "wf/both/a" {
		t.Errorf("got %s %v, keys %v", r.Output, err, h.keys)
	}
}

func isFailure(err error, code string) bool {
	var f *Failure
	return errors.As(err, &f) && f.Code == code
}

// TestEnginePick: pick offers each item as described, one question; the answer's option becomes
// {index, item, none, option}; allowNone adds "none"; an answer outside the options fails.
func TestEnginePick(t *testing.T) {
	w := mustValid(t, `{"v": 2, "name": "p", "schemas": {"In": {"type": "object"}, "Out": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out", "path": "chosen"},
  "root": {"node": "chain", "steps": [{"node": "pick", "label": "which", "itemsPath": "files", "describe": "{item.name} ({item.size} bytes)",
    "instructions": "Pick the biggest file", "allowNone": true, "as": "chosen"}]}}`)
	in := map[string]any{"files": []any{map[string]any{"name": "a", "size": 1.0}, map[string]any{"name": "b", "size": 9.0}}}
	for ans, want := range map[string]string{`"i1"`: `{"confidence":0.8,"index":1,"item":{"name":"b","size":9},"none":false,"option":"b (9 bytes)"}`,
		`"none"`: `{"confidence":0.8,"index":null,"item":null,"none":true,"option":null}`} {
		h := &recHost{answer: json.RawMessage(ans)}
		r, err := w.Run(context.Background(), h, in)
		if err != nil || string(r.Output) != want {
			t.Errorf("answer %s: %s %v, want %s", ans, r.Output, err, want)
			continue
		}
		if len(h.asked) != 1 || !strings.Contains(h.asked[0].Instructions, "i0: a (1 bytes)") || !strings.Contains(string(h.asked[0].Schema), `"none"`) {
			t.Errorf("question %+v", h.asked)
		}
	}
	if _, err := w.Run(context.Background(), &recHost{answer: json.RawMessage(`"i7"`)}, in); !isFailure(err, FailOutput) {
		t.Errorf("an answer outside the options: %v", err)
	}
}

// TestEngineAsk: an ask predicate is one yes/no question per evaluation, keyed by the loop's
// iteration; it holds when the probability of yes reaches gte.
func TestEngineAsk(t *testing.T) {
	w := mustValid(t, `{"v": 2, "name": "a", "schemas": {"In": {"type": "object"}, "Out": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [{"node": "code", "label": "init", "code": "(s) => ({ n: 0 })"},
    {"node": "loop", "label": "l", "maxIters": 3, "until": {"predicate": "ask", "instructions": "Is it done?", "gte": 0.7},
     "body": {"node": "code", "label": "inc", "code": "(s) => ({ n: s.n + 1 })"}}]}}`)
	for ans, want := range map[string]string{"true": `{"n":1}`, "false": `{"n":3}`} {
		h := &recHost{answer: json.RawMessage(ans)} // confidence 0.8: yes at 0.8 holds, no at 0.8 is yes at 0.2
		r, err := w.Run(context.Background(), h, map[string]any{})
		if err != nil || string(r.Output) != want {
			t.Errorf("answer %s: %s %v, want %s", ans, r.Output, err, want)
		}
		if ans == "false" && strings.Join(h.keys, " ") != "wf/l#0/$until wf/l#1/$until wf/l#2/$until" {
			t.Errorf("keys %v", h.keys)
		}
	}
}

// TestEngineChild: an inline child starts from its input only, its effects are keyed under the
// child node, and its output is checked against the parent's out and written at as.
func TestEngineChild(t *testing.T) {
	w := mustValid(t, `{"v": 2, "name": "parent", "schemas": {"In": {"type": "object"}, "Res": {"type": "object", "required": ["got"]}, "Out": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out", "path": "res"},
  "root": {"node": "chain", "steps": [{"node": "workflow", "label": "sub", "input": {"q": "{query}"}, "out": "Res", "as": "res",
    "workflow": {"v": 2, "name": "child", "schemas": {"CI": {"type": "object", "required": ["q"]}, "R": {"type": "object"}, "CO": {"type": "object"}},
      "input": {"schemaId": "CI"}, "output": {"schemaId": "CO"},
      "root": {"node": "chain", "steps": [{"node": "call", "label": "get", "via": "tool", "tool": "t", "args": {"q": "{q}"}, "out": "R", "as": "got", "deadline_s": 5}]}}}]}}`)
	h := &recHost{}
	r, err := w.Run(context.Background(), h, map[string]any{"query": "x", "secret": "not for the child"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(h.keys, " ") != "wf/sub/get" || strings.Contains(string(r.Output), "secret") || !strings.Contains(string(r.Output), `"q":"x"`) {
		t.Errorf("keys %v output %s", h.keys, r.Output)
	}
}

// TestEngineDeadline: a call with no result within deadline_s fails effect_timeout, once (not
// retried: its outcome is unknown).
func TestEngineDeadline(t *testing.T) {
	w := mustValid(t, `{"v": 2, "name": "d", "schemas": {"A": {"type": "object"}}, "output": {"schemaId": "A"},
  "root": {"node": "chain", "steps": [{"node": "call", "label": "slow", "via": "tool", "tool": "t", "args": {}, "out": "A", "as": "x",
    "deadline_s": 0.05, "retry": {"attempts": 3}}]}}`)
	h := &recHost{block: true}
	if _, err := w.Run(context.Background(), h, nil); !isFailure(err, FailTimeout) || len(h.keys) != 1 {
		t.Errorf("got %v, calls %v", err, h.keys)
	}
}
