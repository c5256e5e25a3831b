package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/harness"
)

// A claude-agent run on PostgreSQL whose runner is SIGKILLed after a tool call is taken over by
// another runner with its own data folder (so the run folder, and the path Claude Code is told,
// differ): the new runner restarts Claude Code, answers the completed model and tool calls from
// the journal, and the run finishes with each scripted turn at the model server once and the
// counting tool run once.
func TestClaudePGTakeover(t *testing.T) {
	t.Parallel()
	c := newCluster(t, claudeScript)
	c.extra = append(c.extra, harness.CacheEnv+"="+claudeHarness(t))
	c.startServer()
	c.mustAgent("crasher", `{"metadata":{"name":"crasher"},"spec":{"harness":"claude-agent","tools":["write","dev_count"]}}`)
	extra := c.extra
	c.extra = append(slices.Clone(extra), "AGENTRUN_DEV_PAUSE_AT=after-result:t1/tool/0")
	a := c.startRunner("a")
	c.extra = extra
	c.startRun("crasher", "tk1", "Crash test one")
	for deadline := time.Now().Add(90 * time.Second); !strings.Contains(a.stderr.String(), "AGENTRUN_DEV_PAUSED after-result t1/tool/0"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("runner a never reached t1/tool/0; its stderr:\n%s", tail(a.stderr.String(), 4000))
		}
	}
	a.kill()
	noHarnessLeft(t, filepath.Join(c.dir, "runner-a"), 10*time.Second)
	c.startRunner("b")
	r := c.waitPhase("tk1", 90*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "finished" {
		t.Fatalf("tk1: %s/%s %s %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer)
	}
	if r.Status.Runner != "b" {
		t.Errorf("finished on runner %q, want b", r.Status.Runner)
	}
	if got := c.counted(); !slices.Equal(got, []string{"crash"}) {
		t.Errorf("dev_count ran %v, want once", got)
	}
	for turn := 0; turn < 3; turn++ {
		if n := c.model.CountTurn("crash", turn); n != 1 {
			t.Errorf("scripted turn %d reached the model server %d times, want 1", turn, n)
		}
	}
	if _, err := os.Stat(filepath.Join(c.dir, "runner-b", "runs", "tk1", "after.txt")); err != nil {
		t.Errorf("after.txt is not in runner b's run folder: %v", err)
	}
}

// The same takeover with codex: runner b restarts codex app-server in its own CODEX_HOME and run
// folder, and answers it from the journal.
func TestCodexPGTakeover(t *testing.T) {
	t.Parallel()
	cache := installedHarness(t, "codex")
	c := newCluster(t, codexHarnessScript)
	c.extra = append(c.extra, harness.CacheEnv+"="+cache, "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL="+c.model.URL()+"/v1",
		"AGENTRUN_DEFAULT_PROVIDER=openai")
	codexPGTakeover(t, c)
}

// codexPGTakeover is the codex takeover of TestCodexPGTakeover and TestCodexAnthropicPGTakeover on
// cluster c (its extra given the harness cache and the vendor's settings): runner a is SIGKILLed
// right after tk1's tool call at t1, runner b finishes the run, and the tool and every scripted
// turn ran once.
func codexPGTakeover(t *testing.T, c *cluster) {
	t.Helper()
	c.startServer()
	c.codexAgent("crasher", `["write","dev_count"]`, "")
	extra := c.extra
	c.extra = append(slices.Clone(extra), "AGENTRUN_DEV_PAUSE_AT=after-result:t1/tool/0")
	a := c.startRunner("a")
	c.extra = extra
	c.startRun("crasher", "tk1", "Crash test one")
	for deadline := time.Now().Add(90 * time.Second); !strings.Contains(a.stderr.String(), "AGENTRUN_DEV_PAUSED after-result t1/tool/0"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("runner a never reached t1/tool/0; its stderr:\n%s", tail(a.stderr.String(), 4000))
		}
	}
	a.kill()
	noHarnessLeft(t, filepath.Join(c.dir, "runner-a"), 10*time.Second)
	c.startRunner("b")
	r := c.waitPhase("tk1", 90*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "finished" {
		t.Fatalf("tk1: %s/%s %s %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer)
	}
	if got := c.counted(); !slices.Equal(got, []string{"crash"}) {
		t.Errorf("dev_count ran %v, want once", got)
	}
	for turn := 0; turn < 3; turn++ {
		if n := c.model.CountTurn("crash", turn); n != 1 {
			t.Errorf("scripted turn %d reached the model server %d times, want 1", turn, n)
		}
	}
}
