package e2etest

import (
	"fmt"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/api"
)

// The crash script: turn 0 calls the counting tool (a real side effect outside the run folder),
// turn 1 answers. A slow variant sleeps inside the tool so it can be killed mid-call.
const CrashScript = `
entries:
  - name: crash
    match: "Count once"
    turns:
      - tool_calls:
          - name: dev_count
            input: {label: "c1", sleep_ms: 0}
      - text: "counted: {{last_tool_result}}"
  - name: slowtool
    match: "Count slowly"
    turns:
      - tool_calls:
          - name: dev_count
            input: {label: "s1", sleep_ms: 60000}
      - text: "after the slow tool: {{last_tool_result}}"
  - name: slowmodel
    match: "Think slowly"
    turns:
      - tool_calls:
          - name: dev_count
            input: {label: "m1", sleep_ms: 0}
      - text: "thought it through"
        latency: 60s
`

func StartCrashRun(t *testing.T, e *Env, prompt string) string {
	t.Helper()
	if st := e.Do("PUT", "/v2/agents/counter", `{"metadata":{"name":"counter"},"spec":{"tools":["dev_count"]}}`, nil); st != 201 && st != 200 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/counter/runs", fmt.Sprintf(`{"input":{"content":%q}}`, prompt), &run); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	return run.Metadata.Name
}

func HasEvent(evs []api.Event, typ api.EventType, contains string) bool {
	for _, ev := range evs {
		if ev.Type == typ && strings.Contains(ev.Message, contains) {
			return true
		}
	}
	return false
}
