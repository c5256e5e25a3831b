package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/a2a"
	"agentrun.dev/agentrun/internal/api"
)

// TestAgentToolSchema: an agent's MCP tool takes an input string; a workflow agent's takes its
// document's input schema (with the document's schemas as definitions) or the input as JSON text.
func TestAgentToolSchema(t *testing.T) {
	plain := agentTool(&api.Agent{Metadata: api.ObjectMeta{Name: "log-reader"}, Spec: api.AgentSpec{System: "Read logs.\nThen more."}})
	if plain.Name != "log_reader" || !strings.Contains(plain.Description, "Read logs.") || strings.Contains(plain.Description, "Then more") {
		t.Errorf("tool %q, description %q", plain.Name, plain.Description)
	}
	b, _ := json.Marshal(plain.InputSchema)
	if string(b) != `{"additionalProperties":false,"properties":{"input":{"description":"the run's input, the agent's first message (at most 256 KiB)","type":"string"}},"required":["input"],"type":"object"}` {
		t.Errorf("input schema %s", b)
	}
	wf := `{"v": 2, "name": "read-site", "schemas": {"In": {"type": "object", "required": ["website"], "properties": {"website": {"$ref": "#/definitions/URL"}}},
	  "URL": {"type": "string"}, "Out": {"type": "object"}}, "input": {"schemaId": "In"}, "output": {"schemaId": "Out"}, "root": {"node": "chain", "steps": []}}`
	tool := agentTool(&api.Agent{Metadata: api.ObjectMeta{Name: "reader"}, Spec: api.AgentSpec{Workflow: json.RawMessage(wf)}})
	s := tool.InputSchema.(map[string]any)
	props := s["properties"].(map[string]any)
	defs, _ := s["definitions"].(map[string]any)
	if s["type"] != "object" || props["website"] == nil || props["input"] == nil || defs["URL"] == nil || s["required"] != nil {
		t.Errorf("workflow agent's schema %v", s)
	}
}

// TestA2AStates: a run's phase and what it waits on map onto the task states.
func TestA2AStates(t *testing.T) {
	for _, c := range []struct {
		phase  api.Phase
		reason api.Reason
		want   string
	}{
		{api.PhaseQueued, "", a2a.StateSubmitted},
		{api.PhaseRunning, "", a2a.StateWorking},
		{api.PhaseWaiting, api.ReasonQuestion, a2a.StateInputRequired},
		{api.PhaseWaiting, api.ReasonMessage, a2a.StateInputRequired},
		{api.PhaseWaiting, api.ReasonApproval, a2a.StateAuthRequired},
		{api.PhaseWaiting, api.ReasonMaxCostReached, a2a.StateAuthRequired},
		{api.PhaseNeedsResolution, api.ReasonInterrupted, a2a.StateAuthRequired},
		{api.PhaseSucceeded, api.ReasonCompleted, a2a.StateCompleted},
		{api.PhaseFailed, api.ReasonModelError, a2a.StateFailed},
		{api.PhaseCancelled, api.ReasonUserCancelled, a2a.StateCanceled},
	} {
		run := &api.AgentRun{Status: api.AgentRunStatus{Phase: c.phase, Reason: c.reason}}
		if got := a2aState(run); got != c.want {
			t.Errorf("%s/%s: %s, want %s", c.phase, c.reason, got, c.want)
		}
	}
	run := &api.AgentRun{Metadata: api.ObjectMeta{Name: "r-1"}, Status: api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonApproval,
		ConsoleURL: "https://agents.example/runs/r-1", WaitingOn: &api.WaitingOn{Kind: "approval", Detail: "bash rm -rf build"}}}
	if n := waitNote(run); !strings.Contains(n, "https://agents.example/runs/r-1") || !strings.Contains(n, "bash rm -rf build") || !strings.Contains(n, "never skipped") {
		t.Errorf("approval note %q", n)
	}
}

// TestA2ABadRequests: the A2A endpoints need the bearer, and refuse a bad request with the
// protocol's error, naming what: not JSON, an unknown method, another protocol version, a message
// over 256 KiB, a part that is not text, a task of another agent.
func TestA2ABadRequests(t *testing.T) {
	ts, s := newTestServer(t)
	for _, name := range []string{"alpha", "beta"} {
		if r := do(t, ts, "PUT", "/v2/agents/"+name, testToken, []byte(`{"metadata": {"name": "`+name+`"}, "spec": {}}`)); r.status != 201 {
			t.Fatalf("create %s: %d %s", name, r.status, r.body)
		}
	}
	if r := do(t, ts, "GET", "/v2/a2a/alpha/.well-known/agent-card.json", "", nil); r.status != 401 {
		t.Errorf("the card without the token: %d", r.status)
	}
	if r := do(t, ts, "GET", "/v2/a2a/nobody/.well-known/agent-card.json", testToken, nil); r.status != 404 || r.errBody(t).Code != api.CodeAgentNotFound {
		t.Errorf("the card of no agent: %d %s", r.status, r.body)
	}
	run, err := s.startAgentRun(t.Context(), "beta", "hi")
	if err != nil {
		t.Fatal(err)
	}
	msg := func(text, task string) string {
		b, _ := json.Marshal(map[string]any{"messageId": "m1", "role": "ROLE_USER", "taskId": task, "parts": []any{map[string]any{"text": text}}})
		return string(b)
	}
	for _, c := range []struct {
		name, version, body string
		code                int
		says                string
	}{
		{"not JSON", "", `{"jsonrpc": "2.0", "id": 1, "method": `, -32700, "not a JSON-RPC request"},
		{"no such method", "", `{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}`, -32601, "SendMessage"},
		{"another version", "0.3", `{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}`, -32009, "0.3"},
		{"too long", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": ` + msg(strings.Repeat("x", api.MaxInputBytes+1), "") + `}}`, -32602, "the limit is 262144"},
		{"a file part", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"url": "https://x.example/a.png"}]}}}`, -32005, "message.parts[0]"},
		{"another agent's task", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "` + run.Metadata.Name + `"}}`, -32001, "agent alpha has no task"},
		{"a message to another agent's task", "1.0", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": ` + msg("hello", run.Metadata.Name) + `}}`, -32001, "has no task"},
	} {
		req, _ := http.NewRequest("POST", ts.URL+"/v2/a2a/alpha", strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		if c.version != "" {
			req.Header.Set(a2a.VersionHeader, c.version)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out a2a.Response
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if out.Error == nil || out.Error.Code != c.code || !strings.Contains(out.Error.Message, c.says) {
			t.Errorf("%s: %+v, want code %d saying %q", c.name, out.Error, c.code, c.says)
		}
	}
	// HTTP+JSON: the error is a google.rpc.Status with the A2A reason.
	r := do(t, ts, "GET", "/v2/a2a/alpha/tasks/"+run.Metadata.Name, testToken, nil)
	if r.status != 404 || !strings.Contains(string(r.body), `"reason": "TASK_NOT_FOUND"`) {
		t.Errorf("GET another agent's task over HTTP+JSON: %d %s", r.status, r.body)
	}
}

// TestAgentDescriptionBound: spec.description is at most 1 KiB; a longer one is refused, naming
// the field, and nothing is stored.
func TestAgentDescriptionBound(t *testing.T) {
	ts, _ := newTestServer(t)
	long := strings.Repeat("d", api.MaxDescriptionBytes+1)
	r := do(t, ts, "PUT", "/v2/agents/wordy", testToken, []byte(`{"metadata": {"name": "wordy"}, "spec": {"description": "`+long+`"}}`))
	if e := r.errBody(t); r.status != 413 || e.Code != api.CodeTooLarge || e.Field != "spec.description" {
		t.Errorf("a 1 KiB + 1 description: %d %+v", r.status, e)
	}
	if r := do(t, ts, "GET", "/v2/agents/wordy", testToken, nil); r.status != 404 {
		t.Errorf("the refused agent was stored: %d", r.status)
	}
}
