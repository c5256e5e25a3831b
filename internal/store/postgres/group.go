package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// Group commit. Every fenced commit of a Store goes through its committers (commitLoop, several
// goroutines, each with a connection of its own, commitPool): a committer takes the first waiting
// commit and every other one waiting at that moment, and sends them to PostgreSQL as one
// pipelined batch, one implicit transaction, one WAL flush. While the committers' batches are in
// flight new commits queue up and form the next batches; a commit on an idle store goes out at
// once (there is no timed window). Each member keeps its own fence: its first statement locks its
// run row only if owner and generation still match, and every later statement of the member is
// conditioned on that same match (see fenceCond), so a stale lease makes its own member's
// statements do nothing and the batch reports that member fenced, while the others apply. A
// caller is answered only after the batch's commit returned.
//
// The server's hot writes that are not under a lease (a run created with its first timeline
// events, timeline events appended, a message to a run: messages.go) join the same batches as ops
// (commitReq.op): each queues its own statements, which report its own outcome without failing
// the batch, so many API requests share one transaction and one WAL flush as a runner's commits
// do, and runs created together send one agentrun_work notification.
//
// Batches in flight at once never wait on each other in a cycle: each takes its run rows in name
// order (as RenewLeases does), and the credits account row, which charges lock, only after every
// run row (the store's lock order, credits.go).

// maxGroup bounds the commits sent in one batch (and so one transaction's length and locks).
const maxGroup = 128

// committers is how many batches a Store has in flight at once (and the connections of its
// commitPool). One batch at a time left PostgreSQL's second core and the WAL flush idle while a
// batch ran (a 1,000-run burn-down spent two thirds of its runs' time queued for the committer).
const committers = 4

// commitReq is one write waiting in the group committer: a runner's fenced write (l, w), or an op.
type commitReq struct {
	ctx context.Context
	l   store.Lease
	w   store.Write
	// op, when set, is a write under no lease, of the run named l.Run (which orders it in the
	// batch): it queues its statements, whose callbacks set err for this write alone (they must
	// not fail the batch). notifyWork: once the write committed, other stores are told that runs
	// may be claimable (notifyWorkSoon).
	op         func(b *pgx.Batch, r *commitReq)
	notifyWork bool
	// fencedWrite: a runner's Commit, whose waiters the committer tells once the batch committed
	// (afterBatch).
	fencedWrite bool
	// taken is set (under ahead.mu) once a committer took a write CommitAhead queued: from
	// then on nothing joins it (pending.Join).
	taken bool

	// Set by the committer before done is closed.
	sig    store.Signals
	phase  string
	fenced bool
	err    error
	done   chan struct{}
}

// submit hands req to a committer and waits for its batch to end: req.err is the write's outcome.
// Once a committer took the write it may commit, so the wait is not cut short by ctx (the batch's
// own context ends with its callers' contexts).
func (s *Store) submit(ctx context.Context, req *commitReq) error {
	req.done = make(chan struct{})
	s.waiting.Add(1)
	select {
	case s.commits <- req:
		s.waiting.Add(-1)
	case <-s.life.Done():
		s.waiting.Add(-1)
		return errors.New("store closed")
	case <-ctx.Done():
		s.waiting.Add(-1)
		return ctx.Err()
	}
	<-req.done
	return req.err
}

// aheadQueue holds the writes CommitAhead queued that no committer has taken yet, oldest first;
// kick wakes a committer for them.
type aheadQueue struct {
	mu   sync.Mutex
	reqs []*commitReq
	kick chan struct{}
}

// CommitAhead queues a fenced write for the group committer and returns at once; the write joins
// the next batch a committer forms (with the other writes waiting then) and, until one takes it,
// the drive's next write can join it (store.Pending). Per run a caller has at most one such write
// in flight and joins or waits for it before its next, so a run's writes keep their order.
func (s *Store) CommitAhead(ctx context.Context, l store.Lease, w store.Write) store.Pending {
	req := &commitReq{ctx: ctx, l: l, w: w, fencedWrite: true, done: make(chan struct{})}
	s.waiting.Add(1)
	s.ahead.mu.Lock()
	s.ahead.reqs = append(s.ahead.reqs, req)
	s.ahead.mu.Unlock()
	s.kickAhead()
	return &pending{s: s, req: req}
}

func (s *Store) kickAhead() {
	select {
	case s.ahead.kick <- struct{}{}:
	default:
	}
}

// takeAhead adds to batch, up to maxGroup, the queued CommitAhead writes, oldest first, and marks
// them taken; one whose caller's context is done is answered with that error and left out, as a
// Commit given up before a committer took it is. Writes left over (a full batch) wake another
// committer.
func (s *Store) takeAhead(batch []*commitReq) []*commitReq {
	s.ahead.mu.Lock()
	defer s.ahead.mu.Unlock()
	n := 0
	for _, r := range s.ahead.reqs {
		if len(batch) >= maxGroup {
			break
		}
		n++
		if r.taken {
			continue // answered already (the store closed under its waiter)
		}
		r.taken = true
		s.waiting.Add(-1)
		if s.life.Err() != nil {
			r.err = errors.New("store closed")
			close(r.done)
			continue
		}
		if err := r.ctx.Err(); err != nil {
			r.err = err
			close(r.done)
			continue
		}
		batch = append(batch, r)
	}
	clear(s.ahead.reqs[:n]) // the backing array outlives the taken writes: let them go
	s.ahead.reqs = s.ahead.reqs[n:]
	if len(s.ahead.reqs) == 0 {
		s.ahead.reqs = nil // let the drained backing array go
	} else {
		s.kickAhead()
	}
	return batch
}

// pending is a write CommitAhead queued (store.Pending).
type pending struct {
	s   *Store
	req *commitReq
}

func (p *pending) Join(next store.Write) bool {
	p.s.ahead.mu.Lock()
	defer p.s.ahead.mu.Unlock()
	if p.req.taken {
		return false
	}
	p.req.w = p.req.w.Then(next)
	return true
}

// Wait waits for the write's batch; a write no committer has taken when the store closes or its
// context ends is given up, as a Commit waiting for a committer is (once taken, a batch ends
// with its members' contexts or the store's).
func (p *pending) Wait() (store.Signals, error) {
	var why error
	select {
	case <-p.req.done:
		return p.req.sig, commitError(p.req)
	case <-p.s.life.Done():
		why = errors.New("store closed")
	case <-p.req.ctx.Done():
		why = p.req.ctx.Err()
	}
	p.s.ahead.mu.Lock()
	taken := p.req.taken
	p.req.taken = true
	p.s.ahead.mu.Unlock()
	if !taken {
		p.s.waiting.Add(-1)
		p.req.err = why
		return store.Signals{}, commitError(p.req)
	}
	<-p.req.done
	return p.req.sig, commitError(p.req)
}

// commitLoop is one committer; it owns its batches until the store's life ends.
func (s *Store) commitLoop() {
	defer s.loops.Done()
	for {
		var batch []*commitReq
		select {
		case first := <-s.commits:
			batch = append(batch, first)
		case <-s.ahead.kick:
		case <-s.life.Done():
			return
		}
		batch = s.takeAhead(batch)
	drain:
		for len(batch) < maxGroup {
			select {
			case r := <-s.commits:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		if len(batch) == 0 {
			continue // another committer took the queued writes
		}
		// Lock the run rows in name order, as RenewLeases does, so that a batch and a renewal
		// (or two batches) never wait on each other in a cycle: a deadlock is only found after
		// deadlock_timeout (1 s by default) and costs both a retry. Writes of one run keep their
		// order.
		sort.SliceStable(batch, func(i, j int) bool { return batch[i].l.Run < batch[j].l.Run })
		s.batches.Add(1)
		s.commitGroup(batch)
		s.afterBatch(batch)
		for _, r := range batch {
			if r.notifyWork && r.err == nil {
				s.notifyWorkSoon()
			}
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
	err := pipeOn(ctx, s.commitPool, func(b *pgx.Batch) {
		for _, r := range members {
			r.sig, r.phase, r.fenced, r.err = store.Signals{}, "", false, nil
		}
		queueWrites(b, members)
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

// queueWrites queues the members' statements, each member's fence (with its events) first; each
// later statement of a member applies only under its fence (fenceCond). The charges of every
// member come after every member's run-row statements, so the batch takes the credits account
// row (which charges lock) only once it holds all its run rows; and the releases (which drop a
// run's remaining reservations) after the charges, which settle theirs.
func queueWrites(b *pgx.Batch, members []*commitReq) {
	// releaseLater[i]: member i's lease ends in a statement after its others (queueRelease), not
	// in its fence statement.
	releaseLater := make([]bool, len(members))
	for i, r := range members {
		if r.op != nil {
			r.op(b, r)
			continue
		}
		l, w := r.l, r.w
		// The write's steps ride in the fence statement, unless it records a key twice
		// (stepWrites): then each record has a statement of its own, in order.
		steps, inFence := stepWrites(w.Steps)
		// The lease ends in the fence statement unless statements of the write come after it
		// (they are conditioned on the lease): steps of their own, a charge, or a webhook delivery.
		// The events this write reports to webhooks go to the outbox in the same transaction.
		outbox := store.RunOutbox(l.Run, l.PokeSeq, w, time.Now())
		releaseLater[i] = w.Release && (!inFence || len(w.Charges) > 0 || len(outbox) > 0)
		queueFence(b, l, w, steps, w.Release && !releaseLater[i], func(cancel bool, poke int64, ph string) {
			r.sig.CancelRequested, r.sig.PokeSeq, r.phase = cancel, poke, ph
		}, func() { r.fenced = true })
		if !inFence {
			for _, st := range w.Steps {
				queueStep(b, l, st)
			}
		}
		queueOutbox(b, l, outbox)
	}
	for _, r := range members {
		for _, c := range r.w.Charges {
			queueCharge(b, r.l, c)
		}
	}
	for i, r := range members {
		if releaseLater[i] {
			queueRelease(b, r.l, r.w.WakeAt)
		}
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

// notifyWorkSoon has other stores told (NOTIFY agentrun_work) that runs may be claimable, after
// the commits that made them so and outside them: PostgreSQL takes one cluster-wide lock through
// the commit of every transaction that sent NOTIFY, so a notification inside each batch of runs
// created made those batches commit one at a time (the live burn-down's backends waited on it,
// about 2 on average). One notification is in flight at a time; the ones asked for meanwhile go
// out as one after it. A process that dies before sending it leaves the runs to the runners' poll.
func (s *Store) notifyWorkSoon() {
	select {
	case s.workKick <- struct{}{}:
	default:
	}
}

// workNotifyLoop sends the notifications notifyWorkSoon asks for until the store's life ends.
func (s *Store) workNotifyLoop() {
	defer s.loops.Done()
	for {
		select {
		case <-s.life.Done():
			return
		case <-s.workKick:
		}
		ctx, cancel := context.WithTimeout(s.life, 5*time.Second)
		_, _ = s.pool.Exec(ctx, `SELECT pg_notify($1, '')`, chanWork)
		cancel()
	}
}

// afterBatch tells this store's waiters what the batch's committed fenced writes changed, once
// for the batch and before their callers are told: each caller doing it on its own had every
// member of a batch, woken at once, queue on the same two locks (~17% of a busy runner's runs'
// blocked time went there).
func (s *Store) afterBatch(batch []*commitReq) {
	poke, event := false, false
	var runs []string
	for _, r := range batch {
		if !r.fencedWrite || r.err != nil {
			continue
		}
		poke = poke || r.w.Release && !api.Finished(r.phase)
		if len(r.w.Events) > 0 {
			event = true
			runs = append(runs, r.l.Run)
		}
	}
	if poke {
		s.wake.Poke()
	}
	if event {
		s.wake.Event()
		s.events.add(runs...)
	}
}
