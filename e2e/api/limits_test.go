package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// Bad input is refused with a stable code and the field at fault, and nothing is half-written.
func TestBadInputAndLimits(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, nodusScript)
	e.Start()
	createHelloAgent(t, e)
	big := strings.Repeat("x", api.MaxInputBytes+1)
	exact := strings.Repeat("y", api.MaxInputBytes)
	bigJSON, _ := json.Marshal(big)
	exactJSON, _ := json.Marshal(exact)

	cases := []struct {
		name, method, path, body string
		status                   int
		code                     api.Code
		field                    string
	}{
		{"input over 256 KiB", "POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"big"},"spec":{"agent":"hello-agent","input":` + string(bigJSON) + `}}`, 413, api.CodeTooLarge, "spec.input"},
		{"seed input over 256 KiB", "POST", "/v2/agents/hello-agent/runs", `{"input":{"content":` + string(bigJSON) + `}}`, 413, api.CodeTooLarge, "spec.input"},
		{"unknown field", "POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"u"},"spec":{"agent":"hello-agent","input":"hi","inputs":"x"}}`, 422, api.CodeUnknownField, "spec.inputs"},
		{"wrong type", "POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"w"},"spec":{"agent":"hello-agent","input":"hi","keepAlive":"yes"}}`, 422, api.CodeWrongType, "spec.keepAlive"},
		{"nested wrong type", "PUT", "/v2/agents/bad", `{"metadata":{"name":"bad"},"spec":{"tools":["write",3]}}`, 422, api.CodeWrongType, "spec.tools[1]"},
		{"unknown tool", "PUT", "/v2/agents/bad", `{"metadata":{"name":"bad"},"spec":{"tools":["write","teleport"]}}`, 422, api.CodeInvalid, "spec.tools[1]"},
		{"bad name", "POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"Not_A_Label"},"spec":{"agent":"hello-agent","input":"hi"}}`, 422, api.CodeInvalid, "metadata.name"},
		{"missing input", "POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"m"},"spec":{"agent":"hello-agent"}}`, 422, api.CodeRequired, "spec.input"},
		{"bad deadline", "POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"d"},"spec":{"agent":"hello-agent","input":"hi","deadline":"soon"}}`, 422, api.CodeInvalid, "spec.deadline"},
		{"bad cap", "POST", "/v2/agents/hello-agent/runs", `{"input":{"content":"hi"},"max_cost_usd":"1e9"}`, 422, api.CodeInvalid, "spec.maxCostUSD"},
		{"unknown agent", "POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"o"},"spec":{"agent":"nobody","input":"hi"}}`, 404, api.CodeAgentNotFound, "spec.agent"},
		{"message over 256 KiB", "POST", "/v2/agentruns/nothere/messages", `{"payload":` + string(bigJSON) + `}`, 413, api.CodeTooLarge, "payload"},
		{"not JSON", "POST", "/v2/agents", `{"definition": `, 400, api.CodeInvalid, ""},
		{"no token", "GET", "/v2/agents", "", 0, "", ""},
	}
	for _, c := range cases {
		var got api.Error
		if c.status == 0 {
			continue
		}
		st := e.Do(c.method, c.path, c.body, &got)
		if st != c.status || got.Code != c.code || got.Field != c.field || got.Message == "" {
			t.Errorf("%s: HTTP %d %+v; want %d %s at %q", c.name, st, got, c.status, c.code, c.field)
		}
	}
	// Nothing refused was stored.
	var runs api.List[api.AgentRun]
	e.Do("GET", "/v2/agentruns", nil, &runs)
	if len(runs.Items) != 0 {
		t.Errorf("refused requests left %d runs behind", len(runs.Items))
	}
	var agents api.List[api.Agent]
	e.Do("GET", "/v2/agents", nil, &agents)
	var names []string
	for _, a := range agents.Items {
		if a.Metadata.Labels[api.TemplateLabel] != api.TemplateBuiltin { // the server's ready-made claude-assistant
			names = append(names, a.Metadata.Name)
		}
	}
	if len(names) != 1 {
		t.Errorf("refused requests left agents %v (want only hello-agent)", names)
	}

	// Exactly 256 KiB is accepted.
	if st := e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"exact"},"spec":{"agent":"hello-agent","input":`+string(exactJSON)+`,"keepAlive":true}}`, nil); st != 201 {
		t.Errorf("input of exactly 256 KiB: HTTP %d", st)
	}
	// Duplicate names conflict, and the first run is untouched.
	var dup api.Error
	if st := e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"exact"},"spec":{"agent":"hello-agent","input":"other"}}`, &dup); st != 409 || dup.Code != api.CodeAlreadyExists {
		t.Errorf("duplicate run: HTTP %d %+v", st, dup)
	}
	if r := e.GetRun("exact"); r.Spec.Input != exact {
		t.Errorf("the duplicate overwrote the first run's input")
	}
	if st := e.Do("POST", "/v2/agents", `{"definition":{"id":"hello-agent"}}`, &dup); st != 409 || dup.Code != api.CodeAlreadyExists {
		t.Errorf("duplicate agent: HTTP %d %+v", st, dup)
	}
	// A stopped agent refuses runs.
	if st := e.Do("PATCH", "/v2/agents/hello-agent", `{"spec":{"state":"Stopped"}}`, nil); st != 200 {
		t.Fatalf("stop agent: HTTP %d", st)
	}
	var stopped api.Error
	if st := e.Do("POST", "/v2/agents/hello-agent/runs", `{"input":{"content":"hi"}}`, &stopped); st != 409 || stopped.Code != api.CodeAgentStopped {
		t.Errorf("run of a stopped agent: HTTP %d %+v", st, stopped)
	}
	// The CLI names the code and the field.
	bad := filepath.Join(e.Dir, "bad.yaml")
	os.WriteFile(bad, []byte("apiVersion: agentrun.dev/v1\nkind: Agent\nmetadata:\n  name: typo\nspec:\n  sytem: hello\n"), 0o644)
	r := e.CLI(e.Dir, "apply", "-f", bad)
	if r.Code != 1 || !strings.Contains(r.Stderr, "UnknownField") || !strings.Contains(r.Stderr, "spec.sytem") {
		t.Errorf("apply with a typo: exit %d, stderr %q", r.Code, r.Stderr)
	}
	// Without the token the API refuses.
	e.Token = "wrong"
	var unauth api.Error
	if st := e.Do("GET", "/v2/agents", nil, &unauth); st != 401 || unauth.Code != api.CodeUnauthorized {
		t.Errorf("wrong token: HTTP %d %+v", st, unauth)
	}
}

// Paths cannot leave the run folder, whatever the model asks.
func TestToolPathsStayInRunFolder(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, `
entries:
  - name: escape
    match: "Escape"
    turns:
      - tool_calls:
          - name: write
            input: {path: "../escaped.txt", content: "out"}
          - name: write
            input: {path: "/tmp/agentrun-escape-test.txt", content: "out"}
          - name: read
            input: {path: "/etc/passwd"}
          - name: write
            input: {path: "inside.txt", content: "in"}
      - text: "{{last_tool_result}}"
`)
	e.Start()
	e.Do("POST", "/v2/agents", `{"definition":{"id":"esc","tools":["write","read"]}}`, nil)
	var run api.AgentRun
	e.Do("POST", "/v2/agents/esc/runs", `{"input":{"content":"Escape"}}`, &run)
	e.WaitPhase(run.Metadata.Name, 10_000_000_000, api.PhaseSucceeded)
	if _, err := os.Stat(filepath.Join(e.Dir, "runs", "escaped.txt")); err == nil {
		t.Error("write ../escaped.txt created a file outside the run folder")
	}
	if _, err := os.Stat("/tmp/agentrun-escape-test.txt"); err == nil {
		t.Error("write /tmp/... created a file outside the run folder")
	}
	steps := e.Steps(run.Metadata.Name)
	type toolResult struct {
		Content string
		IsError bool
	}
	var results []toolResult
	for _, s := range steps {
		if s.Kind == "tool" {
			var r toolResult
			json.Unmarshal(s.Result, &r)
			results = append(results, r)
		}
	}
	if len(results) != 4 || !strings.Contains(results[0].Content, "escapes the run folder") || !results[1].IsError || !results[2].IsError || results[3].IsError {
		t.Errorf("tool results = %+v", results)
	}
	if r := e.MustCLI(0, "runs", "read-file", run.Metadata.Name, "inside.txt"); r.Stdout != "in" {
		t.Errorf("inside.txt = %q", r.Stdout)
	}
	if r := e.CLI(e.Dir, "runs", "read-file", run.Metadata.Name, "../../token"); r.Code == 0 {
		t.Errorf("read-file ../../token succeeded: %q", r.Stdout)
	}
}
