package clients

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"sigs.k8s.io/yaml"
)

// loadOpenAPI fetches and compiles the running server's document.
func loadOpenAPI(t *testing.T, base, token string) *OpenAPI {
	t.Helper()
	d, err := FetchOpenAPI(http.DefaultClient, base, token)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

const openAPIScript = `
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
            input: {path: docs/region.md, content: "# {{last_tool_result}}\n"}
      - text: "I wrote docs/region.md about {{last_tool_result}}."
  - name: gated
    match: "Count once"
    turns:
      - tool_calls:
          - name: dev_count
            input: {label: "x"}
      - text: "counted"
  - name: anything
    match: "*"
    turns:
      - text: "(scripted) {{last_user}}"
`

// TestOpenAPIResponses drives the main routes of a real server (agents, runs and their
// subresources, the SSE timeline, approvals, money, groups, evaluations, triggers, skills, and
// the error answers) and holds every answer against the document the server serves.
func TestOpenAPIResponses(t *testing.T) {
	t.Parallel()
	// The script's entries, then the evaluation environments' (as the Go evaluation tests
	// script them), so that an evaluation group's results can be checked too.
	var own, evals struct {
		Entries []map[string]any `json:"entries"`
	}
	if err := yaml.Unmarshal([]byte(openAPIScript), &own); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(EvalScript(t, "", "")), &evals); err != nil {
		t.Fatal(err)
	}
	last := len(own.Entries) - 1 // "*" stays last
	own.Entries = append(append(own.Entries[:last:last], evals.Entries...), own.Entries[last])
	script, _ := json.Marshal(own)
	e := NewEnv(t, string(script))
	e.Start()
	d := loadOpenAPI(t, e.URL, e.Token)
	want := func(got, want int, what string, body []byte) {
		t.Helper()
		if got != want {
			t.Fatalf("%s: HTTP %d, want %d: %s", what, got, want, body)
		}
	}
	call := func(method, path, body string) (int, []byte) {
		t.Helper()
		return d.Call(t, e, method, path, body, nil)
	}

	// The check refuses what the document does not say: a malformed agent, a code the route
	// does not list, a status it does not answer.
	for _, bad := range []struct {
		status int
		body   string
	}{
		{200, `{"metadata": {"name": 3}, "spec": {}}`},
		{404, `{"code": "AgentStopped", "message": "x"}`},
		{404, `{"code": "NotFound", "message": "x", "extra": 1}`},
		{418, `{}`},
	} {
		if err := d.Check("GET", "/v2/agents/notes", bad.status, "application/json", []byte(bad.body)); err == nil {
			t.Errorf("the check took %d %s for GET /v2/agents/{name}", bad.status, bad.body)
		}
	}

	st, b := call("GET", "/v2/capabilities", "")
	want(st, 200, "capabilities", b)
	call("GET", "/v2/runners", "")
	call("GET", "/v2/prices", "")
	call("GET", "/v2/credits?limit=5", "")
	st, b = call("POST", "/v2/credits", `{"amountUSD": "5", "note": "openapi test"}`)
	want(st, 201, "add credits", b)
	call("GET", "/v2/secrets", "")
	call("GET", "/v2/whoami", "")

	// Agents: the seed's shape, a resource, apply, patch, list.
	st, b = call("POST", "/v2/agents", `{"definition": {"id": "notes", "version": 1, "name": "Notes", "instructions": "Do what you are asked.", "skills": [], "tools": ["write", "ask_person"]}}`)
	want(st, 201, "create agent", b)
	st, b = call("POST", "/v2/agents", `{"apiVersion": "agentrun.dev/v1", "kind": "Agent", "metadata": {"name": "gate", "labels": {"team": "qa"}},
		"spec": {"system": "Count.", "tools": ["dev_count"], "approvals": {"default": "allow", "rules": [{"match": "dev_count", "action": "ask"}]}}}`)
	want(st, 201, "create agent gate", b)
	call("GET", "/v2/agents", "")
	call("GET", "/v2/agents/notes", "")
	st, b = call("PATCH", "/v2/agents/gate", `{"metadata": {"labels": {"team": "ops"}}}`)
	want(st, 200, "patch agent", b)
	call("PUT", "/v2/agents/gate", `{"apiVersion": "agentrun.dev/v1", "kind": "Agent", "metadata": {"name": "gate", "labels": {"team": "ops"}},
		"spec": {"system": "Count.", "tools": ["dev_count"], "approvals": {"default": "allow", "rules": [{"match": "dev_count", "action": "ask"}]}}}`)

	// A run that asks, is answered, writes a file and answers.
	st, b = call("POST", "/v2/agents/notes/runs", `{"input": {"content": "Ask me which region to cover, then write it down."}, "max_cost_usd": "1"}`)
	want(st, 201, "start run", b)
	var run struct{ Metadata struct{ Name string } }
	json.Unmarshal(b, &run)
	name := run.Metadata.Name
	e.WaitPhase(name, 30*time.Second, "Waiting")
	call("GET", "/v2/agentruns/"+name, "")
	call("GET", "/v2/agentruns?agent=notes", "")
	call("GET", "/v2/agentruns?fieldSelector=status.phase=Waiting", "")
	st, b = call("POST", "/v2/agentruns/"+name+"/messages", `{"payload": "Europe", "messageKey": "k1"}`)
	want(st, 202, "message", b)
	call("POST", "/v2/agentruns/"+name+"/messages", `{"payload": "Europe", "messageKey": "k1"}`)
	e.WaitPhase(name, 30*time.Second, "Succeeded")
	call("GET", "/v2/agentruns/"+name+"/messages", "")
	call("GET", "/v2/agentruns/"+name+"/steps", "")
	call("GET", "/v2/agentruns/"+name+"/events", "")
	call("GET", "/v2/agentruns/"+name+"/events?after=2", "")
	call("GET", "/v2/agentruns/"+name+"/answer", "")
	call("GET", "/v2/agentruns/"+name+"/files/", "")
	call("GET", "/v2/agentruns/"+name+"/files/docs", "")
	call("GET", "/v2/agentruns/"+name+"/files/docs/region.md", "")
	call("GET", "/v2/agentruns/"+name+"/approvals", "")

	// The timeline as SSE: each event's data is an Event, the last "end".
	sseCheck(t, d, e, name)

	// A tool call waiting for approval; the API token may list but not decide it.
	st, b = call("POST", "/v2/agentruns", `{"agent": "gate", "input": "Count once."}`)
	want(st, 201, "seed run", b)
	json.Unmarshal(b, &run)
	gated := run.Metadata.Name
	e.WaitPhase(gated, 30*time.Second, "Waiting")
	st, b = call("GET", "/v2/agentruns/"+gated+"/approvals", "")
	want(st, 200, "approvals", b)
	var approvals struct{ Items []struct{ ID int64 } }
	json.Unmarshal(b, &approvals)
	if len(approvals.Items) != 1 {
		t.Fatalf("approvals: %s", b)
	}
	st, b = call("POST", fmt.Sprintf("/v2/agentruns/%s/approvals/%d", gated, approvals.Items[0].ID), `{"decision": "approve"}`)
	want(st, 403, "approve with the API token", b)
	st, b = call("POST", "/v2/agentruns/"+gated+"/cancel", "")
	want(st, 200, "cancel", b)
	st, b = call("POST", "/v2/agentruns/"+gated+"/messages", `{"payload": "late"}`)
	if st != 409 && st != 202 { // cancelling may not have finished it yet
		t.Errorf("message to a cancelled run: HTTP %d %s", st, b)
	}
	st, b = call("PATCH", "/v2/agentruns/"+name, `{"spec": {"maxCostUSD": "0.5"}}`)
	if st < 400 {
		t.Errorf("lowering a cap: HTTP %d %s", st, b)
	}

	// A batch with an Idempotency-Key, then the same again (replayed), then the key with another body.
	batch := `{"apiVersion": "agentrun.dev/v1", "kind": "AgentRunList", "items": [
		{"metadata": {"name": "b1"}, "spec": {"agent": "notes", "input": "hello one"}},
		{"metadata": {"name": "b2"}, "spec": {"agent": "notes", "input": "hello two"}}]}`
	st, b = d.Call(t, e, "POST", "/v2/agentruns", batch, map[string]string{"Idempotency-Key": "batch-1"})
	want(st, 201, "batch", b)
	st, b = d.Call(t, e, "POST", "/v2/agentruns", batch, map[string]string{"Idempotency-Key": "batch-1"})
	want(st, 200, "batch replayed", b)
	st, b = d.Call(t, e, "POST", "/v2/agentruns", strings.Replace(batch, "hello two", "hello 2", 1), map[string]string{"Idempotency-Key": "batch-1"})
	want(st, 422, "batch key reused", b)

	// Groups and evaluations.
	st, b = call("POST", "/v2/agentgroups", `{"apiVersion": "agentrun.dev/v1", "kind": "AgentGroup", "metadata": {"name": "g1"}, "spec": {"agent": "notes", "limits": {"maxActive": 2}}}`)
	want(st, 201, "create group", b)
	st, b = call("POST", "/v2/agentruns", `{"apiVersion": "agentrun.dev/v1", "kind": "AgentRun", "metadata": {}, "spec": {"agent": "notes", "group": "g1", "taskKey": "t1", "input": "hello group"}}`)
	want(st, 201, "group member", b)
	call("GET", "/v2/agentgroups", "")
	call("GET", "/v2/agentgroups/g1", "")
	call("PATCH", "/v2/agentgroups/g1", `{"spec": {"sealed": true}}`)
	call("GET", "/v2/agentgroups/g1/results", "")
	call("GET", "/v2/environments", "")
	call("GET", "/v2/environments/nodus/arithmetic-v2@2.0.0", "")
	st, b = call("POST", "/v2/agentgroups", `{"kind": "AgentGroup", "metadata": {"name": "ev"}, "spec": {"agent": "notes",
		"evaluation": {"environment": "nodus/arithmetic-v2@2.0.0", "split": "test", "tasks": 2, "repetitions": 1, "seed": 3, "timeout": "5m"}}}`)
	want(st, 201, "evaluation group", b)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var g struct{ Status struct{ Phase string } }
		_, b = call("GET", "/v2/agentgroups/ev", "")
		json.Unmarshal(b, &g)
		if g.Status.Phase == "Succeeded" || g.Status.Phase == "Failed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("evaluation group still %s: %s", g.Status.Phase, b)
		}
	}
	st, b = call("GET", "/v2/agentgroups/ev/results", "")
	want(st, 200, "evaluation results", b)
	if !strings.Contains(string(b), `"scored"`) {
		t.Errorf("results have no scored case: %s", b)
	}
	call("GET", "/v2/skills", "")
	call("GET", "/v2/triggers", "")
	call("POST", "/v2/agentgroups/g1/cancel", "")
	call("DELETE", "/v2/agentgroups/g1", "")

	// Errors: each is {code, message, field} with a code the document lists for the route.
	for _, c := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/v2/agents/nope", "", 404},
		{"GET", "/v2/agentruns/nope/answer", "", 404},
		{"GET", "/v2/agentruns/" + name + "/files/missing.txt", "", 404},
		{"POST", "/v2/agents", `{"definition": {"id": "notes", "version": 1, "name": "Notes", "instructions": "x", "tools": []}}`, 409},
		{"POST", "/v2/agents", `{"kind": "Agent", "metadata": {"name": "x"}, "spec": {"system": "x", "bogus": 1}}`, 422},
		{"POST", "/v2/agents", `{"kind": "Agent", "kind": "Agent"}`, 400},
		{"POST", "/v2/agents", `{`, 400},
		{"POST", "/v2/agents/nope/runs", `{"input": "x"}`, 404},
		{"POST", "/v2/agentruns/" + name + "/resolve", `{"action": "retry"}`, 409},
		{"GET", "/v2/agentruns?fieldSelector=spec.bogus=1", "", 422},
	} {
		st, b := call(c.method, c.path, c.body)
		if st != c.status {
			t.Errorf("%s %s: HTTP %d, want %d: %s", c.method, c.path, st, c.status, b)
		}
	}
	// Without credentials.
	req, _ := http.NewRequest("GET", e.URL+"/v2/agents", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := d.Check("GET", "/v2/agents", resp.StatusCode, resp.Header.Get("Content-Type"), data); err != nil || resp.StatusCode != 401 {
		t.Errorf("no credentials: HTTP %d: %v", resp.StatusCode, err)
	}
	call("DELETE", "/v2/agentruns/b1", "")
	call("DELETE", "/v2/agents/gate", "")

	t.Logf("checked %d (route, status) pairs against the document", len(d.Seen))
}

// sseCheck reads a finished run's timeline as SSE from the start, then resumed with
// Last-Event-ID, holding each event's data against the document's Event schema.
func sseCheck(t *testing.T, d *OpenAPI, e *Env, run string) {
	t.Helper()
	read := func(lastID string) (ids []string, sawEnd bool) {
		req, _ := http.NewRequest("GET", e.URL+"/v2/agentruns/"+run+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+e.Token)
		req.Header.Set("Accept", "text/event-stream")
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := d.Check("GET", "/v2/agentruns/"+run+"/events", resp.StatusCode, resp.Header.Get("Content-Type"), nil); err != nil {
			t.Error(err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var id, event string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data := []byte(strings.TrimPrefix(line, "data: "))
				schema := "Event"
				if event == "end" {
					schema, sawEnd = "EndEvent", true
				}
				if err := d.ValidateComponent(schema, data); err != nil {
					t.Errorf("SSE %s event %s: %v", event, data, err)
				}
				if event != "end" {
					ids = append(ids, id)
				}
			case line == "":
				id, event = "", ""
			}
		}
		return ids, sawEnd
	}
	all, end := read("")
	if !end || len(all) < 3 {
		t.Fatalf("SSE stream: %d events, end %v", len(all), end)
	}
	rest, end := read(all[1])
	if !end || len(rest) != len(all)-2 || rest[0] != all[2] {
		t.Errorf("resumed after %s: events %v, want %v", all[1], rest, all[2:])
	}
}
