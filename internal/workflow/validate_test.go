package workflow

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestEveryErrorWithPosition: one document with seven mistakes reports all seven, each at the
// line and column of the value it is about.
func TestEveryErrorWithPosition(t *testing.T) {
	raw, err := os.ReadFile("testdata/multi-error.json")
	if err != nil {
		t.Fatal(err)
	}
	_, errs := Validate(raw, Options{})
	want := []struct {
		code, ptr string
		line, col int
	}{
		{CodePathUnwritten, "/root/steps/0/args/url", 11, 24},
		{CodeSchemaUnknown, "/root/steps/0/out", 11, 43},
		{CodeOutOfBounds, "/root/steps/0/deadline_s", 11, 80},
		{CodeUnknownField, "/root/steps/0/retries", 11, 83},
		{CodeTerminalNotLast, "/root/steps/1/node", 12, 15},
		{CodeDuplicateLabel, "/root/steps/1/label", 12, 34},
		{CodeUnknownKind, "/root/steps/2/node", 13, 15},
	}
	if len(errs) != len(want) {
		t.Fatalf("want %d errors, got %d: %v", len(want), len(errs), errs)
	}
	for i, w := range want {
		e := errs[i]
		if e.Code != w.code || e.Pointer != w.ptr || e.Line != w.line || e.Column != w.col {
			t.Errorf("error %d: want %s %s %d:%d, got %s %s %d:%d", i, w.code, w.ptr, w.line, w.col, e.Code, e.Pointer, e.Line, e.Column)
		}
	}
}

// TestRunnable: every kind of the published set runs, so a document the language accepts is not
// refused for its kinds when a run asks (Runnable).
func TestRunnable(t *testing.T) {
	for k := range kinds {
		if !RunnableKinds[k] {
			t.Errorf("kind %q is not runnable", k)
		}
	}
	raw := []byte(`{"v": 2, "name": "s", "schemas": {"In": {"type": "object", "properties": {"items": {"type": "array"}}, "additionalProperties": false},
  "Q": {"type": "object", "properties": {"ok": {"type": "boolean", "description": "ok?"}}}, "A": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "A", "path": "r"},
  "root": {"node": "sift", "label": "s", "itemsPath": "items", "out": "Q", "as": "r"}}`)
	if _, errs := Validate(raw, Options{Runnable: true}); len(errs) != 0 {
		t.Fatalf("a sift refused: %v", errs)
	}
}

// TestRunCode: a code node's function runs on a frozen copy of state, deterministically, with
// none of the host reachable, and is cut off at its time limit.
func TestRunCode(t *testing.T) {
	out, err := RunCode(context.Background(), "(s) => ({ total: s.items.reduce((a, b) => a + b, 0) })", map[string]any{"items": []any{1, 2, 3}})
	if err != nil || string(out) != `{"total":6}` {
		t.Fatalf("got %s, %v", out, err)
	}
	for _, src := range []string{
		"(s) => Date.now()",
		"(s) => globalThis",
		"(s) => require('fs')",
		"(s) => Math.random()",
		"(s) => { s.items.push(4); return s }",
		"(s) => new Function('return 1')()",
	} {
		if out, err := RunCode(context.Background(), src, map[string]any{"items": []any{1}}); err == nil {
			t.Errorf("%s: ran and returned %s, want refused", src, out)
		}
	}
	if _, err := RunCode(context.Background(), "(s) => { while (true) {} }", nil); err == nil || !strings.Contains(err.Error(), "time limit") {
		t.Fatalf("endless loop: want the time limit, got %v", err)
	}
}

// TestSchemaInvalidAtItsPlace: a schema that is not valid JSON Schema is reported at each keyword
// that is wrong, with the metaschema's reason, and the document's other schemas (compiled in the
// same resource) are not blamed for it.
func TestSchemaInvalidAtItsPlace(t *testing.T) {
	raw := []byte(`{
  "v": 2, "name": "s",
  "schemas": {
    "In": {"type": "object", "required": ["website"], "properties": {"website": {"type": "string"}}},
    "Page": {"type": "object", "properties": {"n": {"type": "number", "minimum": "zero"}}},
    "Bad": {"type": 12}
  },
  "input": {"schemaId": "In"},
  "output": {"schemaId": "Page", "path": "home"},
  "root": {"node": "chain", "steps": [
    {"node": "call", "label": "read", "via": "tool", "tool": "web_fetch", "args": {"url": "{website}"}, "out": "Page", "as": "home", "deadline_s": 60}
  ]}
}`)
	_, errs := Validate(raw, Options{})
	want := []struct {
		ptr       string
		line, col int
		says      string
	}{
		{"/schemas/Page/properties/n/minimum", 5, 82, "got string, want number"},
		{"/schemas/Bad/type", 6, 21, "value must be one of"},
	}
	if len(errs) != len(want) {
		t.Fatalf("want %d errors, got %d: %v", len(want), len(errs), errs)
	}
	for i, w := range want {
		e := errs[i]
		if e.Code != CodeSchemaInvalid || e.Pointer != w.ptr || e.Line != w.line || e.Column != w.col || !strings.Contains(e.Message, w.says) {
			t.Errorf("error %d: want schema_invalid at %s %d:%d saying %q, got %s at %s %d:%d: %s", i, w.ptr, w.line, w.col, w.says, e.Code, e.Pointer, e.Line, e.Column, e.Message)
		}
	}
}

// TestCheckInputSaysWhere: a value that does not match its schema is refused naming each place
// and why, without the schema library's preamble (the document's internal schema URL).
func TestCheckInputSaysWhere(t *testing.T) {
	raw, err := os.ReadFile("testdata/conformance/001-seed-read-site.json")
	if err != nil {
		t.Fatal(err)
	}
	w, errs := Validate(raw, Options{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for in, want := range map[string]string{
		"number": `the input does not match schema "In": at /website: got number, want string`,
		"none":   `the input does not match schema "In": at /: missing property 'website'`,
	} {
		v := map[string]any{"website": 5}
		if in == "none" {
			v = map[string]any{}
		}
		if err := w.CheckInput(v); err == nil || err.Error() != want {
			t.Errorf("input %s: %v, want %s", in, err, want)
		}
	}
}
