package api

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// SIGTERM stops serve in order: the HTTP server, then the runner (whose drive ends and gives its
// run back through the still-open store), then the controllers, and the store last. The process
// exits 0, no part wrote to a closed store, and the next start takes the run up at once (it was
// released, not left to its lease) and finds the interrupted tool call, as after a crash.
func TestGracefulStop(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, CrashScript)
	e.Start()
	name := StartCrashRun(t, e, "Count slowly")
	deadline := time.Now().Add(15 * time.Second)
	for len(e.Counted()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(e.Counted()) != 1 {
		t.Fatalf("the slow tool never started")
	}
	proc := e.Proc
	if err := proc.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// A liveness bound: a part that never stops would hold the process.
	select {
	case <-e.Exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop after SIGTERM:\n%s", e.Stderr.String())
	}
	e.Proc = nil
	if proc.ProcessState == nil || proc.ProcessState.ExitCode() != 0 {
		t.Errorf("serve exited with %v after SIGTERM, want 0:\n%s", proc.ProcessState, e.Stderr.String())
	}
	out := e.Stderr.String()
	if !strings.Contains(out, "agentrun: shutting down") {
		t.Errorf("no shutting-down line:\n%s", out)
	}
	for _, bad := range []string{"database is closed", "release run", "sql: ", "panic"} {
		if strings.Contains(out, bad) {
			t.Errorf("stderr after a graceful stop has %q:\n%s", bad, QuietLog(out))
		}
	}
	if _, err := os.Stat(filepath.Join(e.Dir, "server.json")); !os.IsNotExist(err) {
		t.Errorf("server.json left behind after a graceful stop: %v", err)
	}

	e.Start()
	r := e.WaitPhase(name, 15*time.Second, api.PhaseNeedsResolution)
	if r.Status.WaitingOn == nil || r.Status.WaitingOn.StepKey != "t0/tool/0" {
		t.Fatalf("after the restart the run waits on %+v, want the interrupted t0/tool/0", r.Status.WaitingOn)
	}
	if got := e.Counted(); len(got) != 1 {
		t.Errorf("side effect happened %d times, want 1", len(got))
	}
}

// Without the dev flag the test hooks do not exist, whatever the environment says: dev_count is
// an unknown tool and AGENTRUN_DEV_PAUSE_AT is ignored (with a warning).
func TestDevHooksNeedTheDevFlag(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, CrashScript)
	var extra []string
	for _, kv := range e.Extra {
		if !strings.HasPrefix(kv, "AGENTRUN_DEV=") {
			extra = append(extra, kv)
		}
	}
	e.Extra = append(extra, "AGENTRUN_DEV_TOOLS=1")
	e.Start("AGENTRUN_DEV_PAUSE_AT=before-intent:t0/model")
	if !strings.Contains(e.Stderr.String(), "AGENTRUN_DEV_PAUSE_AT is ignored") {
		t.Errorf("no warning that the pause point is ignored:\n%s", e.Stderr.String())
	}
	var apiErr api.Error
	if st := e.Do("PUT", "/v2/agents/counter", `{"metadata":{"name":"counter"},"spec":{"tools":["dev_count"]}}`, &apiErr); st < 400 || !strings.Contains(apiErr.Field, "spec.tools") {
		t.Errorf("an agent with dev_count without the dev flag: HTTP %d %+v, want refused on spec.tools", st, apiErr)
	}
	// A run is not paused at its first model call.
	if st := e.Do("PUT", "/v2/agents/plain", `{"metadata":{"name":"plain"},"spec":{}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/plain/runs", `{"input":{"content":"Count once"}}`, &run); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	e.WaitPhase(run.Metadata.Name, 15*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if strings.Contains(e.Stderr.String(), "AGENTRUN_DEV_PAUSED") {
		t.Errorf("the server paused without the dev flag")
	}
}
