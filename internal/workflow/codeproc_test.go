package workflow

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestCodeNodeMemory: a code node that asks for a terabyte at once ("a".repeat(2 ** 40), new
// ArrayBuffer(2 ** 40)) or grows without end fails the node code_memory, and this process (the
// server, in production) goes on: the next code node runs. Before code nodes ran in a child, the
// first of these ended the test binary with "fatal error: runtime: out of memory".
func TestCodeNodeMemory(t *testing.T) {
	for _, src := range []string{
		`(s) => ({ n: "a".repeat(2 ** 40).length })`,
		`(s) => ({ n: new ArrayBuffer(2 ** 40).byteLength })`,
		`(s) => { const keep = []; for (;;) { keep.push(new ArrayBuffer(64 << 20)) } }`,
	} {
		w := mustValid(t, `{"v": 2, "name": "m", "schemas": {"Out": {"type": "object"}}, "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [
  {"node": "code", "label": "boom", "code": `+jsonString(src)+`}]}}`)
		_, err := w.Run(context.Background(), &recHost{}, nil)
		var f *Failure
		if !errors.As(err, &f) || f.Code != FailCodeMemory || f.Key != "wf/boom" || !strings.Contains(f.Cause, "out of memory") {
			t.Errorf("%s: want the node to fail %s, got %v", src, FailCodeMemory, err)
		}
	}
	out, err := RunCode(context.Background(), `(s) => ({ n: s.n + 1 })`, map[string]any{"n": 1})
	if err != nil || string(out) != `{"n":2}` {
		t.Fatalf("a code node after them: %s, %v", out, err)
	}
}

// TestCodeNodeDeepResult: a deep result (150,000 levels took JSON.stringify 149 s, past the 2 s
// limit; 20,000 here, which the old code converted) is refused naming the depth bound; one at
// the bound converts.
func TestCodeNodeDeepResult(t *testing.T) {
	_, err := RunCode(context.Background(), `(s) => { let o = {}; for (let i = 0; i < 20000; i++) o = { a: o }; return o }`, nil)
	if err == nil || !strings.Contains(err.Error(), "nested over 100 levels") {
		t.Fatalf("20,000 deep: want the depth bound, got %v", err)
	}
	out, err := RunCode(context.Background(), `(s) => { let o = 1; for (let i = 0; i < 99; i++) o = [o]; return { o } }`, nil)
	if err != nil || !strings.HasPrefix(string(out), `{"o":[[[`) {
		t.Fatalf("100 deep: %.40s, %v", out, err)
	}
	// Wide rather than deep: values over the size bound stop the conversion.
	if _, err := RunCode(context.Background(), `(s) => ({ xs: Array.from({ length: 20000 }, () => "x".repeat(100)) })`, nil); err == nil || !strings.Contains(err.Error(), "over 1048576 bytes") {
		t.Fatalf("20,000 strings of 100: want the size bound, got %v", err)
	}
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// TestExecutorMemory: an executor body runs in a code child too: one that asks for a terabyte
// after a tool call fails the node code_memory (the call made once) instead of ending the
// process, and the tool calls of the next body still work.
func TestExecutorMemory(t *testing.T) {
	doc := func(body string) string {
		return `{"v": 2, "name": "e", "schemas": {"R": {"type": "object"}}, "output": {"schemaId": "R", "path": "res"},
  "root": {"node": "call", "label": "ex", "via": "executor", "code": ` + jsonString(body) + `, "input": {}, "out": "R", "as": "res", "deadline_s": 30}}`
	}
	answer := func(key string, n int, args map[string]any) ToolResult { return ToolResult{Content: `{"ok": 1}`} }
	h := newKindHost()
	h.tool = answer
	w := mustValid(t, doc(`await tools.dev_count({label: "a"}); return { n: new ArrayBuffer(2 ** 40).byteLength };`))
	_, err := w.Run(context.Background(), h, nil)
	var f *Failure
	if !errors.As(err, &f) || f.Code != FailCodeMemory || f.Key != "wf/ex" {
		t.Errorf("want the node to fail %s, got %v", FailCodeMemory, err)
	}
	if got := strings.Join(h.effects, " "); got != "wf/ex/tool#0" {
		t.Errorf("tool calls %q, want the one before the allocation", got)
	}
	h = newKindHost()
	h.tool = answer
	w = mustValid(t, doc(`const a = await tools.dev_count({label: "b"}); return { n: 1, got: a.content };`))
	if r, err := w.Run(context.Background(), h, nil); err != nil || !strings.Contains(string(r.Output), `"n":1`) {
		t.Errorf("a body after it: %v", err)
	}
}
