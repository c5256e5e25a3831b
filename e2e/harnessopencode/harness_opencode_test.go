package harnessopencode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/harness"
)

// The opencode harness against the real `opencode` binary at the pinned version (from
// AGENTRUN_HARNESS_CACHE, or installed from npm once into it) and the scripted model server, with
// the tests the pi harness runs. OpenCode names an MCP server's tools SERVER_TOOL.

// newOpenCodeEnv is NewEnv with the harness cache (holding opencode) given to the server.
func newOpenCodeEnv(t *testing.T) *Env {
	t.Helper()
	cache := InstalledHarness(t, "opencode")
	e := NewEnv(t, OpencodeCase.Script())
	e.Extra = append(e.Extra, harness.CacheEnv+"="+cache)
	return e
}

func TestOpenCodeQuickstart(t *testing.T) {
	t.Parallel()
	NeedBwrap(t) // the seed's agent has a sandbox: its computer is the first step
	HarnessQuickstart(t, newOpenCodeEnv(t), OpencodeCase)
}

func TestOpenCodeApprovalAndDeny(t *testing.T) {
	t.Parallel()
	HarnessApprovalAndDeny(t, newOpenCodeEnv(t), OpencodeCase)
}

func TestOpenCodeCapPause(t *testing.T) {
	t.Parallel()
	HarnessCapPause(t, newOpenCodeEnv(t), OpencodeCase)
}

func TestOpenCodeCrashReplay(t *testing.T) {
	t.Parallel()
	HarnessCrashReplay(t, newOpenCodeEnv(t), OpencodeCase)
}

func TestOpenCodeKeepAlive(t *testing.T) {
	t.Parallel()
	HarnessKeepAlive(t, newOpenCodeEnv(t), OpencodeCase)
}

func TestOpenCodeCancel(t *testing.T) {
	t.Parallel()
	HarnessCancel(t, newOpenCodeEnv(t), OpencodeCase)
}

// OpenCode is not installed on first use: with nothing in the cache or the data folder, serve
// prints the exact line that installs it, capabilities say it is unavailable with that line, and a
// run of it fails HarnessUnavailable at once with it, having run no npm.
func TestOpenCodeNotInstalled(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, HarnessScript)
	e.Extra = append(e.Extra, harness.CacheEnv+"="+t.TempDir())
	e.Start()
	line := "npm install --no-audit --no-fund --save-exact --prefix " + filepath.Join(e.Dir, "harnesses", "opencode@"+harness.OpenCodeVersion) + " opencode-ai@" + harness.OpenCodeVersion
	e.WaitStderr("harness:   opencode is not installed; to run it: "+line, 10*time.Second)
	var caps struct{ Harnesses []harness.Info }
	res := e.MustCLI(0, "server", "capabilities")
	if err := JSONUnmarshal(res.Stdout, &caps); err != nil {
		t.Fatalf("capabilities: %v\n%s", err, res.Stdout)
	}
	var oc *harness.Info
	for i, h := range caps.Harnesses {
		if h.Name == "opencode" {
			oc = &caps.Harnesses[i]
		}
	}
	if oc == nil || oc.Available || !strings.Contains(oc.Why, line) || oc.Version != harness.OpenCodeVersion {
		t.Fatalf("capabilities list opencode as %+v, want unavailable with the install line", oc)
	}
	if st := e.Do("PUT", "/v2/agents/oc", `{"metadata":{"name":"oc"},"spec":{"harness":"opencode","tools":["write"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"n1"},"spec":{"agent":"oc","input":"Say hello"}}`, nil)
	r := e.WaitPhase("n1", 30*time.Second, api.PhaseFailed, api.PhaseSucceeded)
	if r.Status.Reason != api.ReasonHarnessUnavailable || !strings.Contains(r.Status.Message, line) {
		t.Errorf("n1: %s %s", r.Status.Reason, r.Status.Message)
	}
	if _, err := os.Stat(filepath.Join(e.Dir, "harnesses", "opencode@"+harness.OpenCodeVersion)); err == nil {
		t.Errorf("the server installed opencode by itself")
	}
}

// TestOpenCodeInterrupt: a message with ifBusy interrupt while OpenCode's second model call is
// slow stops its turn (the gateway's stop text: each turn is an `opencode run` of its own, with
// no control channel), and the message is its next turn (e2etest.HarnessInterrupt, without the
// SIGKILL: each OpenCode start is slow here, and the replay after one is e2e/ifbusy's for the
// other harnesses).
func TestOpenCodeInterrupt(t *testing.T) {
	t.Parallel()
	cache := InstalledHarness(t, "opencode")
	e := NewEnv(t, HarnessInterruptScript("agentrun_dev_count"))
	e.Extra = append(e.Extra, harness.CacheEnv+"="+cache)
	HarnessInterrupt(t, e, "opencode", "agentrun_dev_count", false, false)
}

// TestOpenCodeRollback: a message with ifBusy rollback while OpenCode's call is slow discards
// the turn, restores the run folder, and OpenCode, started again from the journal without the
// turn, answers the message (e2etest.HarnessRollback, without the SIGKILL, as above).
func TestOpenCodeRollback(t *testing.T) {
	t.Parallel()
	cache := InstalledHarness(t, "opencode")
	slow, after := HarnessRollbackScript("agentrun_")
	e := NewEnv(t, slow)
	e.Extra = append(e.Extra, harness.CacheEnv+"="+cache)
	HarnessRollback(t, e, "opencode", `["write","dev_count"]`, false, after)
}
