package workflow

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "agentrun.dev/agentrun/e2e/e2etest"
)

// seedWorkflow is the AgentRun README's read-site example, as written.
const seedWorkflow = `{
  "v": 2, "name": "read-site",
  "schemas": {
    "In":   { "type": "object", "required": ["website"], "properties": { "website": { "type": "string" } } },
    "Page": { "type": "object", "required": ["ok"], "properties": { "ok": { "type": "boolean" } } }
  },
  "input":  { "schemaId": "In" },
  "output": { "schemaId": "Page", "path": "home" },
  "root": { "node": "chain", "steps": [
    { "node": "call", "label": "Read the home page", "via": "tool", "tool": "web_fetch",
      "args": { "url": "{website}" }, "out": "Page", "as": "home", "deadline_s": 60 }
  ] }
}
`

// sopWorkflow names an SOP section, which this server does not have.
const sopWorkflow = `{"v": 2, "name": "s", "schemas": {"In": {"type": "object", "properties": {"items": {"type": "array"}}},
  "A": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "A"},
  "root": {"node": "chain", "steps": [{"node": "decide", "label": "keep", "instructions": "Decide", "sopSection": "Triage", "out": "A", "as": "r"}]}}`

// TestWorkflowsValidate: the real binary's workflows validate takes the seed's example (exit 0)
// and prints every error of a broken one as FILE:LINE:COL code at pointer (exit 1); workflows
// run --dry-run prints the plan and calls nothing; POST /v2/workflows:validate answers the same
// errors with their positions.
func TestWorkflowsValidate(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, "entries:\n  - name: unused\n    match: \"never asked\"\n    turns:\n      - text: unused\n")
	dir := t.TempDir()
	good := filepath.Join(dir, "read-site.json")
	if err := os.WriteFile(good, []byte(seedWorkflow), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(strings.Replace(seedWorkflow, `"{website}"`, `"{site}"`, 1), `"deadline_s": 60`, `"deadline_s": 60, "retries": 2`, 1)
	bad := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(bad, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := e.CLI(dir, "workflows", "validate", good); r.Code != 0 || !strings.Contains(r.Stdout, "valid") {
		t.Fatalf("validate the seed's example: exit %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	r := e.CLI(dir, "workflows", "validate", bad)
	if r.Code != 1 {
		t.Fatalf("validate a broken workflow: exit %d, want 1", r.Code)
	}
	for _, want := range []string{
		bad + ":11:24: path_unwritten at /root/steps/0/args/url:",
		bad + ":11:83: unknown_field at /root/steps/0/retries:",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("validate output lacks %q:\n%s", want, r.Stdout)
		}
	}
	if r := e.CLI(dir, "workflows", "validate", "--runnable", good); r.Code != 0 {
		t.Errorf("validate --runnable of the seed's example (its call runs): exit %d %s", r.Code, r.Stdout)
	}
	// sopSection does not run (no SOP here): refused naming it, by validate --runnable and by run.
	par := WriteFile(t, dir, "sop.json", sopWorkflow)
	if r := e.CLI(dir, "workflows", "validate", "--runnable", par); r.Code != 1 || !strings.Contains(r.Stdout, "kind_not_runnable at /root/steps/0/sopSection") {
		t.Errorf("validate --runnable: exit %d %s", r.Code, r.Stdout)
	}
	plan := e.CLI(dir, "workflows", "run", good, "--agent", "reader", "--input", `{"website": "https://example.com"}`, "--dry-run")
	if plan.Code != 0 || !strings.Contains(plan.Stdout, `call "Read the home page" tool web_fetch (deadline 60s)`) || !strings.Contains(plan.Stdout, "worst case: 1 tool calls") {
		t.Errorf("dry run: exit %d\n%s%s", plan.Code, plan.Stdout, plan.Stderr)
	}
	if r := e.CLI(dir, "workflows", "run", good, "--agent", "reader", "--input", `{"site": 1}`, "--dry-run"); r.Code != 1 || !strings.Contains(r.Stderr, `schema "In"`) {
		t.Errorf("dry run with an input the schema refuses: exit %d %s", r.Code, r.Stderr)
	}
	if r := e.CLI(dir, "workflows", "run", par, "--agent", "reader"); r.Code != 1 || !strings.Contains(r.Stderr, "kind_not_runnable") {
		t.Errorf("run of a kind not run: exit %d %s", r.Code, r.Stderr)
	}

	e.Start()
	status, body := e.Post("/v2/workflows:validate", broken, nil)
	var v struct {
		Valid  bool `json:"valid"`
		Errors []struct {
			Code, Pointer, Message string
			Line, Column           int
		} `json:"errors"`
	}
	if err := json.Unmarshal(body, &v); err != nil || status != 200 {
		t.Fatalf("POST /v2/workflows:validate: %d %s", status, body)
	}
	if v.Valid || len(v.Errors) != 2 || v.Errors[0].Code != "path_unwritten" || v.Errors[0].Pointer != "/root/steps/0/args/url" || v.Errors[0].Line != 11 || v.Errors[0].Column != 24 ||
		v.Errors[1].Code != "unknown_field" || v.Errors[1].Pointer != "/root/steps/0/retries" {
		t.Errorf("POST /v2/workflows:validate: %s", body)
	}
	if status, body := e.Post("/v2/workflows:validate", seedWorkflow, nil); status != 200 || !strings.Contains(string(body), `"valid": true`) {
		t.Errorf("POST /v2/workflows:validate of the seed's example: %d %s", status, body)
	}
}
