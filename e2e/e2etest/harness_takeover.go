package e2etest

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

// CodexPGTakeover is the codex takeover of TestCodexPGTakeover and TestCodexAnthropicPGTakeover on
// Cluster c (its extra given the harness cache and the vendor's settings): runner a is SIGKILLed
// right after tk1's tool call at t1, runner b finishes the run, and the tool and every scripted
// turn ran once.
func CodexPGTakeover(t *testing.T, c *Cluster) {
	t.Helper()
	c.StartServer()
	c.CodexAgent("crasher", `["write","dev_count"]`, "")
	extra := c.Extra
	c.Extra = append(slices.Clone(extra), "AGENTRUN_DEV_PAUSE_AT=after-result:t1/tool/0")
	a := c.StartRunner("a")
	c.Extra = extra
	c.StartRun("crasher", "tk1", "Crash test one")
	for deadline := time.Now().Add(90 * time.Second); !strings.Contains(a.Stderr.String(), "AGENTRUN_DEV_PAUSED after-result t1/tool/0"); time.Sleep(50 * time.Millisecond) {
		if strings.Contains(a.Stderr.String(), "self-fencing run") {
			// The machine stalled (a lease not renewed for seconds): runner a stopped its work on
			// the run, as it must, and the run no longer reaches the point this test kills at.
			t.Skipf("runner a self-fenced before t1/tool/0 (the machine's storage or scheduler stalled), so the takeover was not tested; its stderr:\n%s", Tail(a.Stderr.String(), 2000))
		}
		if time.Now().After(deadline) {
			t.Fatalf("runner a never reached t1/tool/0; its stderr:\n%s", Tail(a.Stderr.String(), 4000))
		}
	}
	a.Kill()
	NoHarnessLeft(t, filepath.Join(c.Dir, "runner-a"), 10*time.Second)
	c.StartRunner("b")
	r := c.WaitPhase("tk1", 90*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "finished" {
		t.Fatalf("tk1: %s/%s %s %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer)
	}
	if got := c.Counted(); !slices.Equal(got, []string{"crash"}) {
		t.Errorf("dev_count ran %v, want once", got)
	}
	for turn := 0; turn < 3; turn++ {
		if n := c.Model.CountTurn("crash", turn); n != 1 {
			t.Errorf("scripted turn %d reached the model server %d times, want 1", turn, n)
		}
	}
}
