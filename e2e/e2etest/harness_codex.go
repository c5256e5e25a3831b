package e2etest

import (
	"fmt"
	"testing"

	"agentrun.dev/agentrun/internal/harness"
)

// NewCodexEnv is NewEnv with the harness cache (holding codex) given to the server; the test
// skips, saying why, when codex cannot be installed.
func NewCodexEnv(t *testing.T, script string) *Env {
	t.Helper()
	codexCache := InstalledHarness(t, "codex")
	e := NewEnv(t, script)
	// Codex speaks the OpenAI Responses API: the server's default provider is OpenAI's, pointed at
	// the scripted server (which speaks every format), with its default model (priced).
	e.Extra = append(e.Extra, harness.CacheEnv+"="+codexCache, "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL="+e.Model.URL()+"/v1",
		"AGENTRUN_DEFAULT_PROVIDER=openai")
	return e
}

const CodexHarnessScript = `
entries:
  - name: notes
    match: "Ask me which region"
    turns:
      - text: "I'll ask which region."
        tool_calls:
          - name: ask_person
            input: {question: "Which region should I cover?"}
      - tool_calls:
          - name: write
            input: {path: region.md, content: "# {{last_tool_result}}\n\nNotes about {{last_tool_result}}.\n"}
      - text: "I wrote region.md."
  - name: careful
    match: "Count carefully"
    turns:
      - text: "I need to count this once."
        tool_calls:
          - name: write
            input: {path: "secret.txt", content: "leak"}
      - tool_calls:
          - name: dev_count
            input: {label: "careful"}
      - text: "counted"
  - name: crash
    match: "Crash test"
    turns:
      - tool_calls:
          - name: dev_count
            input: {label: "crash"}
      - tool_calls:
          - name: write
            input: {path: "after.txt", content: "done"}
      - text: "finished"
  - name: keep
    match: "Keep talking"
    turns:
      - text: "first answer"
      - text: "second answer: {{last_user}}"
  - name: hello
    match: "Say hello"
    turns:
      - text: "hello from the scripted model"
  - name: slow
    match: "Be slow"
    turns:
      - text: "too late"
        latency: 60s
`

// CodexAgent creates an agent running codex with tools and extra spec fields.
func (e *Env) CodexAgent(name, tools, extra string) {
	e.T.Helper()
	body := fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"harness":"codex","tools":%s%s}}`, name, tools, extra)
	if st := e.Do("PUT", "/v2/agents/"+name, body, nil); st != 201 {
		e.T.Fatalf("create agent %s: HTTP %d", name, st)
	}
}
