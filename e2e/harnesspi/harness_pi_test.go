package harnesspi

import (
	"testing"

	. "agentrun.dev/agentrun/e2e/e2etest"
)

// The pi harness against the real `pi` CLI at the pinned version (from AGENTRUN_HARNESS_CACHE, or
// installed from npm once into it) and the scripted model server. pi sees our tools under their
// own names (its extension registers them), so the scripts name them plainly.

// The seed's quickstart, unchanged but for "harness": "pi" in the agent: exit 8 while it asks
// which region, runs message, exit 0, runs read-file region.md. pi was started twice (the run
// parked on the question), and each scripted model turn reached the scripted server once: the
// second start was answered from the journal.
func TestPiQuickstart(t *testing.T) {
	t.Parallel()
	NeedBwrap(t) // the seed's agent has a sandbox: its computer is the first step
	HarnessQuickstart(t, NewPiEnv(t), PiCase)
}

// A write the server's deny set refuses is answered to pi as an error without running; a
// dev_count that asks parks the run in Waiting/Approval with its arguments until a person
// approves, then runs once.
func TestPiApprovalAndDeny(t *testing.T) {
	t.Parallel()
	HarnessApprovalAndDeny(t, NewPiEnv(t), PiCase)
}

// A cap too small for the first call's worst case parks the run MaxCostReached with neededUSD
// before anything reaches the model server; raising the cap to it lets it finish.
func TestPiCapPause(t *testing.T) {
	t.Parallel()
	HarnessCapPause(t, NewPiEnv(t), PiCase)
}

// SIGKILL mid model call, then right after a tool call, then start again: the run finishes, no
// scripted turn reaches the model server twice and the counting tool ran once. A tool call cut off
// after its intent parks NeedsResolution naming it; retry runs it once. No pi outlives its runner.
func TestPiCrashReplay(t *testing.T) {
	t.Parallel()
	HarnessCrashReplay(t, NewPiEnv(t), PiCase)
}

// A keep-alive run's message is pi's next user turn: pi, stopped while the run waited, is started
// again, replays the first turn from the journal and answers the second.
func TestPiKeepAlive(t *testing.T) {
	t.Parallel()
	HarnessKeepAlive(t, NewPiEnv(t), PiCase)
}

// Cancelling a run whose pi waits on a model call ends the run and kills pi at once.
func TestPiCancel(t *testing.T) {
	t.Parallel()
	HarnessCancel(t, NewPiEnv(t), PiCase)
}
