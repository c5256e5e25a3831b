package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// Group commit. Every fenced commit of a Store goes through one goroutine (commitLoop): it takes
// the first waiting commit and every other one waiting at that moment, and sends them to
// PostgreSQL as one pipelined batch, one implicit transaction, one WAL flush. While that batch is
// in flight new commits queue up and form the next batch; a commit on an idle store goes out at
// once (there is no timed window). Each member keeps its own fence: its first statement locks its
// run row only if owner and generation still match, and every later statement of the member is
// conditioned on that same match (see fenceCond), so a stale lease makes its own member's
// statements do nothing and the batch reports that member fenced, while the others apply. A
// caller is answered only after the batch's commit returned.

// maxGroup bounds the commits sent in one batch (and so one transaction's length and locks).
const maxGroup = 128

// commitReq is one Commit waiting in the group committer.
type commitReq struct {
	ctx context.Context
	l   store.Lease
	w   store.Write

	// Set by the committer before done is closed.
	sig    store.Signals
	phase  string
	fenced bool
	err    error
	done   chan struct{}
}

// commitLoop owns the group commits until the store's life ends.
func (s *Store) commitLoop() {
	defer close(s.loopDone)
	for {
		var first *commitReq
		select {
		case first = <-s.commits:
		case <-s.life.Done():
			return
		}
		batch := []*commitReq{first}
	drain:
		for len(batch) < maxGroup {
			select {
			case r := <-s.commits:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		// Lock the run rows in name order, as RenewLeases does, so that a batch and a renewal
		// (or two batches) never wait on each other in a cycle: a deadlock is only found after
		// deadlock_timeout (1 s by default) and costs both a retry. Writes of one run keep their
		// order.
		sort.SliceStable(batch, func(i, j int) bool { return batch[i].l.Run < batch[j].l.Run })
		s.commitGroup(batch)
		for _, r := range batch {
			close(r.done)
		}
	}
}

// commitGroup commits batch and sets each member's outcome.
func (s *Store) commitGroup(batch []*commitReq) {
	ctx, cancel := s.groupContext(batch)
	err := s.commitMembers(ctx, batch)
	cancel()
	if err == nil || len(batch) == 1 || !statementFailed(err) {
		return
	}
	// A statement of one member failed (a step completed that was never started, say) and
	// aborted the implicit transaction, which therefore applied nothing: commit each member
	// alone, so that failure stays with its own write.
	for _, r := range batch {
		ctx, cancel := s.groupContext([]*commitReq{r})
		s.commitMembers(ctx, []*commitReq{r})
		cancel()
	}
}

// groupContext is the context of one batch: done when the store closes or when every member's
// own context is done (a single commit behaves as it would with its caller's context; a batch is
// not cut short because one of its callers gave up).
func (s *Store) groupContext(batch []*commitReq) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(s.life)
	var left atomic.Int64
	left.Store(int64(len(batch)))
	stops := make([]func() bool, len(batch))
	for i, r := range batch {
		stops[i] = context.AfterFunc(r.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// commitMembers sends the members' writes as one pipelined batch (retried as pipe retries it)
// and sets each member's outcome: fenced members get ErrFenced, and if the batch failed every
// member gets its error.
func (s *Store) commitMembers(ctx context.Context, members []*commitReq) error {
	err := s.pipe(ctx, func(b *pgx.Batch) {
		for _, r := range members {
			r.sig, r.phase, r.fenced, r.err = store.Signals{}, "", false, nil
			queueWrite(b, r)
		}
	})
	for _, r := range members {
		switch {
		case err != nil:
			r.err = err
		case r.fenced:
			r.err = store.ErrFenced
		}
	}
	return err
}

// queueWrite queues the statements of one member, fence first; each later statement applies
// only under the fence (fenceCond).
func queueWrite(b *pgx.Batch, r *commitReq) {
	l, w := r.l, r.w
	queueFence(b, l, w, func(cancel bool, poke int64, ph string) {
		r.sig.CancelRequested, r.sig.PokeSeq, r.phase = cancel, poke, ph
	}, func() { r.fenced = true })
	for _, st := range w.Steps {
		queueStep(b, l, st)
	}
	if len(w.Events) > 0 {
		queueRunnerEvents(b, l, w.Events)
	}
	queueFiles(b, l, w.Files)
	for _, c := range w.Charges {
		queueCharge(b, l, c)
	}
	if w.Release {
		queueRelease(b, l, w.WakeAt)
	}
}

// fenceCond is the condition every statement of a member after its fence carries: the run is
// still leased to owner $o at generation $g. When the fence statement matched, this transaction
// holds the run row's lock, so the condition stays true to the commit; when it did not, it can
// never become true again (a generation is never handed out twice), so every later statement of
// the member does nothing.
func fenceCond(o, g int) string {
	return fmt.Sprintf(`EXISTS (SELECT FROM runs WHERE name = $1 AND lease_owner = $%d AND lease_generation = $%d)`, o, g)
}

// statementFailed reports an error PostgreSQL returned for a statement (the implicit transaction
// rolled back and applied nothing), as opposed to a lost connection or an unknown outcome.
func statementFailed(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	return !strings.HasPrefix(pe.Code, "08") && !strings.HasPrefix(pe.Code, "57P") && !strings.HasPrefix(pe.Code, "53")
}

// afterCommit tells this store's waiters what a committed write changed.
func (s *Store) afterCommit(r *commitReq) {
	if r.w.Release && !api.Finished(r.phase) {
		s.wake.Poke()
	}
	if len(r.w.Events) > 0 {
		s.wake.Event()
		s.events.add(r.l.Run)
	}
}
