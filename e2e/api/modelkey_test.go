package api

import (
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// TestRestartWithoutModelKeyWaits: a run waiting on ask_person whose server comes back without
// its model key is not failed by the answer: it waits with a reason naming the key, and once the
// server runs with the key again it goes on and completes.
func TestRestartWithoutModelKeyWaits(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, QuickstartScript)
	e.Start()
	e.Do("POST", "/v2/agents", `{"definition": {"id": "notes", "tools": ["write", "ask_person"]}}`, nil)
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/notes/runs", `{"input": {"content": "Ask me which region to cover, then write region.md about it."}}`, &run); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	name := run.Metadata.Name
	if r := e.WaitPhase(name, 20*time.Second, api.PhaseWaiting); r.Status.Reason != api.ReasonQuestion {
		t.Fatalf("run waits on %s, want Question", r.Status.Reason)
	}

	withKey := e.Extra
	var noKey []string
	for _, kv := range withKey {
		if !strings.HasPrefix(kv, "ANTHROPIC_") {
			noKey = append(noKey, kv)
		}
	}
	e.Kill()
	e.Extra = noKey
	e.Start()
	if st := e.Do("POST", "/v2/agentruns/"+name+"/messages", `{"payload": "Europe"}`, nil); st/100 != 2 {
		t.Fatalf("message: HTTP %d", st)
	}
	deadline := time.Now().Add(20 * time.Second)
	var r api.AgentRun
	for time.Now().Before(deadline) {
		r = e.GetRun(name)
		if r.Status.Reason == api.ReasonModelKeyMissing || api.Finished(r.Status.Phase) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r.Status.Phase != api.PhaseWaiting || r.Status.Reason != api.ReasonModelKeyMissing || !strings.Contains(r.Status.Message, "ANTHROPIC_API_KEY") {
		t.Fatalf("after a message on a server without keys the run is %s/%s %q, want Waiting/ModelKeyMissing naming the key", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	// It waits on someone: runs wait exits 8.
	e.MustCLI(8, "runs", "wait", name)

	e.Kill()
	e.Extra = withKey
	e.Start()
	r = e.WaitPhase(name, 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("with the key back the run is %s/%s %q", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	if res := e.MustCLI(0, "runs", "read-file", name, "region.md"); !strings.Contains(res.Stdout, "Europe") {
		t.Errorf("region.md = %q, want the answer given while the key was missing", res.Stdout)
	}
}
