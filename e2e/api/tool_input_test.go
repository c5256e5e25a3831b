package api

import (
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

const toolInputScript = `
entries:
  - name: capital
    match: "Capital key"
    turns:
      - tool_calls:
          - name: bash
            input: {"Command": "touch capital.txt; curl --version"}
      - text: "result: {{last_tool_result}}"
  - name: twice
    match: "Both keys"
    turns:
      - tool_calls:
          - name: bash
            input: {"command": "ls", "Command": "touch twice.txt; curl --version"}
      - text: "result: {{last_tool_result}}"
  - name: plain
    match: "Plain key"
    turns:
      - tool_calls:
          - name: bash
            input: {"command": "touch plain.txt"}
      - text: "result: {{last_tool_result}}"
`

// TestToolInputKeysAreExact: a bash call whose command is under a key in other capitals (alone,
// or beside a harmless "command") neither slips past the server's deny of bash(curl *) nor runs:
// the one strict decode the policy and the tool share refuses it, and the model is told which
// key. A plain call runs, so the sandbox would have made the marker files.
func TestToolInputKeysAreExact(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	e := NewEnv(t, toolInputScript)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--deny", "bash(curl *)"})
	if st := e.Do("PUT", "/v2/agents/keys", `{"metadata":{"name":"keys"},"spec":{"computer":{"kind":"sandbox"},"approvals":"never-ask"}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	cases := []struct{ run, input, marker, want string }{
		{"k-capital", "Capital key", "capital.txt", `unknown field "Command"`},
		{"k-twice", "Both keys", "twice.txt", `"Command" and "command" differ only in case`}, // the script sends keys sorted
		{"k-plain", "Plain key", "plain.txt", ""},
	}
	for _, c := range cases {
		e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"`+c.run+`"},"spec":{"agent":"keys","input":"`+c.input+`"}}`, nil)
	}
	for _, c := range cases {
		r := e.WaitPhase(c.run, 60*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseWaiting)
		if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil {
			t.Fatalf("run %s: %s/%s %s", c.run, r.Status.Phase, r.Status.Reason, r.Status.Message)
		}
		got := r.Status.Answer.Preview
		res := e.CLI(e.Dir, "runs", "read-file", c.run, c.marker)
		if c.want == "" {
			if res.Code != 0 || !strings.Contains(got, "exit code 0") {
				t.Errorf("%s: the plain call did not run (%s): answer %q", c.run, res.Stderr, got)
			}
			continue
		}
		if res.Code == 0 {
			t.Errorf("%s: the call ran: %s exists", c.run, c.marker)
		}
		if !strings.Contains(got, c.want) || !strings.Contains(got, "did not run") {
			t.Errorf("%s: the model was told %q, want the error naming the key (%s)", c.run, got, c.want)
		}
		refused := false
		for _, ev := range e.Events(c.run) {
			refused = refused || (ev.Type == "tool.refused" && strings.Contains(ev.Message, "Command"))
		}
		if !refused {
			t.Errorf("%s: no tool.refused event naming the key", c.run)
		}
	}
}
