package storetest

import (
	"testing"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// testIfBusy checks AddMessageIfBusy and Steered: what a message does to a busy run (one with a
// turn in flight or about to start) and to one that is not.
func testIfBusy(t *testing.T, open opener) {
	t.Run("RejectToBusyStoresNothing", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1") // Queued: its first turn is about to start
		l := mustClaim(t, s, newOwner("r"), "run-1", longTTL)
		mustCommit(t, s, l, store.Write{Status: &api.AgentRunStatus{Phase: api.PhaseRunning, AgentRevision: 1}})
		_, _, err := s.AddMessageIfBusy(bg, "run-1", "k", "stop?", api.IfBusyReject)
		re, ok := store.AsRuleError(err)
		if !ok || re.Code != api.CodeRunBusy {
			t.Fatalf("AddMessageIfBusy(reject) to a Running run: err %v, want a RuleError with code RunBusy", err)
		}
		if msgs, _ := s.ListMessages(bg, "run-1", 0); len(msgs) != 0 {
			t.Errorf("a rejected message was stored: %s", js(msgs))
		}
		// The key was not used: the same key with enqueue is a new message.
		m, created, err := s.AddMessageIfBusy(bg, "run-1", "k", "later", api.IfBusyEnqueue)
		if err != nil || !created || m.IfBusy != api.IfBusyEnqueue {
			t.Errorf("enqueue after a reject: %+v created=%v err=%v, want created with ifBusy enqueue", m, created, err)
		}
	})
	t.Run("ModesStoredWhenBusy", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		mustCreateRun(t, s, "run-2")
		a, _, err := s.AddMessageIfBusy(bg, "run-1", "", "a", api.IfBusyEnqueue)
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := s.AddMessageIfBusy(bg, "run-1", "kb", "b", api.IfBusyInterrupt)
		if err != nil {
			t.Fatal(err)
		}
		c, _, err := s.AddMessageIfBusy(bg, "run-1", "", "c", api.IfBusyRollback)
		if err != nil {
			t.Fatal(err)
		}
		d, _, err := s.AddMessageIfBusy(bg, "run-1", "", "d", "")
		if err != nil {
			t.Fatal(err)
		}
		if a.IfBusy != api.IfBusyEnqueue || b.IfBusy != api.IfBusyInterrupt || c.IfBusy != api.IfBusyRollback || d.IfBusy != api.IfBusyEnqueue {
			t.Errorf("modes as stored: %q %q %q %q, want enqueue interrupt rollback enqueue", a.IfBusy, b.IfBusy, c.IfBusy, d.IfBusy)
		}
		msgs, _ := s.ListMessages(bg, "run-1", 0)
		if len(msgs) != 4 || msgs[1].IfBusy != api.IfBusyInterrupt || msgs[2].IfBusy != api.IfBusyRollback {
			t.Errorf("ListMessages = %s, want the modes kept", js(msgs))
		}
		again, created, err := s.AddMessageIfBusy(bg, "run-1", "kb", "b", api.IfBusyReject)
		if err != nil || created || again.Seq != b.Seq || again.IfBusy != api.IfBusyInterrupt {
			t.Errorf("a used key: %+v created=%v err=%v, want the first message (seq %d, interrupt)", again, created, err, b.Seq)
		}
		got, err := s.Steered(bg, []string{"run-1", "run-2", "run-none"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got["run-1"] != c.Seq {
			t.Errorf("Steered = %v, want run-1: %d (its latest interrupt or rollback)", got, c.Seq)
		}
	})
	t.Run("NotBusyTakenAsAlways", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("r"), "run-1", longTTL)
		mustCommit(t, s, l, store.Write{Release: true, Status: &api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonMessage, AgentRevision: 1,
			WaitingOn: &api.WaitingOn{Kind: "message"}}})
		m, created, err := s.AddMessageIfBusy(bg, "run-1", "", "hi", api.IfBusyReject)
		if err != nil || !created || m.IfBusy != "" {
			t.Fatalf("reject to a run waiting for a message: %+v created=%v err=%v, want taken with no mode", m, created, err)
		}
		if r := mustGetRun(t, s, "run-1"); r.Status.Phase != api.PhaseQueued {
			t.Errorf("phase %s, want Queued (the message woke it)", r.Status.Phase)
		}
		if got, _ := s.Steered(bg, []string{"run-1"}); len(got) != 0 {
			t.Errorf("Steered = %v, want none", got)
		}
		finish(t, s, "run-1", api.PhaseSucceeded)
		if _, _, err := s.AddMessageIfBusy(bg, "run-1", "", "late", api.IfBusyInterrupt); err == nil {
			t.Errorf("a message to a finished run was taken")
		}
	})
}
