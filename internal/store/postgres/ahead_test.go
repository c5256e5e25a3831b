package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/store"
)

// claimOne creates run name and leases it to owner.
func claimOne(t *testing.T, s *Store, owner, name string) store.Lease {
	t.Helper()
	ctx := context.Background()
	if err := s.CreateRun(ctx, &api.AgentRun{Metadata: api.ObjectMeta{Name: name}, Spec: api.AgentRunSpec{Agent: "a"}, Status: api.AgentRunStatus{Phase: api.PhaseQueued}}); err != nil {
		t.Fatalf("CreateRun %s: %v", name, err)
	}
	ls, err := s.ClaimRuns(ctx, owner, 10, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if l.Run == name {
			return l
		}
	}
	t.Fatalf("ClaimRuns(%s) = %v, want %s among them", owner, ls, name)
	return store.Lease{}
}

func stepsOf(t *testing.T, s *Store, run string) map[string]api.StepState {
	t.Helper()
	steps, err := s.ListSteps(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]api.StepState{}
	for _, st := range steps {
		out[st.Key] = st.State
	}
	return out
}

// The built-in loop's turn on the real group committer, with every committer held: the model
// reply's end goes ahead (Do returns at once, the store still has the call Started), the read
// after it is held, and the next call's intent joins the reply's write, so when the committers
// are let go one transaction carries the reply, the read and the intent, and the store has all
// three before the next call's effect runs. The status the reply wrote is in the store after it,
// as it was when the reply was handed over.
func TestCommitAheadJoinsTheNextWrite(t *testing.T) {
	h := newHeldStore(t)
	s, ctx := h.s, context.Background()
	lease := claimOne(t, s, "r", "run-a")
	j, err := journal.Open(ctx, s, lease)
	if err != nil {
		t.Fatal(err)
	}
	status := &api.AgentRunStatus{Phase: api.PhaseRunning, Message: "t0 answered"}
	reply := journal.Spec{Key: "t0/model", Kind: api.StepKindModel, Title: "model call", Args: map[string]int{"messages": 1}, Safe: true, Ahead: true,
		Status: func(json.RawMessage, *int64) (*api.AgentRunStatus, error) { return status, nil }}
	if _, err := j.Do(ctx, reply, func(context.Context) (any, *int64, error) {
		h.hold() // the intent is in; from here every committer waits on a locked row
		return "call ls", nil, nil
	}); err != nil {
		t.Fatalf("t0/model with the committers held: %v", err)
	}
	// The drive goes on changing its status while the committer has yet to encode the write:
	// the write keeps the status as the reply left it.
	want := status.Message
	status.Message = "changed after the hand-over"
	if got := stepsOf(t, s, "run-a")["t0/model"]; got != api.StepStarted {
		t.Errorf("with its end ahead and the committers held, the store has t0/model %q, want Started", got)
	}
	read := journal.Spec{Key: "t0/tool/0", Kind: api.StepKindTool, Title: "ls .", Args: map[string]string{"path": "."}, Safe: true, Brief: true, Held: true}
	if _, err := j.Do(ctx, read, func(context.Context) (any, *int64, error) { return "a.txt", nil, nil }); err != nil {
		t.Fatalf("read: %v", err)
	}
	var seen map[string]api.StepState
	var nextErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		next := journal.Spec{Key: "t1/model", Kind: api.StepKindModel, Title: "model call", Args: map[string]int{"messages": 3}, Safe: true}
		_, nextErr = j.Do(ctx, next, func(context.Context) (any, *int64, error) {
			seen = stepsOf(t, s, "run-a")
			return "done", nil, nil
		})
	}()
	// Joined: the queued write carries the reply's end, the read (intent and outcome) and the
	// next intent.
	waitFor(t, "the next call's intent joined to the reply's queued write", func() bool {
		s.ahead.mu.Lock()
		defer s.ahead.mu.Unlock()
		return len(s.ahead.reqs) == 1 && len(s.ahead.reqs[0].w.Steps) == 4
	})
	batches := h.release(wg.Wait)
	if nextErr != nil {
		t.Fatalf("t1/model: %v", nextErr)
	}
	for key, want := range map[string]api.StepState{"t0/model": api.StepCompleted, "t0/tool/0": api.StepCompleted, "t1/model": api.StepStarted} {
		if seen[key] != want {
			t.Errorf("during t1/model's effect the store has %s %q, want %q", key, seen[key], want)
		}
	}
	if batches != 2 {
		t.Errorf("after the hold the turn took %d batches, want 2: the reply, the read and the next intent in one, the next call's end in the other", batches)
	}
	r, err := s.GetRun(ctx, "run-a")
	if err != nil || r.Status.Message != want {
		t.Errorf("run status %+v (%v), want the one the reply wrote (%q)", r.Status, err, want)
	}
}

// A write a committer has taken is joined no more (the next goes on its own, after it); one
// under a stale lease is fenced as a Commit is; one still queued when the store closes is
// answered, not left waiting.
func TestCommitAheadOutcomes(t *testing.T) {
	h := newHeldStore(t)
	s, ctx := h.s, context.Background()
	lease := claimOne(t, s, "r", "run-b")
	p := s.CommitAhead(ctx, lease, store.Write{Events: []api.Event{{Type: "First"}}})
	if _, err := p.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if p.Join(store.Write{Events: []api.Event{{Type: "Late"}}}) {
		t.Error("Join succeeded on a write already committed")
	}
	stale := lease
	stale.Generation--
	if _, err := s.CommitAhead(ctx, stale, store.Write{Events: []api.Event{{Type: "Stale"}}}).Wait(); !errors.Is(err, store.ErrFenced) {
		t.Errorf("ahead under a stale lease: %v, want ErrFenced", err)
	}
	evs, err := s.ListEvents(ctx, "run-b", 0, 0)
	if err != nil || len(evs) != 1 || evs[0].Type != "First" {
		t.Errorf("run-b events %v (%v), want only First", evs, err)
	}

	h.hold()
	queued := s.CommitAhead(ctx, lease, store.Write{Events: []api.Event{{Type: "Queued"}}})
	closed := make(chan error, 1)
	go func() { _, err := queued.Wait(); closed <- err }()
	go s.Close()
	select {
	case err := <-closed:
		if err == nil || !strings.Contains(err.Error(), "store closed") {
			t.Errorf("a write queued when the store closed: %v, want store closed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a write queued when the store closed is still waiting")
	}
	h.tx.Rollback(context.Background())
}
