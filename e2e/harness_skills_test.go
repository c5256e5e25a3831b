package e2e

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Harness runs get the agent's skills as builtin runs do: the instructions the harness is given
// name each skill with its description, and the run's skill tool (served over MCP like the other
// tools) returns SKILL.md, with skill.opened on the timeline. Each test puts a recording proxy in
// front of the scripted model server, so the check is on the bodies the vendor gets.

// recordingProxy serves the scripted model server through a proxy that keeps every request body.
func recordingProxy(t *testing.T, e *env) (url string, bodies func() [][]byte) {
	t.Helper()
	var mu sync.Mutex
	var got [][]byte
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, b)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		e.model.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p.URL, func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return append([][]byte(nil), got...)
	}
}

// harnessSkillRun adds the release-notes skill, runs an agent of the harness naming it, and checks
// the answer, the timeline and that a model request carried the skill's name and description.
func harnessSkillRun(t *testing.T, e *env, harnessName string, bodies func() [][]byte) {
	t.Helper()
	e.mustCLI(0, "skills", "add", writeSkill(t, map[string]string{"SKILL.md": releaseNotesMD}))
	e.mustAgent("writer", `{"metadata":{"name":"writer"},"spec":{"harness":"`+harnessName+`","system":"You write release notes.","skills":["release-notes"],"tools":["write"],"approvals":"never-ask"}}`)
	e.startRun("writer", "hs-run", "Write the release notes for 1.2")
	if got := e.answerOf("hs-run"); !strings.Contains(got, "Read CHANGELOG.md.") {
		t.Errorf("answer %q does not carry SKILL.md", got)
	}
	if !hasEvent(e.events("hs-run"), "skill.opened", "release-notes@1 (SKILL.md)") {
		t.Error("the timeline does not say the run opened the skill")
	}
	want := "release-notes: Write release notes from a changelog, grouped by kind of change."
	for _, b := range bodies() {
		if bytes.Contains(b, []byte(want)) && bytes.Contains(b, []byte("You write release notes.")) {
			return
		}
	}
	t.Errorf("no model request of the %s run names the skill with its description (%q)", harnessName, want)
}

func TestClaudeSkills(t *testing.T) {
	t.Parallel()
	e := newClaudeEnv(t, `
entries:
  - name: notes
    match: "Write the release notes"
    turns:
      - tool_calls:
          - name: mcp__agentrun__skill
            input: {name: release-notes}
      - text: "done: {{last_tool_result}}"
`)
	url, bodies := recordingProxy(t, e)
	e.startWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "ANTHROPIC_BASE_URL="+url)
	harnessSkillRun(t, e, "claude-agent", bodies)
}

func TestCodexSkills(t *testing.T) {
	t.Parallel()
	e := newCodexEnv(t, `
entries:
  - name: notes
    match: "Write the release notes"
    turns:
      - tool_calls:
          - name: skill
            input: {name: release-notes}
      - text: "done: {{last_tool_result}}"
`)
	url, bodies := recordingProxy(t, e)
	e.startWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "OPENAI_BASE_URL="+url+"/v1")
	harnessSkillRun(t, e, "codex", bodies)
}
