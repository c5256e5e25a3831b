package e2e

import (
	"sync"
	"testing"

	"agentrun.dev/agentrun/internal/harness"
)

// The opencode harness against the real `opencode` binary at the pinned version (from
// AGENTRUN_HARNESS_CACHE, or installed from npm once into it) and the scripted model server, with
// the tests the pi harness runs. OpenCode names an MCP server's tools SERVER_TOOL.

var (
	opencodeOnce  sync.Once
	opencodeCache string
	opencodeSkip  string
)

var opencodeCase = harnessCase{name: "opencode", prefix: "agentrun_", procs: runnerChildren}

// newOpenCodeEnv is newEnv with the harness cache (holding opencode) given to the server.
func newOpenCodeEnv(t *testing.T) *env {
	t.Helper()
	opencodeOnce.Do(func() { opencodeCache, opencodeSkip = cachedHarness(t, "opencode") })
	if opencodeSkip != "" {
		t.Skip(opencodeSkip)
	}
	e := newEnv(t, opencodeCase.script())
	e.extra = append(e.extra, harness.CacheEnv+"="+opencodeCache)
	return e
}

func TestOpenCodeQuickstart(t *testing.T) {
	t.Parallel()
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
