package api

import (
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

const nodusScript = `
entries:
  - name: python
    match: "Python version"
    turns:
      - text: "The sandbox runs Python 3.11.2."
  - name: logs
    match: "Summarize the logs"
    turns:
      - text: "The logs show two restarts and no errors."
  - name: chat
    match: "Say hello"
    turns:
      - text: "Hello."
      - text: "Now the staging logs: all quiet."
      - text: "Third answer."
  - name: slow
    match: "Take your time"
    turns:
      - text: "Done at last."
        latency: 30s
`

// The Nodus seed's YAML, as written there (a folded copy of its agent.yaml and run.yaml).
const nodusAgentYAML = `apiVersion: nodus.dev/v1
kind: Agent
metadata:
  name: hello-agent
spec:
  system: |
    You are a careful assistant. Run shell commands in your sandbox to check your work,
    and answer in one short paragraph.
  # Nodus's Claude: each prompt is routed to Haiku, Sonnet, Opus or Fable, and billed from your credits.
  model:
    access: Nodus
  perRunMaxCostUSD: "0.50"
`

const nodusRunYAML = `apiVersion: nodus.dev/v1
kind: AgentRun
metadata:
  name: hello-agent-run
spec:
  agent: hello-agent
  input: "Use the shell to print the Python version, then tell me which one it is."
`

func TestNodusYAMLFlow(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, nodusScript)
	e.Start()
	agentFile := WriteFile(t, e.Dir, "agent.yaml", nodusAgentYAML)
	runFile := WriteFile(t, e.Dir, "run.yaml", nodusRunYAML)

	if r := e.MustCLI(0, "apply", "-f", agentFile); !strings.Contains(r.Stdout, "agent/hello-agent created") {
		t.Errorf("apply agent printed %q", r.Stdout)
	}
	if r := e.MustCLI(0, "apply", "-f", agentFile); !strings.Contains(r.Stdout, "unchanged") {
		t.Errorf("second apply printed %q, want unchanged", r.Stdout)
	}
	e.MustCLI(0, "apply", "-f", runFile)
	r := e.MustCLI(0, "wait", "agentrun/hello-agent-run", "--for=jsonpath={.status.phase}=Succeeded", "--timeout=8m")
	if !strings.Contains(r.Stdout, "condition met") {
		t.Errorf("wait printed %q", r.Stdout)
	}
	r = e.MustCLI(0, "get", "agentrun/hello-agent-run", "-o", "yaml")
	for _, want := range []string{"phase: Succeeded", "preview: The sandbox runs Python 3.11.2.", "limitUSD: \"0.50\"", "agentRevision: 1"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("get -o yaml lacks %q:\n%s", want, r.Stdout)
		}
	}
	if r := e.MustCLI(0, "agentrun", "answer", "hello-agent-run"); strings.TrimSpace(r.Stdout) != "The sandbox runs Python 3.11.2." {
		t.Errorf("answer = %q", r.Stdout)
	}
	if r := e.MustCLI(0, "runs", "answer", "hello-agent-run"); strings.TrimSpace(r.Stdout) != "The sandbox runs Python 3.11.2." {
		t.Errorf("runs answer = %q", r.Stdout)
	}
	if r := e.MustCLI(0, "agentrun", "steps", "hello-agent-run"); !strings.Contains(r.Stdout, "t0/model") || !strings.Contains(r.Stdout, "Completed") {
		t.Errorf("steps = %q", r.Stdout)
	}

	// Without a file.
	if r := e.MustCLI(0, "create", "agentrun", "triage", "--agent", "hello-agent", "--prompt", "Summarize the logs"); !strings.Contains(r.Stdout, "agentrun/triage created") {
		t.Errorf("create printed %q", r.Stdout)
	}
	e.MustCLI(0, "wait", "agentrun/triage", "--for=jsonpath={.status.phase}=Succeeded", "--timeout=1m")
	if r := e.MustCLI(0, "get", "ar"); !strings.Contains(r.Stdout, "triage") || !strings.Contains(r.Stdout, "Succeeded") {
		t.Errorf("get ar = %q", r.Stdout)
	}

	// Cancel a slow run, then delete it.
	e.MustCLI(0, "create", "agentrun", "slowpoke", "--agent", "hello-agent", "--prompt", "Take your time")
	e.WaitPhase("slowpoke", 10*time.Second, api.PhaseRunning)
	e.MustCLI(0, "cancel", "agentrun/slowpoke")
	run := e.WaitPhase("slowpoke", 10*time.Second, api.PhaseCancelled)
	if run.Status.Reason != api.ReasonUserCancelled {
		t.Errorf("cancelled run reason %q", run.Status.Reason)
	}
	if r := e.CLI(e.Dir, "runs", "message", "slowpoke", "--content", "more"); r.Code == 0 || !strings.Contains(r.Stderr, "AgentRunFinished") {
		t.Errorf("message to a cancelled run: exit %d, stderr %q; want AgentRunFinished", r.Code, r.Stderr)
	}
	e.MustCLI(0, "delete", "agentrun/slowpoke")
	if r := e.CLI(e.Dir, "get", "agentrun/slowpoke"); r.Code == 0 || !strings.Contains(r.Stderr, "NotFound") {
		t.Errorf("get after delete: exit %d %q", r.Code, r.Stderr)
	}
	// The wait timed out honestly on a condition that never comes.
	e.MustCLI(0, "create", "agentrun", "greeter", "--agent", "hello-agent", "--prompt", "Say hello")
	if r := e.CLI(e.Dir, "wait", "agentrun/greeter", "--for=jsonpath={.status.phase}=Failed", "--timeout=2s"); r.Code != 1 || !strings.Contains(r.Stderr, "Succeeded") {
		t.Errorf("wait for a condition that never comes: exit %d, stderr %q", r.Code, r.Stderr)
	}
}

// An agent's revisions are immutable and a run keeps the revision it started on.
func TestRunPinsAgentRevision(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, QuickstartScript)
	e.Start()
	agent := `{"definition": {"id": "notes", "instructions": "v1", "tools": ["write", "ask_person"]}}`
	if st := e.Do("POST", "/v2/agents", agent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/notes/runs", `{"input": {"content": "Ask me which region to cover, then write region.md about it."}}`, &run); st != 201 {
		t.Fatalf("start: HTTP %d", st)
	}
	e.WaitPhase(run.Metadata.Name, 10*time.Second, api.PhaseWaiting)
	// Take the write tool away while the run waits on its question.
	var a api.Agent
	if st := e.Do("PATCH", "/v2/agents/notes", `{"spec": {"system": "v2", "tools": ["ask_person"]}}`, &a); st != 200 || a.Status.Revision != 2 {
		t.Fatalf("patch agent: HTTP %d, revision %d", st, a.Status.Revision)
	}
	e.MustCLI(0, "runs", "message", run.Metadata.Name, "--content", "Asia")
	done := e.WaitPhase(run.Metadata.Name, 10*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if done.Status.Phase != api.PhaseSucceeded || done.Status.AgentRevision != 1 {
		t.Fatalf("run ended %s on revision %d", done.Status.Phase, done.Status.AgentRevision)
	}
	if r := e.MustCLI(0, "runs", "read-file", run.Metadata.Name, "region.md"); !strings.Contains(r.Stdout, "# Asia") {
		t.Errorf("the run on revision 1 still had write: region.md = %q", r.Stdout)
	}
	// A new run gets revision 2, without write.
	var run2 api.AgentRun
	e.Do("POST", "/v2/agents/notes/runs", `{"input": {"content": "Ask me which region to cover, then write region.md about it."}}`, &run2)
	if run2.Status.AgentRevision != 2 {
		t.Errorf("new run pinned revision %d, want 2", run2.Status.AgentRevision)
	}
}
