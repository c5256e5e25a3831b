package storetest

import (
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// testTransitions checks that a backend writes what the run transitions of package store decide
// (store.MessageRun, ResolveRun, CreditsAdded, RaiseCap, CancelRun): each case parks or holds a
// run, acts on it through the store, and compares the stored run with the rule's answer for the
// row as it was.
func testTransitions(t *testing.T, open opener) {
	// park commits st for a new run and releases it (held: keeps the lease); it returns the row
	// the rules see and the lease.
	park := func(t *testing.T, s store.Store, run string, st api.AgentRunStatus, held bool) (store.RunRow, store.Lease) {
		t.Helper()
		mustCreateRun(t, s, run)
		l := mustClaim(t, s, newOwner("r"), run, longTTL)
		mustCommit(t, s, l, store.Write{Status: &st, Release: !held})
		return store.RunRow{Phase: st.Phase, Status: st, Leased: held}, l
	}
	// wantStatus compares the stored status with the one the rule returned (nil: the one before).
	wantStatus := func(t *testing.T, s store.Store, run string, before api.AgentRunStatus, rule *api.AgentRunStatus) {
		t.Helper()
		want := before
		if rule != nil {
			want = *rule
		}
		got := mustGetRun(t, s, run).Status
		if got.Phase != want.Phase || got.Reason != want.Reason || got.Message != want.Message || (got.WaitingOn == nil) != (want.WaitingOn == nil) {
			t.Errorf("stored status %s/%s %q waitingOn %v, the rule says %s/%s %q waitingOn %v",
				got.Phase, got.Reason, got.Message, got.WaitingOn, want.Phase, want.Reason, want.Message, want.WaitingOn)
		}
	}
	question := api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonQuestion, Message: "asks", WaitingOn: &api.WaitingOn{Kind: "question", Question: "Which?"}}

	t.Run("MessageToParkedQuestion", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		row, _ := park(t, s, "run-1", question, false)
		rule, err := store.MessageRun(row)
		if err != nil || rule == nil {
			t.Fatalf("the rule: %v, %v; want a requeue", rule, err)
		}
		if _, _, err := s.AddMessage(bg, "run-1", "k", "Europe"); err != nil {
			t.Fatal(err)
		}
		wantStatus(t, s, "run-1", row.Status, rule)
		if names := leaseNames(claim(t, s, newOwner("o"), longTTL)); len(names) != 1 {
			t.Errorf("a requeued run is claimable: got %v", names)
		}
	})
	t.Run("MessageToHeldRunKeepsStatus", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		row, l := park(t, s, "run-1", question, true)
		rule, _ := store.MessageRun(row)
		if _, _, err := s.AddMessage(bg, "run-1", "", "Europe"); err != nil {
			t.Fatal(err)
		}
		wantStatus(t, s, "run-1", row.Status, rule)
		if sig := mustCommit(t, s, l, store.Write{}); sig.PokeSeq <= l.PokeSeq {
			t.Errorf("the holder was not poked: poke seq %d after %d", sig.PokeSeq, l.PokeSeq)
		}
	})
	t.Run("ResolveParkedStep", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("r"), "run-1", longTTL)
		st := api.AgentRunStatus{Phase: api.PhaseNeedsResolution, Message: "interrupted", WaitingOn: &api.WaitingOn{Kind: "resolution", StepKey: "t0/tool/0"}}
		mustCommit(t, s, l, store.Write{Steps: []api.Step{{Key: "t0/tool/0", Kind: "tool", State: api.StepStarted, Attempt: 1, StartedAt: time.Now()}}, Status: &st, Release: true})
		rule, err := store.ResolveRun(store.RunRow{Phase: st.Phase, Status: st}, "t0/tool/0", "skip")
		if err != nil || rule == nil {
			t.Fatalf("the rule: %v, %v", rule, err)
		}
		if err := s.ResolveStep(bg, "run-1", "t0/tool/0", "skip", nil); err != nil {
			t.Fatal(err)
		}
		wantStatus(t, s, "run-1", st, rule)
	})
	t.Run("CreditsLeaveHeldRun", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		st := api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonCredits, Message: "no credits", WaitingOn: &api.WaitingOn{Kind: "credits"}}
		held, _ := park(t, s, "held", st, true)
		parked, _ := park(t, s, "parked", st, false)
		if _, err := s.AddCredits(bg, 10, "refill"); err != nil {
			t.Fatal(err)
		}
		wantStatus(t, s, "held", st, store.CreditsAdded(held))
		rule := store.CreditsAdded(parked)
		if rule == nil {
			t.Fatal("the rule leaves a parked run waiting on credits")
		}
		wantStatus(t, s, "parked", st, rule)
	})
	t.Run("RaiseCapOfHeldRun", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		st := api.AgentRunStatus{Phase: api.PhaseRunning, Cost: &api.RunCost{TotalUSD: "0.01", LimitUSD: "0.10"}}
		row, _ := park(t, s, "run-1", st, true)
		got, err := s.RaiseRunCap(bg, "run-1", "0.50", func(*api.AgentRun) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		spec, rule := store.RaiseCap(got.Spec, row, "0.50")
		if got.Spec.MaxCostUSD != spec.MaxCostUSD || rule != nil || got.Status.Cost == nil || got.Status.Cost.LimitUSD != "0.10" {
			t.Errorf("held run after a raise: spec cap %q, status cost %+v; want the spec raised and the holder's status kept", got.Spec.MaxCostUSD, got.Status.Cost)
		}
	})
	t.Run("RaiseCapOfRunParkedOnQuestion", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		st := question
		st.Cost = &api.RunCost{TotalUSD: "0.01", LimitUSD: "0.10"}
		row, _ := park(t, s, "run-1", st, false)
		got, err := s.RaiseRunCap(bg, "run-1", "0.50", func(*api.AgentRun) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		_, rule := store.RaiseCap(got.Spec, row, "0.50")
		wantStatus(t, s, "run-1", st, rule)
		if got.Status.Cost == nil || got.Status.Cost.LimitUSD != "0.50" || got.Status.Phase != api.PhaseWaiting {
			t.Errorf("status after a raise: %s, cost %+v; want still Waiting, limit 0.50", got.Status.Phase, got.Status.Cost)
		}
	})
	t.Run("CancelFollowsRule", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		done := api.AgentRunStatus{Phase: api.PhaseSucceeded, Reason: api.ReasonCompleted}
		row, _ := park(t, s, "done", done, false)
		if _, err := s.RequestCancel(bg, "done"); !errIs(err, store.CancelRun(row)) || store.CancelRun(row) == nil {
			t.Errorf("cancel a finished run: %v, the rule says %v", err, store.CancelRun(row))
		}
		row, _ = park(t, s, "asks", question, false)
		if err := store.CancelRun(row); err != nil {
			t.Fatalf("the rule refuses to cancel a waiting run: %v", err)
		}
		r, err := s.RequestCancel(bg, "asks")
		if err != nil || !r.Status.CancelRequested {
			t.Errorf("cancel a waiting run: %v, cancelRequested %v", err, r != nil && r.Status.CancelRequested)
		}
	})
}
