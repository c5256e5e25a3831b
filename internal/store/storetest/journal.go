package storetest

import (
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

func testJournal(t *testing.T, open opener) {
	t.Run("StartedThenCompleted", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("a", 1)}})
		if steps := mustListSteps(t, s, "run-1"); len(steps) != 1 || steps[0].State != api.StepStarted {
			t.Errorf("after Started a, ListSteps = %s, want one Started step", js(steps))
		}
		mustCommit(t, s, l, store.Write{Steps: []api.Step{completedStep("a", 1, `{"output": "done", "n": 3}`, 1234)}})
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("b", 1), startedStep("c", 3)}})

		steps := mustListSteps(t, s, "run-1")
		if len(steps) != 3 {
			t.Fatalf("ListSteps = %s, want 3 steps (a, b, c)", js(steps))
		}
		for i, want := range []struct {
			key   string
			seq   int64
			state api.StepState
			att   int
		}{{"a", 1, api.StepCompleted, 1}, {"b", 2, api.StepStarted, 1}, {"c", 3, api.StepStarted, 3}} {
			st := steps[i]
			if st.Key != want.key || st.Seq != want.seq || st.State != want.state || st.Attempt != want.att {
				t.Errorf("ListSteps[%d] = key %q seq %d state %q attempt %d, want key %q seq %d state %q attempt %d",
					i, st.Key, st.Seq, st.State, st.Attempt, want.key, want.seq, want.state, want.att)
			}
		}
		a := steps[0]
		if !sameJSON(a.Result, []byte(`{"output":"done","n":3}`)) {
			t.Errorf("step a result = %s, want %s", a.Result, `{"output":"done","n":3}`)
		}
		if a.CostMicros == nil || *a.CostMicros != 1234 {
			t.Errorf("step a costMicros = %s, want 1234", js(a.CostMicros))
		}
		if a.CompletedAt == nil || a.CompletedAt.IsZero() {
			t.Errorf("step a completedAt = %v, want set", a.CompletedAt)
		}
		want := startedStep("a", 1)
		if a.Kind != want.Kind || a.Title != want.Title || a.ArgsHash != want.ArgsHash || !sameJSON(a.Args, want.Args) {
			t.Errorf("step a = kind %q title %q argsHash %q args %s, want %q %q %q %s",
				a.Kind, a.Title, a.ArgsHash, a.Args, want.Kind, want.Title, want.ArgsHash, want.Args)
		}
		if a.StartedAt.IsZero() {
			t.Errorf("step a startedAt is zero, want set")
		}
		if b := steps[1]; len(b.Result) != 0 || b.CostMicros != nil || b.CompletedAt != nil {
			t.Errorf("Started step b = %s, want no result, cost or completedAt", js(b))
		}
	})

	t.Run("CompletedWithoutCost", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("a", 1)}})
		done := completedStep("a", 1, `"plain"`, 0)
		done.CostMicros = nil
		mustCommit(t, s, l, store.Write{Steps: []api.Step{done}})
		a := findStep(t, mustListSteps(t, s, "run-1"), "a")
		if a.State != api.StepCompleted || a.CostMicros != nil || !sameJSON(a.Result, []byte(`"plain"`)) {
			t.Errorf("step a = %s, want Completed, result \"plain\", no costMicros", js(a))
		}
	})

	t.Run("StartedAndCompletedInOneCommit", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("m", 1), completedStep("m", 1, `{"r":1}`, 9)}})
		steps := mustListSteps(t, s, "run-1")
		if len(steps) != 1 || steps[0].State != api.StepCompleted || steps[0].Seq != 1 {
			t.Errorf("ListSteps = %s, want one Completed step with seq 1", js(steps))
		}
	})

	// One commit of a turn: the end of a step started before, a step started and ended at once,
	// a step restarted (it keeps its number) and new ones; the new steps take the next numbers in
	// the order of the write, and each row is as its last record in the write says.
	t.Run("ManyStepsInOneCommit", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("m1", 1), startedStep("old", 1)}})
		old := startedStep("old", 1)
		old.State, old.Error = api.StepInterrupted, "cut off"
		mustCommit(t, s, l, store.Write{Steps: []api.Step{old}})
		failed := startedStep("f", 1)
		failed.State, failed.Error = api.StepFailed, "no such file"
		mustCommit(t, s, l, store.Write{Steps: []api.Step{
			completedStep("m1", 1, `{"reply":1}`, 7),
			startedStep("r", 1), completedStep("r", 1, `"listing"`, 0),
			startedStep("old", 2), completedStep("old", 2, `"again"`, 0),
			startedStep("f", 1), failed,
			startedStep("m2", 1),
		}, Events: []api.Event{ev("StepCompleted", "m1"), ev("StepStarted", "m2")}})
		// A key recorded twice apart in one write.
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("x", 1), startedStep("y", 1), completedStep("x", 1, `"x"`, 0)}})
		steps := mustListSteps(t, s, "run-1")
		type row struct {
			key    string
			seq    int64
			state  api.StepState
			att    int
			result string
			err    string
		}
		want := []row{
			{"m1", 1, api.StepCompleted, 1, `{"reply":1}`, ""},
			{"old", 2, api.StepCompleted, 2, `"again"`, ""},
			{"r", 3, api.StepCompleted, 1, `"listing"`, ""},
			{"f", 4, api.StepFailed, 1, "", "no such file"},
			{"m2", 5, api.StepStarted, 1, "", ""},
			{"x", 6, api.StepCompleted, 1, `"x"`, ""},
			{"y", 7, api.StepStarted, 1, "", ""},
		}
		if len(steps) != len(want) {
			t.Fatalf("ListSteps = %s, want %d steps", js(steps), len(want))
		}
		for i, w := range want {
			st := steps[i]
			got := row{st.Key, st.Seq, st.State, st.Attempt, string(st.Result), st.Error}
			if got.result != "" && w.result != "" && sameJSON(st.Result, []byte(w.result)) {
				got.result = w.result
			}
			if got != w {
				t.Errorf("ListSteps[%d] = %+v, want %+v", i, got, w)
			}
		}
		for _, k := range []string{"r", "old", "x"} {
			if st := findStep(t, steps, k); st.CompletedAt == nil || st.StartedAt.IsZero() || st.Title != "step "+k || st.ArgsHash != "hash-"+k {
				t.Errorf("step %s = %s, want its start's title, hash and time and a completion time", k, js(st))
			}
		}
		if m2 := findStep(t, steps, "m2"); m2.CompletedAt != nil || m2.Result != nil || m2.CostMicros != nil {
			t.Errorf("Started step m2 = %s, want no result, cost or completedAt", js(m2))
		}
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("z", 1)}})
		if z := findStep(t, mustListSteps(t, s, "run-1"), "z"); z.Seq != 8 {
			t.Errorf("the next step's seq = %d, want 8", z.Seq)
		}
	})

	// A write with several steps (in PostgreSQL all in its fence statement) may end the lease,
	// and leaves every step written first.
	t.Run("ManyStepsReleased", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("a", 1)}})
		mustCommit(t, s, l, store.Write{Steps: []api.Step{
			completedStep("a", 1, `"done"`, 0), startedStep("b", 1), completedStep("b", 1, `"read"`, 0), startedStep("c", 1),
		}, Release: true, WakeAt: ptr(time.Now().Add(-time.Second)), Status: &api.AgentRunStatus{Phase: api.PhaseRunning, AgentRevision: 1}})
		steps := mustListSteps(t, s, "run-1")
		if len(steps) != 3 || steps[0].State != api.StepCompleted || steps[1].Key != "b" || steps[1].Seq != 2 ||
			steps[1].State != api.StepCompleted || steps[2].Key != "c" || steps[2].Seq != 3 {
			t.Fatalf("after a releasing commit, ListSteps = %s, want a and b Completed, c Started, seqs 1-3", js(steps))
		}
		if _, err := s.Commit(bg, l, store.Write{Steps: []api.Step{completedStep("c", 1, `1`, 0)}}); !errIs(err, store.ErrFenced) {
			t.Errorf("Commit after the lease ended: err = %v, want ErrFenced", err)
		}
		l2 := eventuallyClaim(t, s, newOwner("runner"), "run-1", longTTL)
		mustCommit(t, s, l2, store.Write{Steps: []api.Step{completedStep("c", 1, `1`, 0)}})
	})

	t.Run("CompletedWithoutStartedAppliesNothing", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		before := mustGetRun(t, s, "run-1")
		_, err := s.Commit(bg, l, store.Write{
			Steps:  []api.Step{startedStep("a", 1), completedStep("never-started", 1, `1`, 1)},
			Events: []api.Event{ev("StepStarted", "a")},
			Status: &api.AgentRunStatus{Phase: api.PhaseRunning, Message: "must not be written"},
			Files:  []store.FileWrite{{Path: "x.txt", Content: []byte("x"), Mode: 0o644}},
		})
		if err == nil || errIs(err, store.ErrFenced) {
			t.Fatalf("Commit of a Completed step that was never started: err = %v, want a non-fence error", err)
		}
		if steps := mustListSteps(t, s, "run-1"); len(steps) != 0 {
			t.Errorf("after a failed Commit, ListSteps = %s, want none", js(steps))
		}
		if evs := mustListEvents(t, s, "run-1", 0, 0); len(evs) != 0 {
			t.Errorf("after a failed Commit, ListEvents = %s, want none", js(evs))
		}
		if files, _ := s.ListFiles(bg, "run-1"); len(files) != 0 {
			t.Errorf("after a failed Commit, %d files saved, want none", len(files))
		}
		checkStatus(t, "GetRun after a failed Commit", mustGetRun(t, s, "run-1").Status, before.Status)
		// The lease still holds and the run's counters are untouched.
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("a", 1)}, Events: []api.Event{ev("StepStarted", "a")}})
		if steps := mustListSteps(t, s, "run-1"); len(steps) != 1 || steps[0].Seq != 1 {
			t.Errorf("ListSteps = %s, want step a with seq 1", js(steps))
		}
		if evs := mustListEvents(t, s, "run-1", 0, 0); !sameValue(eventSeqs(evs), []int64{1}) {
			t.Errorf("event seqs = %v, want [1]", eventSeqs(evs))
		}
	})

	t.Run("InterruptedUpdatesRow", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("x", 1)}})
		in := startedStep("x", 1)
		in.State = api.StepInterrupted
		in.Error = "interrupted by a crash"
		mustCommit(t, s, l, store.Write{Steps: []api.Step{in}})
		steps := mustListSteps(t, s, "run-1")
		if len(steps) != 1 || steps[0].State != api.StepInterrupted || steps[0].Error != in.Error || steps[0].Seq != 1 {
			t.Errorf("ListSteps = %s, want one Interrupted step, seq 1, error %q", js(steps), in.Error)
		}
	})

	t.Run("RestartAfterReclaimKeepsSeq", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l1 := mustClaim(t, s, newOwner("runner"), "run-1", shortTTL)
		mustCommit(t, s, l1, store.Write{Steps: []api.Step{startedStep("a", 1)}})
		mustCommit(t, s, l1, store.Write{Steps: []api.Step{completedStep("a", 1, `1`, 1), startedStep("b", 1)}})
		time.Sleep(3 * shortTTL) // the runner dies
		l2 := eventuallyClaim(t, s, newOwner("runner"), "run-1", longTTL)
		mustCommit(t, s, l2, store.Write{Steps: []api.Step{startedStep("b", 2)}})
		steps := mustListSteps(t, s, "run-1")
		if len(steps) != 2 {
			t.Fatalf("ListSteps = %s, want 2 steps", js(steps))
		}
		b := findStep(t, steps, "b")
		if b.Seq != 2 || b.Attempt != 2 || b.State != api.StepStarted {
			t.Errorf("re-Started step b = seq %d attempt %d state %q, want seq 2 attempt 2 Started", b.Seq, b.Attempt, b.State)
		}
		mustCommit(t, s, l2, store.Write{Steps: []api.Step{completedStep("b", 2, `"ok"`, 3), startedStep("c", 1)}})
		steps = mustListSteps(t, s, "run-1")
		b = findStep(t, steps, "b")
		if b.Seq != 2 || b.Attempt != 2 || b.State != api.StepCompleted || !sameJSON(b.Result, []byte(`"ok"`)) {
			t.Errorf("step b = %s, want seq 2 attempt 2 Completed result \"ok\"", js(b))
		}
		if c := findStep(t, steps, "c"); c.Seq != 3 {
			t.Errorf("step c seq = %d, want 3", c.Seq)
		}
		if a := findStep(t, steps, "a"); a.State != api.StepCompleted || a.Seq != 1 {
			t.Errorf("step a = %s, want Completed with seq 1 (untouched by the re-claim)", js(a))
		}
	})

	t.Run("SeqsPerRun", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		for _, run := range []string{"run-1", "run-2"} {
			mustCreateRun(t, s, run)
			l := mustClaim(t, s, newOwner("runner"), run, longTTL)
			mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("a", 1), startedStep("b", 1)}})
		}
		for _, run := range []string{"run-1", "run-2"} {
			steps := mustListSteps(t, s, run)
			var seqs []int64
			for _, st := range steps {
				seqs = append(seqs, st.Seq)
			}
			if !sameValue(seqs, []int64{1, 2}) {
				t.Errorf("%s: step seqs = %v, want [1 2] (seqs are per run)", run, seqs)
			}
		}
	})
}

func testReleaseAndWake(t *testing.T, open opener) {
	t.Run("ReleaseWithoutWakeNotClaimable", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		release(t, s, l, nil)
		mustNotClaim(t, s, "after Release with WakeAt nil")
		if _, _, err := s.AddMessage(bg, "run-1", "", "wake up"); err != nil {
			t.Fatalf("AddMessage: %v", err)
		}
		l2 := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		if l2.Generation <= l.Generation {
			t.Errorf("claim after poke: generation %d, want > %d", l2.Generation, l.Generation)
		}
	})

	t.Run("ReleaseWakeInPast", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		past := time.Now().Add(-time.Second)
		release(t, s, l, &past)
		mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
	})

	t.Run("ReleaseWakeInFuture", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		wake := time.Now().Add(700 * time.Millisecond)
		release(t, s, l, &wake)
		mustNotClaim(t, s, "before WakeAt")
		time.Sleep(time.Until(wake) + 50*time.Millisecond)
		eventuallyClaim(t, s, newOwner("runner"), "run-1", longTTL)
	})

	t.Run("PokeBeatsFutureWake", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		wake := time.Now().Add(time.Hour)
		release(t, s, l, &wake)
		mustNotClaim(t, s, "before WakeAt")
		if _, _, err := s.AddMessage(bg, "run-1", "", "now please"); err != nil {
			t.Fatalf("AddMessage: %v", err)
		}
		mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
	})

	t.Run("PokeDuringLease", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		if _, _, err := s.AddMessage(bg, "run-1", "", "while you work"); err != nil {
			t.Fatalf("AddMessage: %v", err)
		}
		mustNotClaim(t, s, "a poke while the lease is live")
		sig := release(t, s, l, nil)
		if sig.PokeSeq <= l.PokeSeq {
			t.Errorf("Commit signals pokeSeq %d after a poke, want > the lease's %d", sig.PokeSeq, l.PokeSeq)
		}
		mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
	})

	t.Run("PokeBeforeClaimIsConsumed", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		if _, _, err := s.AddMessage(bg, "run-1", "", "before the claim"); err != nil {
			t.Fatalf("AddMessage: %v", err)
		}
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		sig := release(t, s, l, nil)
		if sig.PokeSeq != l.PokeSeq {
			t.Errorf("Commit signals pokeSeq %d with no poke during the lease, want the lease's %d", sig.PokeSeq, l.PokeSeq)
		}
		mustNotClaim(t, s, "after Release with WakeAt nil, when the only poke came before the claim")
	})

	t.Run("FinishedNotClaimable", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		mustCommit(t, s, l, store.Write{
			Status:  &api.AgentRunStatus{Phase: api.PhaseSucceeded, Reason: api.ReasonCompleted, AgentRevision: 1},
			Release: true,
		})
		mustNotClaim(t, s, "a released Succeeded run")
	})

	t.Run("FinishedWithPokeDuringLeaseNotClaimable", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		// A message arrives while the runner is finishing the run.
		if _, _, err := s.AddMessage(bg, "run-1", "", "one more thing"); err != nil {
			t.Fatalf("AddMessage: %v", err)
		}
		mustCommit(t, s, l, store.Write{
			Status:  &api.AgentRunStatus{Phase: api.PhaseSucceeded, Reason: api.ReasonCompleted, AgentRevision: 1},
			Release: true,
		})
		mustNotClaim(t, s, "a Succeeded run released after a poke during its lease (finished runs are never claimable)")
	})
}
