package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
)

// The codex harness against the real `codex app-server` at the pinned version (from
// AGENTRUN_HARNESS_CACHE, or installed from npm once into it) and the scripted model server, in
// the Responses format. Codex lists our MCP tools inside a namespace and the scripted server calls
// them with it, so the scripts name them plainly.

// codexCase is Codex for the scenarios every harness runs (e2etest.HarnessQuickstart, ...). Codex
// gives the model an MCP tool's result after a "Wall time: ... Output:" header, which the script's
// template copies along; its provider (OpenAI's) is not routed, so the agent's model answers.
var codexCase = HarnessCase{
	Name:  "codex",
	Procs: HarnessProcs,
	PrintedRegion: func(out string) bool {
		return strings.Contains(out, "Output:\nEurope\n\nNotes about ") && strings.HasSuffix(out, "Output:\nEurope.\n")
	},
	Unrouted: "gpt-4.1",
	WhileParked: func(t *testing.T, e *Env) {
		NoHarnessLeft(t, e.Dir, 10*time.Second) // a parked run keeps no harness running
		// CODEX_HOME is the run's harness home in the data folder (kept while the run waits), and
		// the gateway token is in no file there.
		conf, err := os.ReadFile(filepath.Join(e.Dir, "harness-home", "c1", "codex", "config.toml"))
		if err != nil || !strings.Contains(string(conf), `wire_api = "responses"`) || strings.Contains(string(conf), "agr_") {
			t.Errorf("codex config.toml: %v\n%s", err, conf)
		}
	},
}

// The seed's quickstart, unchanged but for "harness": "codex" in the agent: exit 8 while it asks
// which region, runs message, exit 0, runs read-file region.md. Each scripted model turn reaches
// the scripted server once, though codex was started twice (the run parked on the question and the
// second start replayed the first call from the journal), and status.turns and status.cost read as
// for builtin.
func TestCodexQuickstart(t *testing.T) {
	t.Parallel()
	NeedBwrap(t) // the seed's agent has a sandbox: its computer is the first step
	e := NewCodexEnv(t, CodexHarnessScript)
	run := HarnessQuickstart(t, e, codexCase)
	// Codex asks for no output limit of its own: the gateway sets the agent's and says so once.
	clamped := false
	for _, ev := range e.Events(run) {
		clamped = clamped || ev.Type == "gateway.clamped"
	}
	if clamped {
		t.Errorf("a gateway.clamped event, though codex asked for no limit above the agent's")
	}
}

// A tool call the server's deny set refuses is answered to codex without running; one that asks
// parks the run in Waiting/Approval with its arguments until a person approves, then runs once.
func TestCodexApprovalAndDeny(t *testing.T) {
	t.Parallel()
	e := NewCodexEnv(t, CodexHarnessScript)
	HarnessApprovalAndDeny(t, e, codexCase)
	if a := e.GetRun("c1").Status.Answer; a == nil || a.Preview != "counted" {
		t.Errorf("answer = %+v", a)
	}
}

// A cap too small for the first call's worst case parks the run MaxCostReached with neededUSD;
// raising the cap to it lets it finish.
func TestCodexCapPause(t *testing.T) {
	t.Parallel()
	HarnessCapPause(t, NewCodexEnv(t, CodexHarnessScript), codexCase)
}

// SIGKILL mid model call, then right after a tool call, then start again: the run finishes, no
// scripted turn reaches the model server twice and the counting tool ran once. A tool call cut off
// after its intent parks NeedsResolution naming it; retry runs it once. No codex outlives its
// runner.
func TestCodexCrashReplay(t *testing.T) {
	t.Parallel()
	HarnessCrashReplay(t, NewCodexEnv(t, CodexHarnessScript), codexCase)
}

// A keep-alive run's message is codex's next user turn: codex, stopped while the run waited, is
// started again, replays the first turn from the journal and answers the second.
func TestCodexKeepAlive(t *testing.T) {
	t.Parallel()
	r := HarnessKeepAlive(t, NewCodexEnv(t, CodexHarnessScript), codexCase)
	if len(r.Status.Turns) != 2 {
		t.Errorf("turns = %+v, want one per prompt", r.Status.Turns)
	}
}

// Cancelling a run whose codex waits on a model call ends the run and kills codex at once.
func TestCodexCancel(t *testing.T) {
	t.Parallel()
	HarnessCancel(t, NewCodexEnv(t, CodexHarnessScript), codexCase)
}
