package harnessguard

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
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
	c := NewCluster(t, ClaudeScript)
	c.Extra = append(c.Extra, harness.CacheEnv+"="+ClaudeHarness(t))
	c.StartServer()
	c.MustAgent("crasher", `{"metadata":{"name":"crasher"},"spec":{"harness":"claude-agent","tools":["write","dev_count"]}}`)
	extra := c.Extra
	c.Extra = append(slices.Clone(extra), "AGENTRUN_DEV_PAUSE_AT=after-result:t1/tool/0")
	a := c.StartRunner("a")
	c.Extra = extra
	c.StartRun("crasher", "tk1", "Crash test one")
	for deadline := time.Now().Add(90 * time.Second); !strings.Contains(a.Stderr.String(), "AGENTRUN_DEV_PAUSED after-result t1/tool/0"); time.Sleep(50 * time.Millisecond) {
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
	if r.Status.Runner != "b" {
		t.Errorf("finished on runner %q, want b", r.Status.Runner)
	}
	if got := c.Counted(); !slices.Equal(got, []string{"crash"}) {
		t.Errorf("dev_count ran %v, want once", got)
	}
	for turn := 0; turn < 3; turn++ {
		if n := c.Model.CountTurn("crash", turn); n != 1 {
			t.Errorf("scripted turn %d reached the model server %d times, want 1", turn, n)
		}
	}
	if _, err := os.Stat(filepath.Join(c.Dir, "runner-b", "runs", "tk1", "after.txt")); err != nil {
		t.Errorf("after.txt is not in runner b's run folder: %v", err)
	}
}

// The same takeover with codex: runner b restarts codex app-server in its own CODEX_HOME and run
// folder, and answers it from the journal.
func TestCodexPGTakeover(t *testing.T) {
	t.Parallel()
	cache := InstalledHarness(t, "codex")
	c := NewCluster(t, CodexHarnessScript)
	c.Extra = append(c.Extra, harness.CacheEnv+"="+cache, "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL="+c.Model.URL()+"/v1",
		"AGENTRUN_DEFAULT_PROVIDER=openai")
	CodexPGTakeover(t, c)
}
