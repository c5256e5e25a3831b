package otel

import (
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/telemetry"
)

const claudeScript = `
entries:
  - name: count
    match: "Count once"
    turns:
      - tool_calls:
          - name: mcp__agentrun__dev_count
            input: {label: "h1"}
      - text: "counted"
`

// TestHarnessTrace: a run on the claude-agent harness (the real Claude Code CLI) has a chat span
// for each model call it makes through the gateway and an execute_tool span for its tool call.
func TestHarnessTrace(t *testing.T) {
	t.Parallel()
	r := newHTTPReceiver(t)
	e := NewClaudeEnv(t, claudeScript)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules", "--log-level", "debug"}, otelEnv(r)...)
	if st := e.Do("PUT", "/v2/agents/coder", `{"metadata":{"name":"coder"},"spec":{"harness":"claude-agent","computer":{"kind":"none"},"tools":["dev_count"],"approvals":"never-ask"}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.StartRun("coder", "h1", "Count once")
	run := e.WaitPhase("h1", 120*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if run.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run %s: %s", run.Status.Phase, run.Status.Message)
	}
	spans := waitSpans(t, r, telemetry.RunTraceID(run.Metadata.UID).String(), "invoke_agent coder", 15*time.Second)
	chats := named(spans, "chat ")
	if len(chats) < 2 {
		t.Fatalf("want the harness's model calls as chat spans: %s", names(spans))
	}
	for _, c := range chats {
		wantAttr(t, c, "agentrun.harness", "claude-agent")
		wantAttr(t, c, "gen_ai.usage.input_tokens", nil)
		wantAttr(t, c, "gen_ai.response.model", nil)
	}
	tools := named(spans, "execute_tool dev_count")
	if len(tools) != 1 {
		t.Fatalf("execute_tool spans: %s", names(spans))
	}
	wantAttr(t, tools[0], "gen_ai.tool.call.id", nil)
}
