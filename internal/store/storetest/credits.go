package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

func balanceOf(t *testing.T, s store.Store) store.CreditBalance {
	t.Helper()
	b, _, err := s.Credits(bg, 0)
	if err != nil {
		t.Fatalf("Credits: %v", err)
	}
	return b
}

// testCredits checks the credits ledger: adds, reservations (replaced per step, fenced, never
// beyond the balance, even when many runs reserve at once), charges settled once per step with
// the step's completion, reservations dropped when a run parks or ends, and wake-ups of runs
// waiting on credits or on their cap.
func testCredits(t *testing.T, open opener) {
	t.Run("NotEnforcedUntilAdded", func(t *testing.T) {
		s := open(t)
		mustCreateAgent(t, s, "a")
		mustCreateRun(t, s, "r1")
		l := mustClaim(t, s, newOwner("o"), "r1", longTTL)
		res, err := s.ReserveCredits(bg, l, store.Reservation{Run: "r1", StepKey: "t0/model", Attempt: 1, Amount: 500})
		if err != nil || res.Enforced || res.OK {
			t.Fatalf("reserve before any add = %+v, %v; want not enforced", res, err)
		}
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("t0/model", 1)}})
		mustCommit(t, s, l, store.Write{Steps: []api.Step{completedStep("t0/model", 1, `{}`, 400)}, Charges: []store.Charge{{StepKey: "t0/model", Amount: ptr[int64](400)}}})
		b, entries, err := s.Credits(bg, 0)
		if err != nil || b.Enforced || b.Charged != 0 || len(entries) != 0 {
			t.Fatalf("credits = %+v %v %v; an unreserved charge must not be recorded", b, entries, err)
		}
	})
	t.Run("ReserveChargeRelease", func(t *testing.T) {
		s := open(t)
		mustCreateAgent(t, s, "a")
		mustCreateRun(t, s, "r1")
		if _, err := s.AddCredits(bg, 0, ""); err == nil {
			t.Error("AddCredits(0) succeeded")
		}
		e, err := s.AddCredits(bg, 1000, "first")
		if err != nil || e.Kind != "add" || e.Amount == nil || *e.Amount != 1000 || e.Seq == 0 {
			t.Fatalf("AddCredits = %+v, %v", e, err)
		}
		l := mustClaim(t, s, newOwner("o"), "r1", longTTL)
		res, err := s.ReserveCredits(bg, l, store.Reservation{Run: "r1", StepKey: "t0/model", Attempt: 1, Amount: 1001})
		if err != nil || !res.Enforced || res.OK || res.Available != 1000 {
			t.Fatalf("reserve beyond the balance = %+v, %v", res, err)
		}
		res, err = s.ReserveCredits(bg, l, store.Reservation{Run: "r1", StepKey: "t0/model", Attempt: 1, Amount: 1000})
		if err != nil || !res.OK {
			t.Fatalf("reserve the whole balance = %+v, %v", res, err)
		}
		// The same step reserving again (a later attempt after a crash) replaces its hold.
		res, err = s.ReserveCredits(bg, l, store.Reservation{Run: "r1", StepKey: "t0/model", Attempt: 2, Amount: 700})
		if err != nil || !res.OK || res.Available != 1000 {
			t.Fatalf("re-reserve the same step = %+v, %v", res, err)
		}
		rs, err := s.ListReservations(bg)
		if err != nil || len(rs) != 1 || rs[0].Attempt != 2 || rs[0].Amount != 700 || rs[0].Run != "r1" {
			t.Fatalf("reservations = %+v, %v", rs, err)
		}
		if b := balanceOf(t, s); b.Reserved != 700 || b.Added != 1000 || !b.Enforced {
			t.Fatalf("balance = %+v", b)
		}
		// Another step cannot take what is held.
		res, _ = s.ReserveCredits(bg, l, store.Reservation{Run: "r1", StepKey: "t0/route", Attempt: 1, Amount: 301})
		if res.OK || res.Available != 300 || res.ReservedByOthers != 700 {
			t.Fatalf("reserve past a hold = %+v", res)
		}
		// Settling writes one charge, with the completion, and drops the hold; settling again
		// (a replayed completion) changes nothing.
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("t0/model", 2)}})
		charge := store.Charge{StepKey: "t0/model", Amount: ptr[int64](420), Note: "model call"}
		mustCommit(t, s, l, store.Write{Steps: []api.Step{completedStep("t0/model", 2, `{}`, 420)}, Charges: []store.Charge{charge}})
		mustCommit(t, s, l, store.Write{Charges: []store.Charge{charge}})
		b, entries, err := s.Credits(bg, 0)
		if err != nil || b.Charged != 420 || b.Reserved != 0 || len(entries) != 2 {
			t.Fatalf("after settling: %+v %+v %v", b, entries, err)
		}
		if entries[0].Kind != "charge" || entries[0].Run != "r1" || entries[0].StepKey != "t0/model" || *entries[0].Amount != 420 || entries[1].Kind != "add" {
			t.Errorf("ledger (newest first) = %s", js(entries))
		}
		// An unpriced charge is counted as unknown, not as zero.
		if res, _ := s.ReserveCredits(bg, l, store.Reservation{Run: "r1", StepKey: "t1/model", Attempt: 1, Amount: 0}); !res.OK {
			t.Fatalf("reserve 0 = %+v", res)
		}
		mustCommit(t, s, l, store.Write{Charges: []store.Charge{{StepKey: "t1/model"}}})
		if b := balanceOf(t, s); b.UnknownCharges != 1 || b.Charged != 420 {
			t.Errorf("after an unpriced charge: %+v", b)
		}
		// A hold left by a call that never settled is dropped when the run parks or ends.
		if res, _ := s.ReserveCredits(bg, l, store.Reservation{Run: "r1", StepKey: "t2/model", Attempt: 1, Amount: 100}); !res.OK {
			t.Fatalf("reserve = %+v", res)
		}
		now := time.Now()
		release(t, s, l, &now)
		if rs, _ := s.ListReservations(bg); len(rs) != 0 {
			t.Errorf("reservations after release = %+v", rs)
		}
		// A stale lease reserves nothing.
		l2 := eventuallyClaim(t, s, newOwner("o2"), "r1", longTTL)
		if _, err := s.ReserveCredits(bg, l, store.Reservation{Run: "r1", StepKey: "t3/model", Attempt: 1, Amount: 1}); !errors.Is(err, store.ErrFenced) {
			t.Errorf("reserve under a stale lease: %v, want ErrFenced", err)
		}
		_ = l2
	})
	t.Run("ConcurrentReservationsNeverOverspend", func(t *testing.T) {
		s := open(t)
		mustCreateAgent(t, s, "a")
		const runs = 12
		leases := make([]store.Lease, runs)
		for i := range leases {
			name := fmt.Sprintf("c%d", i)
			mustCreateRun(t, s, name)
			leases[i] = mustClaim(t, s, newOwner("o"), name, longTTL)
		}
		if _, err := s.AddCredits(bg, 1000, ""); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		granted := 0
		for i := range leases {
			wg.Add(1)
			go func(l store.Lease) {
				defer wg.Done()
				res, err := s.ReserveCredits(bg, l, store.Reservation{Run: l.Run, StepKey: "t0/model", Attempt: 1, Amount: 300})
				if err != nil {
					t.Errorf("reserve %s: %v", l.Run, err)
					return
				}
				if res.OK {
					mu.Lock()
					granted++
					mu.Unlock()
				}
			}(leases[i])
		}
		wg.Wait()
		if granted != 3 {
			t.Errorf("%d reservations of 300 granted from 1000, want 3", granted)
		}
		if b := balanceOf(t, s); b.Reserved != 900 {
			t.Errorf("reserved = %d, want 900", b.Reserved)
		}
	})
	t.Run("AddWakesRunsWaitingOnCredits", func(t *testing.T) {
		s := open(t)
		mustCreateAgent(t, s, "a")
		for _, name := range []string{"broke", "chat"} {
			mustCreateRun(t, s, name)
			l := mustClaim(t, s, newOwner("o"), name, longTTL)
			st := api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonCredits, WaitingOn: &api.WaitingOn{Kind: "credits"}}
			if name == "chat" {
				st.Reason, st.WaitingOn = api.ReasonMessage, &api.WaitingOn{Kind: "message"}
			}
			mustCommit(t, s, l, store.Write{Status: &st, Release: true})
		}
		mustNotClaim(t, s, "both runs are parked")
		if _, err := s.AddCredits(bg, 5, "refill"); err != nil {
			t.Fatal(err)
		}
		if r := mustGetRun(t, s, "broke"); r.Status.Phase != api.PhaseQueued {
			t.Errorf("run waiting on credits is %s after an add, want Queued", r.Status.Phase)
		}
		if r := mustGetRun(t, s, "chat"); r.Status.Phase != api.PhaseWaiting {
			t.Errorf("run waiting on a message is %s after an add, want Waiting", r.Status.Phase)
		}
		got := claim(t, s, newOwner("o"), longTTL)
		if _, ok := got["broke"]; !ok || len(got) != 1 {
			t.Errorf("claimable after the add: %v, want broke only", leaseNames(got))
		}
	})
	t.Run("RaiseRunCap", func(t *testing.T) {
		s := open(t)
		mustCreateAgent(t, s, "a")
		r := newRun("capped", "a")
		r.Spec.MaxCostUSD = "0.10"
		r.Status.Cost = &api.RunCost{TotalUSD: "0.00", LimitUSD: "0.10"}
		if err := s.CreateRun(bg, r); err != nil {
			t.Fatal(err)
		}
		l := mustClaim(t, s, newOwner("o"), "capped", longTTL)
		st := api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonMaxCostReached, Cost: &api.RunCost{TotalUSD: "0.09", LimitUSD: "0.10", NeededUSD: "0.12"}}
		mustCommit(t, s, l, store.Write{Status: &st, Release: true})
		refuse := errors.New("refused")
		if _, err := s.RaiseRunCap(bg, "capped", "0.05", func(cur *api.AgentRun) error { return refuse }); !errors.Is(err, refuse) {
			t.Fatalf("a refused raise: %v", err)
		}
		if got := mustGetRun(t, s, "capped"); got.Spec.MaxCostUSD != "0.10" || got.Status.Phase != api.PhaseWaiting {
			t.Fatalf("a refused raise changed the run: %+v", got.Spec)
		}
		var seen string
		got, err := s.RaiseRunCap(bg, "capped", "0.12", func(cur *api.AgentRun) error { seen = cur.Spec.MaxCostUSD; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if seen != "0.10" || got.Spec.MaxCostUSD != "0.12" || got.Status.Phase != api.PhaseQueued || got.Status.Cost.LimitUSD != "0.12" {
			t.Fatalf("after raise: check saw %q; run spec %+v status %+v", seen, got.Spec, got.Status)
		}
		if names := leaseNames(claim(t, s, newOwner("o"), longTTL)); len(names) != 1 {
			t.Errorf("raised run not claimable: %v", names)
		}
		if _, err := s.RaiseRunCap(bg, "nope", "1", func(*api.AgentRun) error { return nil }); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("raise a missing run: %v", err)
		}
	})
	t.Run("Secrets", func(t *testing.T) {
		s := open(t)
		if _, err := s.GetSecret(bg, "k"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("missing secret: %v", err)
		}
		if err := s.PutSecret(bg, "k", []byte{0, 1, 2, 255}, []string{"ANTHROPIC_API_KEY"}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutSecret(bg, "k", []byte{9, 0, 9}, []string{"OPENAI_API_KEY"}); err != nil {
			t.Fatal(err)
		}
		b, err := s.GetSecret(bg, "k")
		if err != nil || string(b) != "\x09\x00\x09" {
			t.Fatalf("GetSecret = %v, %v", b, err)
		}
		list, err := s.ListSecrets(bg)
		if err != nil || len(list) != 1 || list[0].Name != "k" || len(list[0].Keys) != 1 || list[0].Keys[0] != "OPENAI_API_KEY" || list[0].UpdatedAt.IsZero() {
			t.Fatalf("ListSecrets = %+v, %v", list, err)
		}
		if err := s.DeleteSecret(bg, "k"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteSecret(bg, "k"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("delete twice: %v", err)
		}
	})
}
