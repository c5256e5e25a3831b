package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/harness"
)

// The opencode harness against the real `opencode` binary at the pinned version (from
// AGENTRUN_HARNESS_CACHE, or installed from npm once into it) and the scripted model server, with
// the tests the pi harness runs. OpenCode names an MCP server's tools SERVER_TOOL.

var opencodeCase = harnessCase{name: "opencode", prefix: "agentrun_", procs: runnerChildren}

// newOpenCodeEnv is newEnv with the harness cache (holding opencode) given to the server.
func newOpenCodeEnv(t *testing.T) *env {
	t.Helper()
	cache := installedHarness(t, "opencode")
	e := newEnv(t, opencodeCase.script())
	e.extra = append(e.extra, harness.CacheEnv+"="+cache)
	return e
}

func TestOpenCodeQuickstart(t *testing.T) {
	t.Parallel()
	needBwrap(t) // the seed's agent has a sandbox: its computer is the first step
	harnessQuickstart(t, newOpenCodeEnv(t), opencodeCase)
}

func TestOpenCodeApprovalAndDeny(t *testing.T) {
	t.Parallel()
	harnessApprovalAndDeny(t, newOpenCodeEnv(t), opencodeCase)
}

func TestOpenCodeCapPause(t *testing.T) {
	t.Parallel()
	harnessCapPause(t, newOpenCodeEnv(t), opencodeCase)
}

func TestOpenCodeCrashReplay(t *testing.T) {
	t.Parallel()
	harnessCrashReplay(t, newOpenCodeEnv(t), opencodeCase)
}

func TestOpenCodeKeepAlive(t *testing.T) {
	t.Parallel()
	harnessKeepAlive(t, newOpenCodeEnv(t), opencodeCase)
}

func TestOpenCodeCancel(t *testing.T) {
	t.Parallel()
	harnessCancel(t, newOpenCodeEnv(t), opencodeCase)
}

// OpenCode is not installed on first use: with nothing in the cache or the data folder, serve
// prints the exact line that installs it, capabilities say it is unavailable with that line, and a
// run of it fails HarnessUnavailable at once with it, having run no npm.
func TestOpenCodeNotInstalled(t *testing.T) {
	t.Parallel()
	e := newEnv(t, harnessScript)
	e.extra = append(e.extra, harness.CacheEnv+"="+t.TempDir())
	e.start()
	line := "npm install --no-audit --no-fund --save-exact --prefix " + filepath.Join(e.dir, "harnesses", "opencode@"+harness.OpenCodeVersion) + " opencode-ai@" + harness.OpenCodeVersion
	e.waitStderr("harness:   opencode is not installed; to run it: "+line, 10*time.Second)
	var caps struct{ Harnesses []harness.Info }
	res := e.mustCLI(0, "server", "capabilities")
	if err := jsonUnmarshal(res.stdout, &caps); err != nil {
		t.Fatalf("capabilities: %v\n%s", err, res.stdout)
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
	if st := e.do("PUT", "/v2/agents/oc", `{"metadata":{"name":"oc"},"spec":{"harness":"opencode","tools":["write"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"n1"},"spec":{"agent":"oc","input":"Say hello"}}`, nil)
	r := e.waitPhase("n1", 30*time.Second, api.PhaseFailed, api.PhaseSucceeded)
	if r.Status.Reason != api.ReasonHarnessUnavailable || !strings.Contains(r.Status.Message, line) {
		t.Errorf("n1: %s %s", r.Status.Reason, r.Status.Message)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "harnesses", "opencode@"+harness.OpenCodeVersion)); err == nil {
		t.Errorf("the server installed opencode by itself")
	}
}
