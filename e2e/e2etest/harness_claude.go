package e2etest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/harness"
)

// ClaudeHarness returns the harness cache folder holding the pinned claude-code (see
// InstalledHarness).
func ClaudeHarness(t *testing.T) string { return InstalledHarness(t, "claude-agent") }

// NewClaudeEnv is NewEnv with the harness cache given to the server.
func NewClaudeEnv(t *testing.T, script string) *Env {
	cache := ClaudeHarness(t)
	e := NewEnv(t, script)
	e.Extra = append(e.Extra, harness.CacheEnv+"="+cache)
	return e
}

// HarnessProcs lists the processes still running whose command line names the data folder (the
// harness gets its MCP config from DATA/harness-home/RUN).
func HarnessProcs(dir string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, en := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", en.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(filepath.Join(dir, "harness-home"))) {
			continue
		}
		out = append(out, en.Name()+": "+string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
	}
	return out
}

// NoHarnessLeft waits until no harness process of the data folder is left.
func NoHarnessLeft(t *testing.T, dir string, d time.Duration) {
	t.Helper()
	if p := waitNone(func() []string { return HarnessProcs(dir) }, d); len(p) > 0 {
		t.Fatalf("harness processes still running: %v", p)
	}
}

const ClaudeScript = `
entries:
  - name: router
    match: "Route this request"
    turns:
      - text: '{"family": "sonnet", "confidence": 0.9}'
  - name: notes
    match: "Ask me which region"
    turns:
      - text: "I'll ask which region."
        tool_calls:
          - name: mcp__agentrun__ask_person
            input: {question: "Which region should I cover?"}
      - tool_calls:
          - name: mcp__agentrun__write
            input: {path: region.md, content: "# {{last_tool_result}}\n\nNotes about {{last_tool_result}}.\n"}
      - text: "I wrote region.md."
  - name: careful
    match: "Count carefully"
    turns:
      - tool_calls:
          - name: mcp__agentrun__write
            input: {path: "secret.txt", content: "leak"}
      - text: "I need to count this once."
        tool_calls:
          - name: mcp__agentrun__dev_count
            input: {label: "careful"}
      - text: "counted"
  - name: crash
    match: "Crash test"
    turns:
      - tool_calls:
          - name: mcp__agentrun__dev_count
            input: {label: "crash"}
      - tool_calls:
          - name: mcp__agentrun__write
            input: {path: "after.txt", content: "done"}
      - text: "finished"
  - name: hello
    match: "Say hello"
    turns:
      - text: "hello from the scripted model"
  - name: keep
    match: "Keep talking"
    turns:
      - text: "first answer"
      - text: "second answer: {{last_user}}"
  - name: slow
    match: "Be slow"
    turns:
      - text: "too late"
        latency: 60s
`
