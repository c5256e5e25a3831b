package storetest

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

func testConcurrency(t *testing.T, open opener) {
	t.Run("RacingClaimsClaimEachRunOnce", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		const runs, owners = 50, 8
		for i := 0; i < runs; i++ {
			mustCreateRun(t, s, fmt.Sprintf("run-%02d", i))
		}
		var (
			mu     sync.Mutex
			byRun  = map[string][]store.Lease{}
			total  int
			wg     sync.WaitGroup
			start  = make(chan struct{})
			giveUp = time.Now().Add(10 * time.Second)
		)
		for o := 0; o < owners; o++ {
			owner := newOwner("racer")
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for {
					mu.Lock()
					done := total >= runs
					mu.Unlock()
					if done || time.Now().After(giveUp) {
						return
					}
					leases, err := s.ClaimRuns(bg, owner, 3, longTTL)
					if err != nil {
						t.Errorf("ClaimRuns(%s) racing: %v", owner, err)
						return
					}
					mu.Lock()
					for _, l := range leases {
						byRun[l.Run] = append(byRun[l.Run], l)
						total++
					}
					mu.Unlock()
				}
			}()
		}
		close(start)
		wg.Wait()
		if total != runs || len(byRun) != runs {
			t.Errorf("racing owners claimed %d leases on %d distinct runs, want %d on %d", total, len(byRun), runs, runs)
		}
		for run, ls := range byRun {
			if len(ls) != 1 {
				t.Errorf("run %s claimed %d times while leased: %+v, want once", run, len(ls), ls)
			} else if ls[0].Generation != 1 {
				t.Errorf("run %s claimed with generation %d, want 1", run, ls[0].Generation)
			}
		}
		mustNotClaim(t, s, "after every run was claimed with a long ttl")
	})

	t.Run("ConcurrentWritesToOneRun", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		const writers, each = 6, 15
		var wg sync.WaitGroup
		var mu sync.Mutex
		msgSeqs := map[int64]bool{}
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					m, _, err := s.AddMessage(bg, "run-1", "", fmt.Sprintf("w%d-%d", w, i))
					if err != nil {
						t.Errorf("AddMessage concurrently: %v", err)
						return
					}
					mu.Lock()
					if msgSeqs[m.Seq] {
						t.Errorf("two messages got seq %d", m.Seq)
					}
					msgSeqs[m.Seq] = true
					mu.Unlock()
					if err := s.AppendEvents(bg, "run-1", []api.Event{ev("Message", m.Payload)}); err != nil {
						t.Errorf("AppendEvents concurrently: %v", err)
						return
					}
				}
			}()
		}
		// The runner commits while the server writes.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				key := fmt.Sprintf("step-%d", i)
				if _, err := s.Commit(bg, l, store.Write{
					Steps:  []api.Step{startedStep(key, 1)},
					Events: []api.Event{ev("StepStarted", key)},
				}); err != nil {
					t.Errorf("Commit concurrently: %v", err)
					return
				}
			}
		}()
		wg.Wait()
		evs := mustListEvents(t, s, "run-1", 0, 0)
		want := writers*each + each
		if len(evs) != want {
			t.Errorf("ListEvents = %d events, want %d", len(evs), want)
		}
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Errorf("event %d has seq %d, want %d (seqs 1..n with no gaps or repeats)", i, e.Seq, i+1)
				break
			}
		}
		steps := mustListSteps(t, s, "run-1")
		var seqs []int64
		for _, st := range steps {
			seqs = append(seqs, st.Seq)
		}
		sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
		for i, q := range seqs {
			if q != int64(i+1) {
				t.Errorf("step seqs = %v, want 1..%d", seqs, each)
				break
			}
		}
		if len(msgSeqs) != writers*each {
			t.Errorf("%d distinct message seqs, want %d", len(msgSeqs), writers*each)
		}
	})
}

func testWaitWork(t *testing.T, open opener) {
	// returns runs f in a goroutine; the channel closes when f returns.
	returns := func(f func()) <-chan struct{} {
		done := make(chan struct{})
		go func() { defer close(done); f() }()
		return done
	}

	t.Run("ReturnsAfterD", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		select {
		case <-returns(func() { s.WaitWork(bg, 50*time.Millisecond) }):
		case <-time.After(patience):
			t.Fatalf("WaitWork(50ms) did not return within %v", patience)
		}
	})

	t.Run("ReturnsWhenContextEnds", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx, cancel := context.WithCancel(bg)
		done := returns(func() { s.WaitWork(ctx, time.Hour) })
		time.Sleep(50 * time.Millisecond)
		cancel()
		select {
		case <-done:
		case <-time.After(patience):
			t.Fatalf("WaitWork(1h) did not return within %v of its context ending", patience)
		}
	})

	t.Run("ReturnsOnCreateRun", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		done := returns(func() { s.WaitWork(bg, time.Hour) })
		deadline := time.After(patience)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-deadline:
				t.Fatalf("WaitWork(1h) did not return within %v while runs were being created", patience)
			case <-time.After(100 * time.Millisecond):
				mustCreateRun(t, s, fmt.Sprintf("run-%d", i))
			}
		}
	})

	t.Run("ReturnsOnPoke", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		release(t, s, l, nil)
		done := returns(func() { s.WaitWork(bg, time.Hour) })
		deadline := time.After(patience)
		for {
			select {
			case <-done:
				return
			case <-deadline:
				t.Fatalf("WaitWork(1h) did not return within %v while messages were being added", patience)
			case <-time.After(100 * time.Millisecond):
				if _, _, err := s.AddMessage(bg, "run-1", "", "wake"); err != nil {
					t.Fatalf("AddMessage: %v", err)
				}
			}
		}
	})
}
