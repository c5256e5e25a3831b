package journal_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/store"
)

// aheadStore is the test's SQLite store with CommitAhead as a group committer offers it: a write
// handed over waits until a committer takes it (take: the test's, or Wait's), and until then the
// next write can join it. fail, when set, is the taken write's outcome instead of its commit.
type aheadStore struct {
	*countingStore
	mu   sync.Mutex
	q    *queued
	fail error
}

type queued struct {
	s     *aheadStore
	ctx   context.Context
	l     store.Lease
	w     store.Write
	taken bool
	err   error
	sig   store.Signals
}

func (a *aheadStore) CommitAhead(ctx context.Context, l store.Lease, w store.Write) store.Pending {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.q = &queued{s: a, ctx: ctx, l: l, w: w}
	return a.q
}

func (q *queued) Join(next store.Write) bool {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	if q.taken {
		return false
	}
	q.w = q.w.Then(next)
	return true
}

// take is a committer taking the queued write and committing it (or failing it).
func (q *queued) take() {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	if q.taken {
		return
	}
	q.taken = true
	if q.s.fail != nil {
		q.err = q.s.fail
		return
	}
	q.sig, q.err = q.s.countingStore.Commit(q.ctx, q.l, q.w)
}

func (q *queued) Wait() (store.Signals, error) {
	q.take()
	return q.sig, q.err
}

func (h *harness) openAhead() (*journal.Journal, *aheadStore) {
	h.t.Helper()
	as := &aheadStore{countingStore: &countingStore{Store: h.st}}
	j, err := journal.Open(bg, as, h.lease)
	if err != nil {
		h.t.Fatalf("journal.Open: %v", err)
	}
	return j, as
}

func aheadReply(key string) journal.Spec {
	return journal.Spec{Key: key, Kind: api.StepKindModel, Title: "model call", Args: map[string]int{"messages": 1}, Safe: true, Ahead: true}
}

// A reply's end sent ahead and not yet taken is joined by the next commit: a reply, a read and
// the next call cost two commits (the reply's intent, then one for the rest), and the store has
// the reply and the read before the next call's effect; one taken first is waited for, and the
// next commit goes on its own after it.
func TestAheadEndJoinsOrIsWaitedFor(t *testing.T) {
	for _, taken := range []bool{false, true} {
		h := newHarness(t)
		j, as := h.openAhead()
		if _, err := j.Do(bg, aheadReply("t0/model"), func(context.Context) (any, *int64, error) { return "call ls", nil, nil }); err != nil {
			t.Fatalf("reply: %v", err)
		}
		if s := h.step("t0/model"); s.State != api.StepStarted || as.commits != 1 {
			t.Errorf("with the reply's end queued the store has t0/model %s after %d commits, want Started after 1", s.State, as.commits)
		}
		if _, err := j.Do(bg, heldRead("t0/tool/0"), func(context.Context) (any, *int64, error) { return "a.txt", nil, nil }); err != nil {
			t.Fatalf("read: %v", err)
		}
		if taken {
			as.q.take()
		}
		nextModelCall(t, h, j, "t0/model", "t0/tool/0")
		want := 3 // the reply's intent, the joined write, the next call's end
		if taken {
			want = 4
		}
		if as.commits != want {
			t.Errorf("taken first %v: %d commits, want %d", taken, as.commits, want)
		}
		evs := h.events()
		if done, read, next := slices.Index(evs, "step.completed t0/model"), slices.Index(evs, "step.completed t0/tool/0"), slices.Index(evs, "step.started t1/model"); done < 0 || read < done || next < read {
			t.Errorf("taken first %v: events %v, want the reply's end, the read's, then t1/model's start", taken, evs)
		}
	}
}

// A reply's end sent ahead that fails (the connection lost) is the error of the commit that
// finds it, and what came after it (the held read, its events) is dropped with it: the run's
// next write (its finish) records neither, and the store has the reply Started, to be made again.
func TestAheadEndFailedDropsWhatCameAfter(t *testing.T) {
	for _, taken := range []bool{false, true} {
		aheadEndFailed(t, taken)
	}
}

func aheadEndFailed(t *testing.T, takenFirst bool) {
	h := newHarness(t)
	j, as := h.openAhead()
	if _, err := j.Do(bg, aheadReply("t0/model"), func(context.Context) (any, *int64, error) { return "call ls", nil, nil }); err != nil {
		t.Fatalf("reply: %v", err)
	}
	if _, err := j.Do(bg, heldRead("t0/tool/0"), func(context.Context) (any, *int64, error) { return "a.txt", nil, nil }); err != nil {
		t.Fatalf("read: %v", err)
	}
	lost := errors.New("connection lost")
	as.fail = lost
	if takenFirst {
		as.q.take() // failed before the next commit could join it
	}
	next := journal.Spec{Key: "t1/model", Kind: api.StepKindModel, Title: "model call", Args: map[string]int{"messages": 3}, Safe: true}
	if _, err := j.Do(bg, next, func(context.Context) (any, *int64, error) {
		t.Error("the next call ran after the reply's end was lost")
		return nil, nil, nil
	}); !errors.Is(err, lost) {
		t.Fatalf("next call: %v, want %v", err, lost)
	}
	if _, err := j.Commit(bg, &api.AgentRunStatus{Phase: api.PhaseFailed, AgentRevision: 1}, true, nil); err != nil {
		t.Fatalf("finish: %v", err)
	}
	steps, err := h.st.ListSteps(bg, h.run)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if s.Key != "t0/model" || s.State != api.StepStarted {
			t.Errorf("taken first %v: after the lost end the store has %s %s, want only t0/model Started", takenFirst, s.Key, s.State)
		}
	}
	if evs := h.events(); slices.Contains(evs, "step.started t0/tool/0") || slices.Contains(evs, "step.completed t0/model") {
		t.Errorf("taken first %v: events %v carry steps the store does not have", takenFirst, evs)
	}
}
