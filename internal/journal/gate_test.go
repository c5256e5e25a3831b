package journal_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/store"
)

// With a gate, effects of several goroutines run at once while each stays its own step: n
// effects each wait until all n have started, which only ends if they overlap (one at a time
// they never would, and the wait gives up with an error after a minute rather than hang).
func TestGateEffectsOverlap(t *testing.T) {
	h := newHarness(t)
	j := h.open(h.lease)
	var mu sync.Mutex
	j.Gate(&mu)
	const n = 8
	var started sync.WaitGroup
	started.Add(n)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			_, errs[i] = j.Do(bg, journal.Spec{Key: fmt.Sprintf("wf/m[%d]", i), Kind: "tool", Args: i, Concurrent: true},
				func(ctx context.Context) (any, *int64, error) {
					started.Done()
					select {
					case <-all:
						return i * 10, nil, nil
					case <-time.After(time.Minute):
						return nil, nil, errors.New("the other effects never started while this one ran")
					}
				})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("effect %d: %v", i, err)
		}
	}
	steps, err := h.st.ListSteps(bg, h.run)
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]string{}
	for _, s := range steps {
		if s.State == api.StepCompleted {
			done[s.Key] = string(s.Result)
		}
	}
	for i := range n {
		if got, want := done[fmt.Sprintf("wf/m[%d]", i)], fmt.Sprint(i*10); got != want {
			t.Errorf("step wf/m[%d] result %q, want %q (all: %v)", i, got, want, done)
		}
	}
	// A replay answers each from the journal without running it.
	j2 := h.open(h.takeOver())
	for i := range n {
		out, err := j2.Do(bg, journal.Spec{Key: fmt.Sprintf("wf/m[%d]", i), Kind: "tool", Args: i, Concurrent: true},
			func(ctx context.Context) (any, *int64, error) {
				t.Errorf("effect %d ran again", i)
				return nil, nil, nil
			})
		if err != nil || !out.Replayed {
			t.Fatalf("replay of %d: %+v, %v", i, out, err)
		}
	}
}

// A commit that gives the lease back (a park) waits for the effects in flight to record their
// results, and no step starts after it.
func TestGateReleaseWaitsForEffects(t *testing.T) {
	h := newHarness(t)
	j := h.open(h.lease)
	var mu sync.Mutex
	j.Gate(&mu)
	running := make(chan struct{})
	finish := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var effErr error
	go func() {
		defer wg.Done()
		mu.Lock()
		defer mu.Unlock()
		_, effErr = j.Do(bg, journal.Spec{Key: "wf/a", Kind: "tool", Args: "a", Concurrent: true}, func(ctx context.Context) (any, *int64, error) {
			close(running)
			<-finish
			return "a done", nil, nil
		})
	}()
	<-running
	parked := make(chan error, 1)
	go func() {
		mu.Lock()
		defer mu.Unlock()
		_, err := j.Commit(bg, &api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonQuestion}, true, nil)
		parked <- err
	}()
	close(finish)
	if err := <-parked; err != nil {
		t.Fatalf("park: %v", err)
	}
	wg.Wait()
	if effErr != nil {
		t.Fatalf("the effect in flight: %v", effErr)
	}
	steps, _ := h.st.ListSteps(bg, h.run)
	if len(steps) != 1 || steps[0].State != api.StepCompleted || string(steps[0].Result) != `"a done"` {
		t.Fatalf("steps after the park: %+v; want wf/a completed before the lease went back", steps)
	}
	mu.Lock()
	_, err := j.Do(bg, journal.Spec{Key: "wf/b", Kind: "tool", Args: "b", Concurrent: true}, func(ctx context.Context) (any, *int64, error) {
		t.Error("a step started after the park")
		return nil, nil, nil
	})
	mu.Unlock()
	if !errors.Is(err, journal.ErrReleased) {
		t.Fatalf("a step after the park: %v, want ErrReleased", err)
	}
}

// recordingStore keeps every write the journal commits to the real store under it.
type recordingStore struct {
	journal.Store
	mu     sync.Mutex
	writes []store.Write
}

func (r *recordingStore) Commit(ctx context.Context, l store.Lease, w store.Write) (store.Signals, error) {
	r.mu.Lock()
	r.writes = append(r.writes, w)
	r.mu.Unlock()
	return r.Store.Commit(ctx, l, w)
}

// A park's own events go out in the park's write, not in the completion of an effect it waited
// for: the wait's webhook (store.RunOutbox) needs its event and its Waiting status in one write,
// and the timeline has the wait after the result.
func TestGateParkKeepsItsEventsForItsOwnWrite(t *testing.T) {
	h := newHarness(t)
	rs := &recordingStore{Store: h.st}
	j, err := journal.Open(bg, rs, h.lease)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	j.Gate(&mu)
	running, finish := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		mu.Lock()
		defer mu.Unlock()
		if _, err := j.Do(bg, journal.Spec{Key: "wf/each[0]", Kind: "tool", Args: 0, Concurrent: true}, func(ctx context.Context) (any, *int64, error) {
			close(running)
			<-finish
			return "done", nil, nil
		}); err != nil {
			t.Errorf("the effect in flight: %v", err)
		}
	}()
	<-running
	parked, emitted := make(chan error, 1), make(chan struct{})
	go func() {
		mu.Lock()
		defer mu.Unlock()
		j.Emit(api.Event{Type: api.EventRunQuestion, StepKey: "wf/ask", Message: "which one?"})
		close(emitted)
		_, err := j.Commit(bg, &api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonQuestion,
			WaitingOn: &api.WaitingOn{Kind: "question", StepKey: "wf/ask"}, AgentRevision: 1}, true, nil)
		parked <- err
	}()
	// The gate is free again only once the park waits for the effect (it holds the gate until
	// then): the effect finishes while the park, its event queued, waits.
	<-emitted
	mu.Lock()
	mu.Unlock() //nolint:staticcheck // an empty critical section: waiting for the park to wait
	close(finish)
	if err := <-parked; err != nil {
		t.Fatalf("park: %v", err)
	}
	wg.Wait()
	for _, w := range rs.writes {
		has := slices.ContainsFunc(w.Events, func(ev api.Event) bool { return ev.Type == api.EventRunQuestion })
		if has != w.Release {
			t.Errorf("a write (release %v, steps %d) carries run.question: %v; want it in the park's write only", w.Release, len(w.Steps), has)
		}
	}
	if evs := h.events(); slices.Index(evs, "run.question wf/ask") < slices.Index(evs, "step.completed wf/each[0]") {
		t.Errorf("timeline %v: want the question after the result it waited for", evs)
	}
	if outbox := store.RunOutbox(h.run, 0, rs.writes[len(rs.writes)-1], time.Now()); len(outbox) == 0 {
		t.Errorf("the park's write makes no run.waiting webhook")
	}
}
