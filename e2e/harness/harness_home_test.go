package harness

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// A finished run leaves no harness home behind, however it ends: cancelled while its harness
// waits on a model call, and cancelled while it waits on a question (no harness running then).
// The home holds the harness's config with the run's token and the harness's own files.
func TestClaudeHomeRemovedWhenCancelled(t *testing.T) {
	t.Parallel()
	e := NewClaudeEnv(t, ClaudeScript)
	e.Start()
	e.MustAgent("slow", `{"metadata":{"name":"slow"},"spec":{"harness":"claude-agent","tools":["write","ask_person"]}}`)
	home := func(run string) string { return filepath.Join(e.Dir, "harness-home", run) }

	e.StartRun("slow", "busy", "Be slow")
	for deadline := time.Now().Add(60 * time.Second); e.Model.CountTurn("slow", 0) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the harness never called the model: %+v", e.GetRun("busy").Status)
		}
	}
	e.StartRun("slow", "asking", "Ask me which region to cover, then write region.md about it.")
	if r := e.WaitPhase("asking", 60*time.Second, api.PhaseWaiting, api.PhaseFailed); r.Status.Phase != api.PhaseWaiting {
		t.Fatalf("run asking: %s %s", r.Status.Phase, r.Status.Message)
	}
	if _, err := os.Stat(home("asking")); err != nil {
		t.Fatalf("a waiting run keeps its harness home for the next drive: %v", err)
	}
	for _, run := range []string{"busy", "asking"} {
		e.MustCLI(0, "cancel", "agentrun/"+run)
		e.WaitPhase(run, 20*time.Second, api.PhaseCancelled)
	}
	NoHarnessLeft(t, e.Dir, 10*time.Second)
	// A run cancelled while it waited has its home removed once its kept computer is closed,
	// right after the harness inside it is gone.
	for _, run := range []string{"busy", "asking"} {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			_, err := os.Stat(home(run))
			if os.IsNotExist(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("cancelled run %s still has its harness home 10 s after its harness is gone (%v)", run, err)
				break
			}
		}
	}
}
