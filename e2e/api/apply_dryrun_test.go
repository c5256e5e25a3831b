package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// TestApplyDryRun: apply -f has the server check every document (?dryRun=All) before it applies
// any, so a document only the server can refuse (an agent that does not exist, a tool it does
// not have) leaves the documents before it unapplied; the error names the document and the
// field. A file whose run names an agent an earlier document creates still applies.
func TestApplyDryRun(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, QuickstartScript)
	e.Start()

	// The API: a dry run answers as the real request would and stores nothing.
	agent := `{"apiVersion":"agentrun.dev/v1","kind":"Agent","metadata":{"name":"dry"},"spec":{"system":"one"}}`
	st, h := put(e, "/v2/agents/dry?dryRun=All", agent)
	if st != 201 || h.Get("X-Agentrun-Dry-Run") != "All" || h.Get("X-Agentrun-Apply") != "created" {
		t.Errorf("dry-run apply of a new agent: HTTP %d %v", st, h)
	}
	if st := e.Do("GET", "/v2/agents/dry", nil, nil); st != 404 {
		t.Fatalf("a dry run stored the agent: GET = HTTP %d", st)
	}
	var bad api.Error
	if st := e.Do("PUT", "/v2/agents/dry?dryRun=true", agent, &bad); st != 422 || bad.Field != "dryRun" {
		t.Errorf("dryRun=true: HTTP %d %+v, want 422 on field dryRun", st, bad)
	}
	if st := e.Do("GET", "/v2/agents/dry", nil, nil); st != 404 {
		t.Fatalf("a misspelt dry run stored the agent: GET = HTTP %d", st)
	}
	var nf api.Error
	st = e.Do("POST", "/v2/agentruns?dryRun=All", `{"kind":"AgentRun","metadata":{"name":"r"},"spec":{"agent":"nosuch","input":"hi"}}`, &nf)
	if st != 404 || nf.Code != api.CodeAgentNotFound || nf.Field != "spec.agent" {
		t.Errorf("dry-run run of a missing agent: HTTP %d %+v", st, nf)
	}
	var batch api.Error
	if st := e.Do("POST", "/v2/agentruns?dryRun=All", `{"kind":"AgentRunList","items":[{"spec":{"agent":"nosuch","input":"hi"}}]}`, &batch); st != 422 || batch.Field != "dryRun" {
		t.Errorf("a batch has no dry run and must say so: HTTP %d %+v", st, batch)
	}
	e.Do("PUT", "/v2/agents/dry", agent, nil)
	st, h = put(e, "/v2/agents/dry?dryRun=All", strings.Replace(agent, `"one"`, `"two"`, 1))
	if st != 200 || h.Get("X-Agentrun-Apply") != "configured" {
		t.Errorf("dry-run change of an agent: HTTP %d %v", st, h)
	}
	var got api.Agent
	e.Do("GET", "/v2/agents/dry", nil, &got)
	if got.Spec.System != "one" || got.Status.Revision != 1 {
		t.Errorf("a dry run changed the agent: system %q revision %d", got.Spec.System, got.Status.Revision)
	}

	// The CLI: the second document names an agent that does not exist.
	missingAgent := `apiVersion: agentrun.dev/v1
kind: Agent
metadata: {name: first}
spec: {system: "one"}
---
apiVersion: agentrun.dev/v1
kind: AgentRun
metadata: {name: second}
spec: {agent: nosuch, input: "hi"}
`
	res := e.CLI(e.Dir, "apply", "-f", WriteFile(t, e.Dir, "missing-agent.yaml", missingAgent))
	if res.Code == 0 || !strings.Contains(res.Stderr, "document 2") || !strings.Contains(res.Stderr, "field spec.agent") ||
		!strings.Contains(res.Stderr, string(api.CodeAgentNotFound)) || !strings.Contains(res.Stderr, "nothing was applied") {
		t.Errorf("apply with a run of a missing agent second: exit %d\n%s", res.Code, res.Stderr)
	}
	if st := e.Do("GET", "/v2/agents/first", nil, nil); st != 404 {
		t.Errorf("the first document was applied although the server refuses the second: GET first = HTTP %d", st)
	}
	if st := e.Do("GET", "/v2/agentruns/second", nil, nil); st != 404 {
		t.Errorf("the refused run exists: HTTP %d", st)
	}

	// The second document lists a tool this server does not have.
	unknownTool := `apiVersion: agentrun.dev/v1
kind: Agent
metadata: {name: first}
spec: {system: "one"}
---
apiVersion: agentrun.dev/v1
kind: Agent
metadata: {name: other}
spec: {tools: [no_such_tool]}
`
	res = e.CLI(e.Dir, "apply", "-f", WriteFile(t, e.Dir, "unknown-tool.yaml", unknownTool))
	if res.Code == 0 || !strings.Contains(res.Stderr, "document 2") || !strings.Contains(res.Stderr, "spec.tools") || !strings.Contains(res.Stderr, "nothing was applied") {
		t.Errorf("apply with an unknown tool second: exit %d\n%s", res.Code, res.Stderr)
	}
	if st := e.Do("GET", "/v2/agents/first", nil, nil); st != 404 {
		t.Errorf("the first document was applied although the server refuses the second's tool: GET first = HTTP %d", st)
	}

	// An agent and a run of it in one file: the run's agent is the file's own, so it applies.
	both := strings.Replace(missingAgent, "agent: nosuch", "agent: first", 1)
	res = e.MustCLI(0, "apply", "-f", WriteFile(t, e.Dir, "both.yaml", both))
	if !strings.Contains(res.Stdout, "agent/first created") || !strings.Contains(res.Stdout, "agentrun/second created") {
		t.Errorf("apply of an agent and its run: %s", res.Stdout)
	}
	e.WaitPhase("second", 30*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseWaiting)

	// A group, its members and a trigger in one file, a member depending on an earlier one.
	group := `apiVersion: agentrun.dev/v1
kind: Agent
metadata: {name: gagent}
spec: {system: "g"}
---
apiVersion: agentrun.dev/v1
kind: AgentGroup
metadata: {name: gg}
spec: {agent: gagent}
---
apiVersion: agentrun.dev/v1
kind: AgentRun
spec: {agent: gagent, group: gg, taskKey: a, input: "one"}
---
apiVersion: agentrun.dev/v1
kind: AgentRun
spec: {agent: gagent, group: gg, taskKey: b, dependsOn: [a], input: "two"}
`
	// The last member depends on a task no document creates: nothing is applied.
	badGroup := strings.NewReplacer("gagent", "gagent2", "gg", "gg2", "dependsOn: [a]", "dependsOn: [a, zz]").Replace(group)
	res = e.CLI(e.Dir, "apply", "-f", WriteFile(t, e.Dir, "bad-group.yaml", badGroup))
	if res.Code == 0 || !strings.Contains(res.Stderr, "document 4") || !strings.Contains(res.Stderr, "field spec.dependsOn[1]") || !strings.Contains(res.Stderr, "nothing was applied") {
		t.Errorf("apply of a member depending on a missing task: exit %d\n%s", res.Code, res.Stderr)
	}
	if st := e.Do("GET", "/v2/agents/gagent2", nil, nil); st != 404 {
		t.Errorf("the documents before the bad member were applied: GET gagent2 = HTTP %d", st)
	}
	res = e.MustCLI(0, "apply", "-f", WriteFile(t, e.Dir, "group.yaml", group))
	if !strings.Contains(res.Stdout, "agentrun/gg-b created") {
		t.Errorf("apply of a group and its members: %s", res.Stdout)
	}
	// A later file's member depends on a task already on the server and one its file creates.
	more := `apiVersion: agentrun.dev/v1
kind: AgentRun
spec: {agent: gagent, group: gg, taskKey: c, input: "three"}
---
apiVersion: agentrun.dev/v1
kind: AgentRun
spec: {agent: gagent, group: gg, taskKey: d, dependsOn: [a, c], input: "four"}
`
	res = e.MustCLI(0, "apply", "-f", WriteFile(t, e.Dir, "more.yaml", more))
	if !strings.Contains(res.Stdout, "agentrun/gg-d created") {
		t.Errorf("apply of members depending on the server's and the file's tasks: %s", res.Stdout)
	}
}

// put sends a PUT with the API token and returns the status and the headers.
func put(e *Env, path, body string) (int, http.Header) {
	e.T.Helper()
	req, _ := http.NewRequest("PUT", e.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatalf("PUT %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}
