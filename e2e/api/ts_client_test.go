package api

import (
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "agentrun.dev/agentrun/e2e/e2etest"
)

var updateTSSchema = flag.Bool("update-ts-schema", false, "TestTSClient: write packages/client/src/schema.ts from the served OpenAPI document")

// tsClientEntries are the scripted model's replies the TypeScript tests (packages/client/test)
// expect, before the evaluation environments' entries.
var tsClientEntries = []map[string]any{
	{"name": "notes", "match": "Ask me which region", "turns": []map[string]any{
		{"text": "I'll ask which region.", "tool_calls": []map[string]any{{"name": "ask_person", "input": map[string]any{"question": "Which region should I cover?"}}}},
		{"tool_calls": []map[string]any{{"name": "write", "input": map[string]any{"path": "region.md", "content": "# {{last_tool_result}}\n\nNotes about {{last_tool_result}}.\n"}}}},
		{"text": "I wrote region.md."},
	}},
	{"name": "gated", "match": "Count once", "turns": []map[string]any{
		{"tool_calls": []map[string]any{{"name": "dev_count", "input": map[string]any{"label": "ts"}}}},
		{"text": "counted"},
	}},
}

// TestTSClient runs the TypeScript client's tests (packages/client, `npm test`: tsc, then node's
// test runner) against the real binary and the scripted model server. It installs the client's
// pinned devDependencies with `npm ci` first, and skips, saying why, without Node.js 20+, npm or
// a reachable registry.
func TestTSClient(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("Node.js is not installed: the TypeScript client's tests need node 20 or later")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed: the TypeScript client's tests need it to install typescript and openapi-typescript")
	}
	out, err := exec.Command(node, "-p", "process.versions.node").Output()
	if err != nil {
		t.Fatalf("node -p process.versions.node: %v", err)
	}
	if major, _ := strconv.Atoi(strings.SplitN(strings.TrimSpace(string(out)), ".", 2)[0]); major < 20 {
		t.Skipf("Node.js %s is older than 20, which the client needs", strings.TrimSpace(string(out)))
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "packages", "client"))
	if err != nil {
		t.Fatal(err)
	}
	// The committed lockfile names no registry: npm resolves against whatever registry the machine
	// is configured with (.npmrc: omit-lockfile-registry-resolved).
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(lock), `"resolved"`) {
		t.Errorf("packages/client/package-lock.json carries resolved URLs: install with the package's .npmrc (omit-lockfile-registry-resolved=true)")
	}
	install := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--prefer-offline")
	install.Dir = dir
	if b, err := install.CombinedOutput(); err != nil {
		t.Skipf("npm ci could not install the client's devDependencies (no registry reachable?): %v\n%s", err, Tail(string(b), 2000))
	}

	// The evaluation environments' replies (as the Go evaluation tests script them), after ours.
	var script struct {
		Entries []map[string]any `json:"entries"`
	}
	if err := json.Unmarshal([]byte(EvalScript(t, "", "")), &script); err != nil {
		t.Fatal(err)
	}
	script.Entries = append(append(tsClientEntries, script.Entries...), map[string]any{"name": "anything", "match": "*", "turns": []map[string]any{{"text": "(scripted) hello"}}})
	b, _ := json.Marshal(script)
	e := NewEnv(t, string(b))
	e.Start()
	tsEnv := append(os.Environ(), "AGENTRUN_URL="+e.URL, "AGENTRUN_TOKEN="+e.Token)

	if *updateTSSchema {
		gen := exec.Command(npm, "run", "generate")
		gen.Dir, gen.Env = dir, tsEnv
		if b, err := gen.CombinedOutput(); err != nil {
			t.Fatalf("npm run generate: %v\n%s", err, b)
		}
	}
	test := exec.Command(npm, "test")
	test.Dir, test.Env = dir, tsEnv
	b, err = test.CombinedOutput()
	if err != nil {
		t.Fatalf("npm test failed: %v\n%s", err, b)
	}
	// node's runner prints "# pass N" and "# skipped N": a run where nothing ran is no pass.
	if !strings.Contains(string(b), "# skipped 0") || strings.Contains(string(b), "# pass 0") {
		t.Fatalf("npm test passed without running its tests:\n%s", b)
	}
	t.Logf("npm test:\n%s", Tail(string(b), 1500))
}
