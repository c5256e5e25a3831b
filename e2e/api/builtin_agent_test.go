package api

import (
	"slices"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// The Nodus seed's "To start from Nodus's ready-made assistant, name the template
// claude-assistant": a fresh server has it, a run of it works, and once a user deletes it a
// restart does not bring it back.
func TestBuiltinAssistant(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, `
entries:
  - name: triage
    match: "Summarize the logs"
    turns:
      - text: "The logs are quiet."
`)
	e.Start()
	e.WaitStderr("made the ready-made agent claude-assistant", 5*time.Second)
	if out := e.MustCLI(0, "get", "agents").Stdout; !strings.Contains(out, "claude-assistant") {
		t.Fatalf("get agents does not list claude-assistant:\n%s", out)
	}
	var a api.Agent
	if st := e.Do("GET", "/v2/agents/claude-assistant", nil, &a); st != 200 {
		t.Fatalf("get agent: HTTP %d", st)
	}
	if a.Metadata.Labels[api.TemplateLabel] != api.TemplateBuiltin || a.Spec.Model.Access != "Server" || a.Spec.System == "" ||
		a.Spec.PerRunMaxCostUSD != api.DefaultPerRunMaxCostUSD || a.Spec.Computer == nil || a.Status.Revision != 1 {
		t.Errorf("claude-assistant = %+v", a)
	}
	if needSandbox := a.Spec.Computer.Kind == "sandbox"; needSandbox && !slices.Contains(a.Status.Tools, "bash") {
		t.Errorf("a sandbox assistant without bash: %v", a.Status.Tools)
	}

	e.MustCLI(0, "create", "agentrun", "triage", "--agent", "claude-assistant", "--prompt", "Summarize the logs")
	r := e.WaitPhase("triage", 30*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || !strings.Contains(r.Status.Answer.Preview, "quiet") {
		t.Fatalf("triage ended %s (%s): %+v", r.Status.Phase, r.Status.Message, r.Status.Answer)
	}

	// A restart keeps the one there is (no second revision).
	e.Kill()
	e.Start()
	if st := e.Do("GET", "/v2/agents/claude-assistant", nil, &a); st != 200 || a.Status.Revision != 1 {
		t.Fatalf("after a restart: HTTP %d, revision %d", st, a.Status.Revision)
	}
	if strings.Contains(e.Stderr.String(), "made the ready-made agent") {
		t.Error("the restart made it again")
	}

	// Deleted by the user, it stays deleted.
	e.MustCLI(0, "delete", "agent", "claude-assistant")
	e.Kill()
	e.Start()
	if st := e.Do("GET", "/v2/agents/claude-assistant", nil, nil); st != 404 {
		t.Fatalf("after delete and restart: HTTP %d, want 404", st)
	}
	if out := e.MustCLI(0, "get", "agents").Stdout; strings.Contains(out, "claude-assistant") {
		t.Errorf("get agents lists the deleted assistant:\n%s", out)
	}
	// The run made with it is still there.
	if r := e.GetRun("triage"); r.Status.Phase != api.PhaseSucceeded {
		t.Errorf("triage is %s after the restarts", r.Status.Phase)
	}
}
