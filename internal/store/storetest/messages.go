package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// finish claims run (the only claimable run) and commits a terminal phase with a release.
func finish(t *testing.T, s store.Store, run string, phase api.Phase) {
	t.Helper()
	l := mustClaim(t, s, newOwner("runner"), run, longTTL)
	mustCommit(t, s, l, store.Write{
		Status:  &api.AgentRunStatus{Phase: phase, Reason: api.ReasonCompleted, AgentRevision: 1},
		Release: true,
	})
	if got := mustGetRun(t, s, run); got.Status.Phase != phase {
		t.Fatalf("after Commit of phase %s, GetRun status.phase = %q", phase, got.Status.Phase)
	}
}

func testMessages(t *testing.T, open opener) {
	t.Run("SeqsIncrease", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		var last int64
		for i := 0; i < 4; i++ {
			payload := fmt.Sprintf("message %d", i)
			m, created, err := s.AddMessage(bg, "run-1", "", payload)
			if err != nil {
				t.Fatalf("AddMessage #%d: %v", i, err)
			}
			if !created {
				t.Errorf("AddMessage #%d without key: created = false, want true", i)
			}
			if m.Seq <= last {
				t.Errorf("AddMessage #%d: seq %d, want > %d", i, m.Seq, last)
			}
			if m.Payload != payload {
				t.Errorf("AddMessage #%d: payload %q, want %q", i, m.Payload, payload)
			}
			if m.Time.IsZero() {
				t.Errorf("AddMessage #%d: time is zero, want set", i)
			}
			last = m.Seq
		}
		msgs, err := s.ListMessages(bg, "run-1", 0)
		if err != nil {
			t.Fatalf("ListMessages: %v", err)
		}
		if len(msgs) != 4 {
			t.Fatalf("ListMessages = %s, want 4 messages", js(msgs))
		}
		for i, m := range msgs {
			if want := fmt.Sprintf("message %d", i); m.Payload != want {
				t.Errorf("ListMessages[%d].payload = %q, want %q (in order)", i, m.Payload, want)
			}
			if i > 0 && m.Seq <= msgs[i-1].Seq {
				t.Errorf("ListMessages seqs %d then %d, want increasing", msgs[i-1].Seq, m.Seq)
			}
		}
	})

	t.Run("IdempotentKey", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		mustCreateRun(t, s, "run-2")
		first, created, err := s.AddMessage(bg, "run-1", "key-1", "first")
		if err != nil || !created {
			t.Fatalf("AddMessage(key-1, first) = created %v, err %v; want created", created, err)
		}
		if _, _, err := s.AddMessage(bg, "run-1", "", "between"); err != nil {
			t.Fatalf("AddMessage: %v", err)
		}
		again, created, err := s.AddMessage(bg, "run-1", "key-1", "second")
		if err != nil {
			t.Fatalf("AddMessage(key-1, second): %v", err)
		}
		if created {
			t.Errorf("AddMessage with a used key: created = true, want false")
		}
		if again.Seq != first.Seq || again.Payload != "first" || again.Key != "key-1" {
			t.Errorf("AddMessage with a used key = %s, want the first message %s", js(again), js(first))
		}
		msgs, err := s.ListMessages(bg, "run-1", 0)
		if err != nil {
			t.Fatalf("ListMessages: %v", err)
		}
		if len(msgs) != 2 {
			t.Errorf("ListMessages = %s, want 2 messages (the duplicate not stored)", js(msgs))
		}
		// Keys are per run.
		other, created, err := s.AddMessage(bg, "run-2", "key-1", "other run")
		if err != nil || !created || other.Payload != "other run" {
			t.Errorf("AddMessage(run-2, key-1) = %s, created %v, err %v; want a new message on run-2", js(other), created, err)
		}
	})

	t.Run("ListAfterSeq", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		var seqs []int64
		for i := 0; i < 5; i++ {
			m, _, err := s.AddMessage(bg, "run-1", fmt.Sprintf("k%d", i), fmt.Sprintf("p%d", i))
			if err != nil {
				t.Fatalf("AddMessage: %v", err)
			}
			seqs = append(seqs, m.Seq)
		}
		for i, after := range append([]int64{0}, seqs...) {
			msgs, err := s.ListMessages(bg, "run-1", after)
			if err != nil {
				t.Fatalf("ListMessages(after %d): %v", after, err)
			}
			var got []int64
			for _, m := range msgs {
				got = append(got, m.Seq)
			}
			if want := seqs[i:]; !slices.Equal(got, want) {
				t.Errorf("ListMessages(after %d) seqs = %v, want %v", after, got, want)
			}
		}
	})

	t.Run("FinishedRunRefuses", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		for _, phase := range []api.Phase{api.PhaseSucceeded, api.PhaseFailed, api.PhaseCancelled} {
			run := "run-" + string(phase)
			mustCreateRun(t, s, run)
			if _, _, err := s.AddMessage(bg, run, "early", "before the end"); err != nil {
				t.Fatalf("AddMessage(%s) while live: %v", run, err)
			}
			finish(t, s, run, phase)
			_, _, err := s.AddMessage(bg, run, "", "too late")
			wantErr(t, "AddMessage on a "+string(phase)+" run", err, store.ErrFinished)
			_, _, err = s.AddMessage(bg, run, "late", "too late")
			wantErr(t, "AddMessage with a key on a "+string(phase)+" run", err, store.ErrFinished)
			if msgs, err := s.ListMessages(bg, run, 0); err != nil || len(msgs) != 1 {
				t.Errorf("ListMessages(%s) = %s, %v; want only the message sent while live", run, js(msgs), err)
			}
		}
		mustNotClaim(t, s, "refused messages must not poke finished runs")
	})
}

func testCancel(t *testing.T, open opener) {
	t.Run("LiveRun", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		sig := mustCommit(t, s, l, store.Write{Events: []api.Event{ev("Working", "")}})
		if sig.CancelRequested {
			t.Errorf("Commit before any cancel: signals.cancelRequested = true, want false")
		}
		r, err := s.RequestCancel(bg, "run-1")
		if err != nil {
			t.Fatalf("RequestCancel: %v", err)
		}
		if r == nil || !r.Status.CancelRequested {
			t.Errorf("RequestCancel returned %s, want status.cancelRequested true", js(r))
		}
		if got := mustGetRun(t, s, "run-1"); !got.Status.CancelRequested {
			t.Errorf("GetRun after RequestCancel: status.cancelRequested = false, want true")
		}
		mustNotClaim(t, s, "a cancel request must not break a live lease")
		sig = release(t, s, l, nil)
		if !sig.CancelRequested {
			t.Errorf("Commit after RequestCancel: signals.cancelRequested = false, want true")
		}
		// The cancel poked the run: the next claimer finishes it.
		l2 := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		sig = mustCommit(t, s, l2, store.Write{Events: []api.Event{ev("Cancelling", "")}})
		if !sig.CancelRequested {
			t.Errorf("Commit by the next claimer: signals.cancelRequested = false, want true")
		}
		mustCommit(t, s, l2, store.Write{
			Status:  &api.AgentRunStatus{Phase: api.PhaseCancelled, Reason: api.ReasonUserCancelled, AgentRevision: 1, CancelRequested: true},
			Release: true,
		})
		_, err = s.RequestCancel(bg, "run-1")
		wantErr(t, "RequestCancel on a Cancelled run", err, store.ErrFinished)
		mustNotClaim(t, s, "a run released as Cancelled (the cancel's poke must not make a finished run claimable)")
	})

	t.Run("HolderFinishesCancelled", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		if _, err := s.RequestCancel(bg, "run-1"); err != nil {
			t.Fatalf("RequestCancel: %v", err)
		}
		sig := mustCommit(t, s, l, store.Write{
			Status:  &api.AgentRunStatus{Phase: api.PhaseCancelled, Reason: api.ReasonUserCancelled, AgentRevision: 1},
			Release: true,
		})
		if !sig.CancelRequested {
			t.Errorf("Commit after RequestCancel: signals.cancelRequested = false, want true")
		}
		if got := mustGetRun(t, s, "run-1"); got.Status.Phase != api.PhaseCancelled {
			t.Errorf("GetRun status.phase = %q, want Cancelled", got.Status.Phase)
		}
		mustNotClaim(t, s, "a run its lease holder released as Cancelled after a RequestCancel (finished runs are never claimable)")
	})

	t.Run("QueuedRun", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		if _, err := s.RequestCancel(bg, "run-1"); err != nil {
			t.Fatalf("RequestCancel on a queued run: %v", err)
		}
		if got := mustGetRun(t, s, "run-1"); !got.Status.CancelRequested {
			t.Errorf("GetRun after RequestCancel: status.cancelRequested = false, want true")
		}
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		if sig := mustCommit(t, s, l, store.Write{}); !sig.CancelRequested {
			t.Errorf("first Commit of a run cancelled while queued: signals.cancelRequested = false, want true")
		}
	})

	t.Run("ReleasedRunPoked", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		release(t, s, l, nil)
		mustNotClaim(t, s, "after Release with WakeAt nil")
		if _, err := s.RequestCancel(bg, "run-1"); err != nil {
			t.Fatalf("RequestCancel: %v", err)
		}
		mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
	})

	t.Run("FinishedRun", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		finish(t, s, "run-1", api.PhaseSucceeded)
		_, err := s.RequestCancel(bg, "run-1")
		wantErr(t, "RequestCancel on a Succeeded run", err, store.ErrFinished)
		if got := mustGetRun(t, s, "run-1"); got.Status.CancelRequested || got.Status.Phase != api.PhaseSucceeded {
			t.Errorf("after a refused cancel: phase %q cancelRequested %v, want Succeeded and false", got.Status.Phase, got.Status.CancelRequested)
		}
		mustNotClaim(t, s, "a refused cancel must not poke a finished run")
	})
}

func testResolveStep(t *testing.T, open opener) {
	// park runs run-1 to NeedsResolution on an interrupted step key and releases it.
	park := func(t *testing.T, s store.Store, run, key string) {
		t.Helper()
		mustCreateRun(t, s, run)
		l := mustClaim(t, s, newOwner("runner"), run, longTTL)
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep(key, 1)}})
		in := startedStep(key, 1)
		in.State = api.StepInterrupted
		mustCommit(t, s, l, store.Write{
			Steps: []api.Step{in},
			Status: &api.AgentRunStatus{
				Phase: api.PhaseNeedsResolution, Reason: api.ReasonInterrupted, AgentRevision: 1,
				WaitingOn: &api.WaitingOn{Kind: "resolution", StepKey: key},
			},
			Release: true,
		})
		mustNotClaim(t, s, "a run parked in NeedsResolution")
	}

	t.Run("Skip", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		park(t, s, "run-1", "tool-3")
		if err := s.ResolveStep(bg, "run-1", "tool-3", "skip", nil); err != nil {
			t.Fatalf("ResolveStep(skip): %v", err)
		}
		st := findStep(t, mustListSteps(t, s, "run-1"), "tool-3")
		if st.Resolution != "skip" {
			t.Errorf("step tool-3 resolution = %q, want %q", st.Resolution, "skip")
		}
		mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
	})

	t.Run("CompleteWithResult", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		park(t, s, "run-1", "tool-3")
		result := []byte(`{"exitCode":0,"stdout":"ok"}`)
		if err := s.ResolveStep(bg, "run-1", "tool-3", "complete", result); err != nil {
			t.Fatalf("ResolveStep(complete): %v", err)
		}
		st := findStep(t, mustListSteps(t, s, "run-1"), "tool-3")
		if st.Resolution != "complete" || !sameJSON(st.ResolutionResult, result) {
			t.Errorf("step tool-3 resolution %q result %s, want %q and %s", st.Resolution, st.ResolutionResult, "complete", result)
		}
		mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
	})

	t.Run("WrongStepNotWaiting", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		park(t, s, "run-1", "tool-3")
		wantErr(t, "ResolveStep on another step key", s.ResolveStep(bg, "run-1", "tool-4", "skip", nil), store.ErrNotWaiting)
		if st := findStep(t, mustListSteps(t, s, "run-1"), "tool-3"); st.Resolution != "" {
			t.Errorf("step tool-3 resolution = %q after a refused resolution, want empty", st.Resolution)
		}
		mustNotClaim(t, s, "a refused resolution must not poke")
	})

	t.Run("RunNotInNeedsResolution", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		mustCommit(t, s, l, store.Write{
			Steps: []api.Step{startedStep("tool-3", 1)},
			// Waiting on a question (not NeedsResolution, not an approval), even though it names the step.
			Status: &api.AgentRunStatus{
				Phase: api.PhaseWaiting, Reason: api.ReasonQuestion, AgentRevision: 1,
				WaitingOn: &api.WaitingOn{Kind: "question", StepKey: "tool-3"},
			},
			Release: true,
		})
		wantErr(t, "ResolveStep on a Waiting run", s.ResolveStep(bg, "run-1", "tool-3", "skip", nil), store.ErrNotWaiting)
		mustCreateRun(t, s, "run-2")
		wantErr(t, "ResolveStep on a Queued run", s.ResolveStep(bg, "run-2", "tool-3", "retry", nil), store.ErrNotWaiting)
	})
}

func testEvents(t *testing.T, open opener) {
	t.Run("SeqsAndPaging", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		mustCreateRun(t, s, "run-2")
		if err := s.AppendEvents(bg, "run-1", []api.Event{ev("Created", "e1"), ev("Queued", "e2")}); err != nil {
			t.Fatalf("AppendEvents: %v", err)
		}
		leases := claim(t, s, newOwner("runner"), longTTL)
		l, ok := leases["run-1"]
		if !ok {
			t.Fatalf("ClaimRuns claimed %v, want run-1 among them", leaseNames(leases))
		}
		data := json.RawMessage(`{"tool":"bash","n":2}`)
		e4 := ev("StepCompleted", "e4")
		e4.StepKey = "tool-1"
		e4.Data = data
		mustCommit(t, s, l, store.Write{Events: []api.Event{ev("StepStarted", "e3"), e4}})
		if err := s.AppendEvents(bg, "run-1", []api.Event{ev("Message", "e5")}); err != nil {
			t.Fatalf("AppendEvents: %v", err)
		}
		if err := s.AppendEvents(bg, "run-2", []api.Event{ev("Created", "other")}); err != nil {
			t.Fatalf("AppendEvents(run-2): %v", err)
		}

		all := mustListEvents(t, s, "run-1", 0, 0)
		if !sameValue(eventSeqs(all), []int64{1, 2, 3, 4, 5}) {
			t.Fatalf("ListEvents(run-1, 0, 0) seqs = %v, want [1 2 3 4 5]", eventSeqs(all))
		}
		for i, e := range all {
			if want := fmt.Sprintf("e%d", i+1); e.Message != want {
				t.Errorf("event seq %d message = %q, want %q (insertion order)", e.Seq, e.Message, want)
			}
			if e.Time.IsZero() {
				t.Errorf("event seq %d time is zero", e.Seq)
			}
		}
		if got := all[3]; got.Type != "StepCompleted" || got.StepKey != "tool-1" || !sameJSON(got.Data, data) {
			t.Errorf("event 4 = %s, want type StepCompleted stepKey tool-1 data %s", js(got), data)
		}
		if other := mustListEvents(t, s, "run-2", 0, 0); !sameValue(eventSeqs(other), []int64{1}) {
			t.Errorf("ListEvents(run-2) seqs = %v, want [1] (seqs are per run)", eventSeqs(other))
		}

		// Page through like an SSE client resuming from Last-Event-ID.
		var paged []int64
		after := int64(0)
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatalf("paging did not end; so far %v", paged)
			}
			page := mustListEvents(t, s, "run-1", after, 2)
			if len(page) > 2 {
				t.Fatalf("ListEvents(after %d, limit 2) returned %d events", after, len(page))
			}
			if len(page) == 0 {
				break
			}
			paged = append(paged, eventSeqs(page)...)
			after = page[len(page)-1].Seq
		}
		if !sameValue(paged, []int64{1, 2, 3, 4, 5}) {
			t.Errorf("paging with limit 2 gave seqs %v, want [1 2 3 4 5]", paged)
		}
		if got := mustListEvents(t, s, "run-1", 3, 0); !sameValue(eventSeqs(got), []int64{4, 5}) {
			t.Errorf("ListEvents(after 3, limit 0) seqs = %v, want [4 5]", eventSeqs(got))
		}
		if got := mustListEvents(t, s, "run-1", 5, 0); len(got) != 0 {
			t.Errorf("ListEvents(after 5) = %v, want none", eventSeqs(got))
		}
	})
}

func testStatus(t *testing.T, open opener) {
	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		mustCreateRun(t, s, "run-2")
		leases := claim(t, s, newOwner("runner"), longTTL)
		l, ok := leases["run-1"]
		if !ok {
			t.Fatalf("ClaimRuns claimed %v, want run-1 among them", leaseNames(leases))
		}
		waiting := api.AgentRunStatus{
			Phase: api.PhaseWaiting, Reason: api.ReasonQuestion, Message: "the agent asks", AgentRevision: 1,
			WaitingOn: &api.WaitingOn{Kind: "question", StepKey: "ask-1", Question: "Which branch?"},
			Cost:      &api.RunCost{TotalUSD: "0.012", LimitUSD: "1.00"},
			Turns:     []api.Turn{{Index: 0, Model: "claude-test", InputTokens: 100, OutputTokens: 20, CostUSD: "0.012"}},
		}
		mustCommit(t, s, l, store.Write{Status: &waiting})
		checkStatus(t, "GetRun after a Waiting commit", mustGetRun(t, s, "run-1").Status, waiting)
		if names := listRunNames(t, s, store.RunFilter{Phase: api.PhaseWaiting}); !sameValue(names, []string{"run-1"}) {
			t.Errorf("ListRuns(phase Waiting) = %v, want [run-1]", names)
		}
		if names := listRunNames(t, s, store.RunFilter{Phase: api.PhaseQueued}); !sameValue(names, []string{"run-2"}) {
			t.Errorf("ListRuns(phase Queued) = %v, want [run-2] (run-1 left Queued)", names)
		}

		done := api.AgentRunStatus{
			Phase: api.PhaseSucceeded, Reason: api.ReasonCompleted, AgentRevision: 1,
			Answer: &api.Answer{Preview: "main", Bytes: 4},
			Cost:   &api.RunCost{TotalUSD: "0.020"},
		}
		mustCommit(t, s, l, store.Write{Status: &done, Release: true})
		got := mustGetRun(t, s, "run-1")
		// Replaced, not merged: waitingOn and turns are gone.
		checkStatus(t, "GetRun after a Succeeded commit", got.Status, done)
		if names := listRunNames(t, s, store.RunFilter{Phase: api.PhaseSucceeded}); !sameValue(names, []string{"run-1"}) {
			t.Errorf("ListRuns(phase Succeeded) = %v, want [run-1]", names)
		}
		if names := listRunNames(t, s, store.RunFilter{Phase: api.PhaseWaiting}); len(names) != 0 {
			t.Errorf("ListRuns(phase Waiting) = %v, want none", names)
		}
		if runs, err := s.ListRuns(bg, store.RunFilter{Phase: api.PhaseSucceeded}); err == nil && len(runs) == 1 {
			checkStatus(t, "ListRuns item after a Succeeded commit", runs[0].Status, done)
		}
	})

	t.Run("CommitWithoutStatusKeepsIt", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		running := api.AgentRunStatus{Phase: api.PhaseRunning, AgentRevision: 1, Message: "working"}
		mustCommit(t, s, l, store.Write{Status: &running})
		mustCommit(t, s, l, store.Write{Events: []api.Event{ev("Note", "")}, Steps: []api.Step{startedStep("a", 1)}})
		checkStatus(t, "GetRun after a Commit without status", mustGetRun(t, s, "run-1").Status, running)
	})
}

func testRequeue(t *testing.T, open opener) {
	park := func(t *testing.T, s store.Store, run string, st api.AgentRunStatus) {
		t.Helper()
		mustCreateRun(t, s, run)
		l := mustClaim(t, s, newOwner("r"), run, longTTL)
		mustCommit(t, s, l, store.Write{Status: &st, Release: true})
	}
	t.Run("MessageRequeuesQuestion", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		park(t, s, "run-1", api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonQuestion, WaitingOn: &api.WaitingOn{Kind: "question", Question: "Which?"}})
		if _, _, err := s.AddMessage(bg, "run-1", "", "Europe"); err != nil {
			t.Fatal(err)
		}
		r := mustGetRun(t, s, "run-1")
		if r.Status.Phase != api.PhaseQueued || r.Status.WaitingOn != nil {
			t.Errorf("after the answer arrived: phase %s waitingOn %+v, want Queued and nothing waited on", r.Status.Phase, r.Status.WaitingOn)
		}
		if got := listRunNames(t, s, store.RunFilter{Phase: api.PhaseQueued}); len(got) != 1 {
			t.Errorf("ListRuns(Queued) = %v", got)
		}
	})
	t.Run("MessageRequeuesIdleKeepAlive", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		park(t, s, "run-1", api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonMessage})
		s.AddMessage(bg, "run-1", "k", "more")
		if r := mustGetRun(t, s, "run-1"); r.Status.Phase != api.PhaseQueued {
			t.Errorf("phase %s, want Queued", r.Status.Phase)
		}
	})
	t.Run("MessageLeavesOtherWaitsAndHolders", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-2")
		l := mustClaim(t, s, newOwner("r"), "run-2", longTTL)
		park(t, s, "run-1", api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonApproval})
		s.AddMessage(bg, "run-1", "", "hi")
		if r := mustGetRun(t, s, "run-1"); r.Status.Phase != api.PhaseWaiting || r.Status.Reason != api.ReasonApproval {
			t.Errorf("a message changed a run waiting on an approval: %s/%s", r.Status.Phase, r.Status.Reason)
		}
		st := api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonQuestion}
		mustCommit(t, s, l, store.Write{Status: &st})
		s.AddMessage(bg, "run-2", "", "hi")
		if r := mustGetRun(t, s, "run-2"); r.Status.Phase != api.PhaseWaiting {
			t.Errorf("a message rewrote the status of a run a runner holds: %s", r.Status.Phase)
		}
	})
	t.Run("ApprovalDecidedOnce", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("r"), "run-1", longTTL)
		key := "t0/tool/0/approval"
		st := api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonApproval, WaitingOn: &api.WaitingOn{Kind: "approval", StepKey: key}}
		mustCommit(t, s, l, store.Write{Steps: []api.Step{{Key: key, Kind: "approval", State: api.StepStarted, Attempt: 1, StartedAt: time.Now()}}, Status: &st, Release: true})
		if err := s.ResolveStep(bg, "run-1", "t0/tool/1/approval", "approve", nil); !errors.Is(err, store.ErrNotWaiting) {
			t.Errorf("approving another step: %v, want ErrNotWaiting", err)
		}
		if err := s.ResolveStep(bg, "run-1", key, "approve", []byte(`{"by":"person:admin"}`)); err != nil {
			t.Fatalf("approve: %v", err)
		}
		if r := mustGetRun(t, s, "run-1"); r.Status.Phase != api.PhaseQueued {
			t.Errorf("after approval: phase %s, want Queued", r.Status.Phase)
		}
		step := findStep(t, mustListSteps(t, s, "run-1"), key)
		if step.Resolution != "approve" || !sameJSON(step.ResolutionResult, []byte(`{"by":"person:admin"}`)) {
			t.Errorf("step resolution %q %s", step.Resolution, step.ResolutionResult)
		}
		if err := s.ResolveStep(bg, "run-1", key, "deny", nil); !errors.Is(err, store.ErrNotWaiting) {
			t.Errorf("a second decision: %v, want ErrNotWaiting", err)
		}
	})
	// A run parked waiting ModelKeyMissing with a retry an hour away is claimable at once after
	// PokeWaiting(ModelKeyMissing); a run waiting on something else, and one a runner holds, are
	// not touched.
	t.Run("PokeWaiting", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		later := time.Now().Add(time.Hour)
		for _, p := range []struct {
			run    string
			reason api.Reason
		}{{"run-key", api.ReasonModelKeyMissing}, {"run-question", api.ReasonQuestion}} {
			mustCreateRun(t, s, p.run)
			l := mustClaim(t, s, newOwner("r"), p.run, longTTL)
			mustCommit(t, s, l, store.Write{Status: &api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: p.reason}, Release: true, WakeAt: &later})
		}
		mustCreateRun(t, s, "run-held")
		held := mustClaim(t, s, newOwner("r"), "run-held", longTTL)
		mustCommit(t, s, held, store.Write{Status: &api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonModelKeyMissing}})
		mustNotClaim(t, s, "before the poke")
		n, err := s.PokeWaiting(bg, api.ReasonModelKeyMissing)
		if err != nil || n != 1 {
			t.Fatalf("PokeWaiting = %d, %v; want 1 run poked", n, err)
		}
		mustClaim(t, s, newOwner("r"), "run-key", longTTL)
		mustNotClaim(t, s, "after the poke and the claim of the poked run")
		if r := mustGetRun(t, s, "run-key"); r.Status.Phase != api.PhaseWaiting || r.Status.Reason != api.ReasonModelKeyMissing {
			t.Errorf("the poke changed the status: %s/%s", r.Status.Phase, r.Status.Reason)
		}
	})
	t.Run("ResolveRequeues", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("r"), "run-1", longTTL)
		st := api.AgentRunStatus{Phase: api.PhaseNeedsResolution, WaitingOn: &api.WaitingOn{Kind: "resolution", StepKey: "t0/tool/0"}}
		mustCommit(t, s, l, store.Write{Steps: []api.Step{{Key: "t0/tool/0", Kind: "tool", State: api.StepStarted, Attempt: 1, StartedAt: time.Now()}}, Status: &st, Release: true})
		if err := s.ResolveStep(bg, "run-1", "t0/tool/0", "retry", nil); err != nil {
			t.Fatal(err)
		}
		if r := mustGetRun(t, s, "run-1"); r.Status.Phase != api.PhaseQueued {
			t.Errorf("after a resolution: phase %s, want Queued", r.Status.Phase)
		}
	})
}
