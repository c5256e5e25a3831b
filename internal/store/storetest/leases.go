package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

func testClaims(t *testing.T, open opener) {
	t.Run("NewRunClaimable", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		owner := newOwner("runner")
		l := mustClaim(t, s, owner, "run-1", longTTL)
		if l.Generation != 1 {
			t.Errorf("first claim: generation = %d, want 1", l.Generation)
		}
		if l.Run != "run-1" || l.Owner != owner {
			t.Errorf("first claim: lease %+v, want run %q owner %q", l, "run-1", owner)
		}
	})

	t.Run("TerminalRunNotClaimable", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		r := newRun("done", "agent-a")
		r.Status.Phase = api.PhaseSucceeded
		if err := s.CreateRun(bg, r); err != nil {
			t.Fatalf("CreateRun(Succeeded): %v", err)
		}
		mustNotClaim(t, s, "a run created in phase Succeeded")
	})

	t.Run("LiveLeaseNotClaimedByOthers", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		mustNotClaim(t, s, "another owner while the lease is live")
	})

	t.Run("ExpiredLeaseReclaimed", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l1 := mustClaim(t, s, newOwner("runner"), "run-1", shortTTL)
		time.Sleep(3 * shortTTL)
		owner2 := newOwner("runner")
		l2 := eventuallyClaim(t, s, owner2, "run-1", longTTL)
		if l2.Generation <= l1.Generation {
			t.Errorf("re-claim after expiry: generation = %d, want > %d", l2.Generation, l1.Generation)
		}
		if l2.Owner != owner2 {
			t.Errorf("re-claim after expiry: owner = %q, want %q", l2.Owner, owner2)
		}
		mustNotClaim(t, s, "after the re-claim with a long ttl")
	})

	t.Run("GenerationIncreasesOnEveryClaim", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		past := time.Now().Add(-time.Second)
		var last int64
		for i := 0; i < 4; i++ {
			l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
			if i == 0 && l.Generation != 1 {
				t.Errorf("claim 1: generation = %d, want 1", l.Generation)
			}
			if l.Generation <= last {
				t.Errorf("claim %d: generation = %d, want > %d", i+1, l.Generation, last)
			}
			last = l.Generation
			release(t, s, l, &past)
		}
	})

	t.Run("MaxBoundsClaims", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		for i := 0; i < 5; i++ {
			mustCreateRun(t, s, fmt.Sprintf("run-%d", i))
		}
		seen := map[string]bool{}
		for i, want := range []int{2, 2, 1, 0} {
			owner := newOwner("runner")
			leases, err := s.ClaimRuns(bg, owner, 2, longTTL)
			if err != nil {
				t.Fatalf("ClaimRuns(max 2) #%d: %v", i+1, err)
			}
			if len(leases) != want {
				t.Errorf("ClaimRuns(max 2) #%d returned %d leases, want %d", i+1, len(leases), want)
			}
			for _, l := range leases {
				if seen[l.Run] {
					t.Errorf("run %q claimed twice while its lease is live", l.Run)
				}
				seen[l.Run] = true
			}
		}
		if len(seen) != 5 {
			t.Errorf("claimed %d distinct runs, want 5", len(seen))
		}
	})

	t.Run("RenewKeepsLeaseAlive", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		const ttl = 300 * time.Millisecond
		l := mustClaim(t, s, newOwner("runner"), "run-1", ttl)
		renewed, lost, err := s.RenewLeases(bg, []store.Lease{l}, longTTL)
		if err != nil {
			t.Fatalf("RenewLeases: %v", err)
		}
		if len(lost) != 0 || len(renewed) != 1 || renewed[0] != l {
			t.Fatalf("RenewLeases of a live lease returned renewed %+v, lost %+v; want it renewed", renewed, lost)
		}
		time.Sleep(2 * ttl)
		mustNotClaim(t, s, "past the original ttl of a renewed lease")
		if _, err := s.Commit(bg, l, store.Write{Events: []api.Event{ev("Still", "mine")}}); err != nil {
			t.Errorf("Commit with a renewed lease past its original ttl: %v, want success", err)
		}
	})

	t.Run("RenewReturnsStaleLeases", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		owner := newOwner("runner")
		mustCreateRun(t, s, "kept")
		kept := mustClaim(t, s, owner, "kept", longTTL)
		mustCreateRun(t, s, "taken")
		taken := mustClaim(t, s, owner, "taken", shortTTL)
		time.Sleep(3 * shortTTL)
		thief := eventuallyClaim(t, s, newOwner("thief"), "taken", longTTL)
		if thief.Generation <= taken.Generation {
			t.Fatalf("re-claim generation %d, want > %d", thief.Generation, taken.Generation)
		}
		renewed, lost, err := s.RenewLeases(bg, []store.Lease{kept, taken}, longTTL)
		if err != nil {
			t.Fatalf("RenewLeases: %v", err)
		}
		if len(lost) != 1 || lost[0].Run != "taken" || lost[0].Generation != taken.Generation {
			t.Errorf("RenewLeases returned lost %+v, want exactly the stale lease on %q (gen %d)", lost, "taken", taken.Generation)
		}
		if len(renewed) != 1 || renewed[0] != kept {
			t.Errorf("RenewLeases returned renewed %+v, want exactly the live lease on %q", renewed, "kept")
		}
		// The renewal of the stale lease must not have touched the new owner's lease.
		if _, err := s.Commit(bg, thief, store.Write{Events: []api.Event{ev("Mine", "")}}); err != nil {
			t.Errorf("Commit by the new owner after the old owner's renewal attempt: %v, want success", err)
		}
		if _, err := s.Commit(bg, kept, store.Write{Events: []api.Event{ev("Mine", "")}}); err != nil {
			t.Errorf("Commit with the renewed live lease: %v, want success", err)
		}
	})
}

func testFencing(t *testing.T, open opener) {
	// stolen sets up run-1 claimed by a first owner whose lease ran out and was re-claimed.
	stolen := func(t *testing.T, s store.Store) (old, cur store.Lease) {
		t.Helper()
		mustCreateRun(t, s, "run-1")
		old = mustClaim(t, s, newOwner("old"), "run-1", shortTTL)
		time.Sleep(3 * shortTTL)
		cur = eventuallyClaim(t, s, newOwner("new"), "run-1", longTTL)
		if cur.Generation <= old.Generation {
			t.Fatalf("re-claim generation %d, want > %d", cur.Generation, old.Generation)
		}
		return old, cur
	}

	t.Run("StaleCommitAppliesNothing", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		old, _ := stolen(t, s)
		before := mustGetRun(t, s, "run-1")
		past := time.Now().Add(-time.Second)
		_, err := s.Commit(bg, old, store.Write{
			Steps:   []api.Step{startedStep("s1", 1)},
			Events:  []api.Event{ev("StepStarted", "s1"), ev("Note", "stale")},
			Status:  &api.AgentRunStatus{Phase: api.PhaseFailed, Reason: api.ReasonInternalError, Message: "stale writer"},
			Release: true,
			WakeAt:  &past,
		})
		wantErr(t, "Commit with a stale lease", err, store.ErrFenced)
		if steps := mustListSteps(t, s, "run-1"); len(steps) != 0 {
			t.Errorf("after a fenced Commit, ListSteps = %s, want none", js(steps))
		}
		if evs := mustListEvents(t, s, "run-1", 0, 0); len(evs) != 0 {
			t.Errorf("after a fenced Commit, ListEvents = %s, want none", js(evs))
		}
		after := mustGetRun(t, s, "run-1")
		checkStatus(t, "GetRun after a fenced Commit", after.Status, before.Status)
		if names := listRunNames(t, s, store.RunFilter{Phase: api.PhaseFailed}); len(names) != 0 {
			t.Errorf("after a fenced Commit, ListRuns(phase Failed) = %v, want none", names)
		}
		mustNotClaim(t, s, "a fenced Commit with Release must not release the new owner's lease")
	})

	// A stale lease writes none of a commit's steps, however many (in PostgreSQL they all ride
	// in the fence statement), nor its files.
	t.Run("StaleManyStepsApplyNothing", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		old, cur := stolen(t, s)
		mustCommit(t, s, cur, store.Write{Steps: []api.Step{startedStep("a", 1)}})
		_, err := s.Commit(bg, old, store.Write{Steps: []api.Step{
			completedStep("a", 1, `"stale"`, 0), startedStep("b", 1), completedStep("b", 1, `"stale"`, 0), startedStep("c", 1),
		}, Events: []api.Event{ev("StepCompleted", "a")}, Files: []store.FileWrite{{Path: "x.txt", Content: []byte("x"), Mode: 0o644}}})
		if !errIs(err, store.ErrFenced) {
			t.Fatalf("Commit under a stale lease: err = %v, want ErrFenced", err)
		}
		if steps := mustListSteps(t, s, "run-1"); len(steps) != 1 || steps[0].State != api.StepStarted {
			t.Fatalf("after a fenced commit, ListSteps = %s, want only a, Started", js(steps))
		}
		if files, _ := s.ListFiles(bg, "run-1"); len(files) != 0 {
			t.Errorf("after a fenced commit, %d files saved, want none", len(files))
		}
	})

	t.Run("StaleCompleteAppliesNothing", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		old := mustClaim(t, s, newOwner("old"), "run-1", shortTTL)
		mustCommit(t, s, old, store.Write{Steps: []api.Step{startedStep("s1", 1)}})
		time.Sleep(3 * shortTTL)
		cur := eventuallyClaim(t, s, newOwner("new"), "run-1", longTTL)
		_, err := s.Commit(bg, old, store.Write{Steps: []api.Step{completedStep("s1", 1, `{"ok":true}`, 5)}})
		wantErr(t, "Commit(Completed) with a stale lease", err, store.ErrFenced)
		st := findStep(t, mustListSteps(t, s, "run-1"), "s1")
		if st.State != api.StepStarted || len(st.Result) != 0 || st.CostMicros != nil {
			t.Errorf("after a fenced Completed, step s1 = %s, want still Started with no result or cost", js(st))
		}
		mustCommit(t, s, cur, store.Write{Steps: []api.Step{completedStep("s1", 1, `{"ok":"new"}`, 7)}})
	})

	t.Run("CommitAfterReleaseFenced", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		release(t, s, l, nil)
		_, err := s.Commit(bg, l, store.Write{Events: []api.Event{ev("Late", "")}, Steps: []api.Step{startedStep("late", 1)}})
		wantErr(t, "Commit with a lease already released", err, store.ErrFenced)
		if evs := mustListEvents(t, s, "run-1", 0, 0); len(evs) != 0 {
			t.Errorf("after a Commit on a released lease, ListEvents = %s, want none", js(evs))
		}
		if steps := mustListSteps(t, s, "run-1"); len(steps) != 0 {
			t.Errorf("after a Commit on a released lease, ListSteps = %s, want none", js(steps))
		}
	})

	t.Run("LiveCommitAppliesAll", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		_, cur := stolen(t, s)
		status := api.AgentRunStatus{Phase: api.PhaseRunning, AgentRevision: 1, Runner: cur.Owner}
		mustCommit(t, s, cur, store.Write{
			Steps:  []api.Step{startedStep("s1", 1), startedStep("s2", 1)},
			Events: []api.Event{ev("StepStarted", "s1"), ev("StepStarted", "s2")},
			Status: &status,
		})
		steps := mustListSteps(t, s, "run-1")
		if len(steps) != 2 {
			t.Errorf("after a live Commit of 2 steps, ListSteps = %s, want 2 steps", js(steps))
		}
		if evs := mustListEvents(t, s, "run-1", 0, 0); !sameValue(eventSeqs(evs), []int64{1, 2}) {
			t.Errorf("after a live Commit of 2 events, event seqs = %v, want [1 2]", eventSeqs(evs))
		}
		got := mustGetRun(t, s, "run-1")
		if got.Status.Phase != api.PhaseRunning {
			t.Errorf("after a live Commit, status.phase = %q, want %q", got.Status.Phase, api.PhaseRunning)
		}
		if names := listRunNames(t, s, store.RunFilter{Phase: api.PhaseRunning}); !sameValue(names, []string{"run-1"}) {
			t.Errorf("ListRuns(phase Running) = %v, want [run-1]", names)
		}
	})

	// A backend that commits concurrent writes of different runs together (group commit) must
	// keep each write's fence its own: the stale one applies nothing, its neighbours apply all.
	// The writes are sent together from many goroutines, round after round, so that they wait
	// for the same commit; a backend-specific test may force them into one batch.
	t.Run("StaleNeighbourInBatch", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		old, _ := stolen(t, s)
		mustCreateRun(t, s, "run-2")
		fresh := mustClaim(t, s, newOwner("fresh"), "run-2", longTTL)
		before := mustGetRun(t, s, "run-1")
		const rounds, width = 10, 4
		for round := 0; round < rounds; round++ {
			start := make(chan struct{})
			errs := make(chan error, 2*width)
			for i := 0; i < width; i++ {
				key := fmt.Sprintf("s%d-%d", round, i)
				for _, l := range []store.Lease{old, fresh} {
					go func() {
						<-start
						st := api.AgentRunStatus{Phase: api.PhaseRunning, Message: key}
						_, err := s.Commit(bg, l, store.Write{
							Steps:  []api.Step{startedStep(key, 1)},
							Events: []api.Event{ev("StepStarted", key)},
							Status: &st,
							Files:  []store.FileWrite{{Path: key, Content: []byte(key), Mode: 0o644}},
						})
						if l.Run == old.Run {
							if !errors.Is(err, store.ErrFenced) {
								err = fmt.Errorf("stale %s: got %v, want ErrFenced", key, err)
							} else {
								err = nil
							}
						} else if err != nil {
							err = fmt.Errorf("live %s: %w", key, err)
						}
						errs <- err
					}()
				}
			}
			close(start)
			for i := 0; i < 2*width; i++ {
				if err := <-errs; err != nil {
					t.Errorf("round %d: %v", round, err)
				}
			}
		}
		if steps := mustListSteps(t, s, "run-2"); len(steps) != rounds*width {
			t.Errorf("live run: %d steps, want %d", len(steps), rounds*width)
		}
		evs := mustListEvents(t, s, "run-2", 0, 0)
		want := make([]int64, rounds*width)
		for i := range want {
			want[i] = int64(i + 1)
		}
		if !sameValue(eventSeqs(evs), want) {
			t.Errorf("live run: event seqs %v, want 1..%d", eventSeqs(evs), rounds*width)
		}
		if files, err := s.ListFiles(bg, "run-2"); err != nil || len(files) != rounds*width {
			t.Errorf("live run: ListFiles = %d files, %v; want %d", len(files), err, rounds*width)
		}
		if steps := mustListSteps(t, s, "run-1"); len(steps) != 0 {
			t.Errorf("stale run: ListSteps = %s, want none", js(steps))
		}
		if evs := mustListEvents(t, s, "run-1", 0, 0); len(evs) != 0 {
			t.Errorf("stale run: ListEvents = %s, want none", js(evs))
		}
		if files, err := s.ListFiles(bg, "run-1"); err != nil || len(files) != 0 {
			t.Errorf("stale run: ListFiles = %d files, %v; want none", len(files), err)
		}
		checkStatus(t, "stale run after fenced commits", mustGetRun(t, s, "run-1").Status, before.Status)
		mustCommit(t, s, fresh, store.Write{Release: true})
	})
}
