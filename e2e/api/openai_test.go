package api

import (
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// The same quickstart flow through the OpenAI Chat Completions wire format (streaming with tool
// calls), with only OPENAI_API_KEY and OPENAI_BASE_URL set on the server.
func TestOpenAIChatCompletionsEndToEnd(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, QuickstartScript)
	base := e.Model.URL()
	e.Extra = []string{"OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=" + base + "/v1"}
	e.Start()
	e.Do("POST", "/v2/agents", `{"definition": {"id": "notes", "tools": ["write", "ask_person"]}}`, nil)
	var run api.AgentRun
	e.Do("POST", "/v2/agents/notes/runs", `{"input": {"content": "Ask me which region to cover, then write region.md about it."}}`, &run)
	name := run.Metadata.Name
	r := e.WaitPhase(name, 10*time.Second, api.PhaseWaiting)
	if r.Status.WaitingOn == nil || r.Status.WaitingOn.Question != "Which region should I cover?" {
		t.Fatalf("waiting on %+v", r.Status.WaitingOn)
	}
	e.MustCLI(0, "runs", "message", name, "--content", "Oceania")
	r = e.WaitPhase(name, 10*time.Second, api.PhaseSucceeded)
	if got := e.MustCLI(0, "runs", "read-file", name, "region.md").Stdout; !strings.Contains(got, "# Oceania") {
		t.Errorf("region.md = %q", got)
	}
	// One turn (the prompt) of three model calls, on the OpenAI default model, priced.
	if len(r.Status.Turns) != 1 || r.Status.Turns[0].ModelCalls != 3 || r.Status.Turns[0].Model != "gpt-4.1" || r.Status.Cost.TotalUSD == "unknown" {
		t.Errorf("turns = %+v, want 1 of 3 calls on the OpenAI default model", r.Status.Turns)
	}
	for _, c := range e.Model.Calls() {
		if c.Format != "openai" || !c.Stream {
			t.Errorf("call %+v: want streaming OpenAI format", c)
		}
	}
}
