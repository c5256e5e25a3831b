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
// finds it and of every later one of that journal (its drive's finish too), and what came after
// it (the held read, its events) is never written: the store has the reply Started, and the
// next drive makes the call again and goes on.
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
	if _, err := j.Commit(bg, &api.AgentRunStatus{Phase: api.PhaseFailed, AgentRevision: 1}, true, nil); !errors.Is(err, lost) {
		t.Errorf("the drive's finish after the lost end: %v, want %v", err, lost)
	}
	if err := j.Settle(bg); !errors.Is(err, lost) {
		t.Errorf("Settle after the lost end: %v, want %v", err, lost)
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
	j2 := h.open(h.takeOver())
	again := &effect{result: "call ls"}
	if out, err := j2.Do(bg, aheadReply("t0/model"), again.fn); err != nil || again.calls != 1 || string(out.Result) != `"call ls"` {
		t.Errorf("taken first %v: the next drive's t0/model: %+v, %v after %d calls, want it made again", takenFirst, out, err, again.calls)
	}
}

// A commit whose caller gave up (the runner stopping) is not joined to the write ahead: the
// write goes out alone when the drive settles, and no intent stands for an effect that never
// started.
func TestAheadEndNotJoinedByACallerThatGaveUp(t *testing.T) {
	h := newHarness(t)
	j, as := h.openAhead()
	if _, err := j.Do(bg, aheadReply("t0/model"), func(context.Context) (any, *int64, error) { return "call count", nil, nil }); err != nil {
		t.Fatalf("reply: %v", err)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	tool := journal.Spec{Key: "t0/tool/0", Kind: api.StepKindTool, Title: "count", Args: map[string]string{"label": "c1"}}
	if _, err := j.Do(ctx, tool, func(context.Context) (any, *int64, error) {
		t.Error("the tool ran for a caller that gave up")
		return nil, nil, nil
	}); !errors.Is(err, context.Canceled) {
		t.Fatalf("tool: %v, want context.Canceled", err)
	}
	if err := j.Settle(bg); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	if len(as.q.w.Steps) != 1 {
		t.Errorf("the write ahead went out with %d steps, want the reply's end alone", len(as.q.w.Steps))
	}
	for _, s := range mustSteps(t, h) {
		if s.Key != "t0/model" || s.State != api.StepCompleted {
			t.Errorf("the store has %s %s, want only t0/model Completed", s.Key, s.State)
		}
	}
}

func mustSteps(t *testing.T, h *harness) []api.Step {
	t.Helper()
	steps, err := h.st.ListSteps(bg, h.run)
	if err != nil {
		t.Fatal(err)
	}
	return steps
}
