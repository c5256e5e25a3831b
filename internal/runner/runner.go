// Package runner owns claiming: a runner leases runnable runs from the store, drives each in its
// own goroutine through a Driver, renews its leases, and stops work on a run by itself when it can
// no longer prove it holds the lease (docs/architecture.md, "Leases and fencing"). Runs it does not
// finish it releases or lets expire, so another runner (or this one after a restart) takes them
// over.
package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"agentrun.dev/agentrun/internal/metrics"
	"agentrun.dev/agentrun/internal/store"
)

// Store is the part of the store a runner uses: claims, leases and their renewal, releasing a
// run, cancel requests, its heartbeat, and the store's wake-ups.
type Store interface {
	ClaimRuns(ctx context.Context, owner string, max int, ttl time.Duration) ([]store.Lease, error)
	ExpireLeases(ctx context.Context, owner string) (int, error)
	RenewLeases(ctx context.Context, leases []store.Lease, ttl time.Duration) (renewed, lost []store.Lease, err error)
	Commit(ctx context.Context, l store.Lease, w store.Write) (store.Signals, error)
	CancelRequested(ctx context.Context, runs []string) ([]string, error)
	Steered(ctx context.Context, runs []string) (map[string]int64, error)
	Heartbeat(ctx context.Context, r store.RunnerInfo) error
	WaitWork(ctx context.Context, d time.Duration)
}

// Driver runs one claimed run until it finishes, parks or ctx ends.
type Driver interface {
	Drive(ctx context.Context, lease store.Lease) error
}

// Runner claims and drives runs.
type Runner struct {
	Name    string
	Store   Store
	Driver  Driver
	Log     *slog.Logger
	MaxRuns int
	// LeaseTTL is how long a claim lasts without renewal (30 s); RenewEvery is 10 s.
	LeaseTTL   time.Duration
	RenewEvery time.Duration
	// PollEvery bounds how long the runner sleeps when no wake-up arrives.
	PollEvery time.Duration
	// Version is reported in the runner registry.
	Version string
	// CheckSchema, when set, says whether this binary may write the store's schema; the runner
	// asks it before claiming (at most every SchemaEvery, 10 s) and claims nothing while it
	// refuses, so a runner left behind by an upgrade of the others stops taking runs.
	CheckSchema func(ctx context.Context) error
	SchemaEvery time.Duration
	// MaxLag is the scheduling lag past which the runner takes no new runs (see behind): 0 is
	// 50 ms, negative never holds back on lag. Lag, when set, replaces the measured lag (the p99
	// of this process's goroutine scheduling latency over the last second or more).
	MaxLag   time.Duration
	Lag      func() time.Duration
	started  time.Time
	schemaAt time.Time
	// steerAt is when the claim loop last looked for messages that stop a turn (checkSteered).
	steerAt time.Time

	// now is the clock every lease deadline is measured on (time.Now; tests replace it), and
	// epoch its reading when the runner started: a held run's renewal is kept as the monotonic
	// offset from epoch so the fence check reads it without the runner's lock.
	now   func() time.Time
	epoch time.Time

	// Hold-back state: renewSlow is set by renewLoop, the rest is the claim loop's own.
	renewSlow   atomic.Bool
	holding     bool
	holdingFrom time.Time
	sched       schedLag

	// claimErr is why the last claim did not happen (nil: it did); readiness reports it.
	readyMu  sync.Mutex
	claiming bool
	claimErr error

	mu     sync.Mutex
	active map[string]*held
	wg     sync.WaitGroup
}

type held struct {
	lease  store.Lease
	cancel context.CancelCauseFunc
	// renewed is when the store last granted the lease (claim or renewal), as the runner's
	// monotonic offset from its epoch: the time the grant's request was sent, which is no later
	// than the store's own reading of the time it added the TTL to.
	renewed atomic.Int64
	// interrupted: a user action (cancel) wants the drive stopped and the run re-claimed at once.
	interrupted bool
	// steered is the highest steering message seq handed to the driver (Steer).
	steered int64
}

// Steerer is a Driver that can stop a run's turn in flight for a message (ifBusy interrupt or
// rollback) without ending the drive.
type Steerer interface {
	Steer(run string, seq int64)
}

// claimBatch is the most runs one claim takes.
const claimBatch = 64

var errLeaseLost = errors.New("lease lost")
var errSelfFenced = fmt.Errorf("%w: lease not renewed in time: stopped work on the run (self-fence)", store.ErrFenced)
var errInterrupted = errors.New("interrupted to apply a user action")

func (r *Runner) defaults() {
	if r.MaxRuns <= 0 {
		r.MaxRuns = 5000
	}
	if r.LeaseTTL <= 0 {
		r.LeaseTTL = 30 * time.Second
	}
	if r.RenewEvery <= 0 {
		r.RenewEvery = r.LeaseTTL / 3
	}
	if r.PollEvery <= 0 {
		r.PollEvery = time.Second
	}
	if r.SchemaEvery <= 0 {
		r.SchemaEvery = 10 * time.Second
	}
	if r.MaxLag == 0 {
		r.MaxLag = 50 * time.Millisecond
	}
	if r.Lag == nil {
		r.Lag = r.sched.read
	}
	if r.Log == nil {
		r.Log = slog.Default()
	}
	if r.now == nil {
		r.now = time.Now
	}
	r.epoch = r.now()
}

// The self-fence. A lease the store granted at store time G (a claim or a renewal) runs out at
// G + LeaseTTL. The runner keeps, for each held run, the time it SENT the request that got the
// grant (S <= G: the store read its clock after the request left), and stops work on the run at
// S + LeaseTTL - fenceMargin by its own monotonic clock, so at least fenceMargin before any other
// runner can claim it (both clocks advance at the same rate; their offset does not matter, as
// only durations are compared). Two things enforce that point:
//   - the drive's context carries a check (store.CheckLease) that the journal calls right before
//     each step's effect: it compares the clock with the deadline itself, so no step starts past
//     the deadline however late the runner's goroutines are scheduled;
//   - fenceLoop cancels the drive at the deadline, stopping what is in flight (a model call, a
//     command); it ticks every fenceTick, so it fires within fenceTick of the deadline plus any
//     scheduling delay, which leaves fenceMargin - fenceTick (LeaseTTL/12: 2.5 s of a 30 s lease)
//     for the delay before the lease could be taken.
//
// fenceMargin is LeaseTTL/6 (5 s of a 30 s lease).
func (r *Runner) fenceMargin() time.Duration { return r.LeaseTTL / 6 }

// fenceTick is how often fenceLoop and renewLoop look at the held leases.
func (r *Runner) fenceTick() time.Duration { return min(r.RenewEvery/4, r.fenceMargin()/2) }

// offset is the runner clock's reading as an offset from its epoch.
func (r *Runner) offset() int64 { return int64(r.now().Sub(r.epoch)) }

// fenced reports whether h's lease is past its self-fence deadline, and by how long since its
// last grant.
func (r *Runner) fenced(h *held) (bool, time.Duration) {
	since := time.Duration(r.offset() - h.renewed.Load())
	return since > r.LeaseTTL-r.fenceMargin(), since
}

// expirePrevious ends the leases this runner's name still holds, retrying with a growing pause
// (up to PollEvery*10) while the store fails; false when ctx ended first.
func (r *Runner) expirePrevious(ctx context.Context) bool {
	pause := r.PollEvery
	for {
		n, err := r.Store.ExpireLeases(ctx, r.Name)
		if err == nil {
			if n > 0 {
				r.Log.Info("taking back runs from this runner's previous process", "runs", n)
			}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		r.Log.Warn("store failed at start; retrying", "waiting", pause, "err", err)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		pause = min(2*pause, 10*r.PollEvery)
	}
}

// Run claims and drives runs until ctx ends, then waits for its drives to stop.
func (r *Runner) Run(ctx context.Context) error {
	r.defaults()
	r.mu.Lock()
	r.active = map[string]*held{}
	r.mu.Unlock()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	// This runner's previous incarnation (same name) is gone: take its runs back at once rather
	// than waiting out their leases. A store that fails here is waited for, as claim waits for
	// it, rather than ending the runner (and with it the server that hosts it): the failure
	// shows on /healthz meanwhile.
	if !r.expirePrevious(rctx) {
		return nil
	}
	r.started = time.Now()
	r.heartbeat(rctx, 0)
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		r.renewLoop(rctx)
	}()
	go func() {
		defer r.wg.Done()
		r.fenceLoop(rctx)
	}()
	for rctx.Err() == nil {
		if r.behind() {
			// Not WaitWork: new runs would wake it only to find it still behind.
			t := time.NewTimer(r.PollEvery)
			select {
			case <-rctx.Done():
				t.Stop()
			case <-t.C:
			}
			continue
		}
		n := r.claim(rctx)
		if n == 0 {
			r.Store.WaitWork(rctx, r.PollEvery)
		}
		r.checkSteered(rctx)
	}
	r.wg.Wait()
	if c, ok := r.Driver.(interface{ CloseAll() }); ok {
		c.CloseAll() // computers kept for waiting runs stop with the runner
	}
	return nil
}

// Ready reports whether the runner is claiming: nil once it claimed (or tried to, finding nothing)
// without error since it started, else why not (not started, the store failing, a schema this
// binary cannot write).
func (r *Runner) Ready() error {
	r.readyMu.Lock()
	defer r.readyMu.Unlock()
	if !r.claiming && r.claimErr == nil {
		return errors.New("not claiming yet")
	}
	return r.claimErr
}

func (r *Runner) setClaimed(err error) {
	r.readyMu.Lock()
	r.claiming, r.claimErr = err == nil, err
	r.readyMu.Unlock()
}

// schemaRefusal asks CheckSchema when it is due and keeps refusing (without asking again) until
// the next check.
func (r *Runner) schemaRefusal(ctx context.Context) error {
	if r.CheckSchema == nil {
		return nil
	}
	r.readyMu.Lock()
	due := r.schemaAt.IsZero() || time.Since(r.schemaAt) >= r.SchemaEvery
	prev := r.claimErr
	r.readyMu.Unlock()
	if !due {
		if errors.Is(prev, store.ErrSchemaNewer) {
			return prev
		}
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := r.CheckSchema(cctx)
	r.readyMu.Lock()
	r.schemaAt = time.Now()
	r.readyMu.Unlock()
	if err != nil && errors.Is(err, store.ErrSchemaNewer) {
		if !errors.Is(prev, store.ErrSchemaNewer) {
			r.Log.Error("refusing to claim runs", "err", err)
		}
		return fmt.Errorf("runner refuses to claim: %w", err)
	}
	// A check that failed for another reason (the store not answering) is the claim's to report.
	return nil
}

func (r *Runner) claim(ctx context.Context) int {
	if err := r.schemaRefusal(ctx); err != nil {
		r.setClaimed(err)
		return 0
	}
	r.mu.Lock()
	free := r.MaxRuns - len(r.active)
	r.mu.Unlock()
	if free <= 0 {
		return 0
	}
	if free > claimBatch {
		free = claimBatch
	}
	// Taken before the claim is sent: the store grants each lease no earlier (see fenceMargin).
	sent := r.offset()
	leases, err := r.Store.ClaimRuns(ctx, r.Name, free, r.LeaseTTL)
	if ctx.Err() == nil {
		r.setClaimed(err)
	}
	if err != nil {
		if ctx.Err() == nil {
			r.Log.Error("claim runs", "err", err)
			time.Sleep(250 * time.Millisecond)
		}
		return 0
	}
	metrics.Claims.Add(float64(len(leases)))
	for _, l := range leases {
		r.start(ctx, l, sent)
	}
	return len(leases)
}

// start drives l, whose grant was asked for at the runner's offset sent.
func (r *Runner) start(ctx context.Context, l store.Lease, sent int64) {
	dctx, cancel := context.WithCancelCause(ctx)
	h := &held{lease: l, cancel: cancel}
	h.renewed.Store(sent)
	dctx = store.WithLeaseCheck(dctx, func() error {
		if late, since := r.fenced(h); late {
			err := fmt.Errorf("%w (%s since its last renewal)", errSelfFenced, since.Round(time.Millisecond))
			cancel(err)
			return err
		}
		return nil
	})
	r.mu.Lock()
	if old, ok := r.active[l.Run]; ok {
		// A stale drive of the same run (its lease expired and we re-claimed it): stop it first.
		old.cancel(errLeaseLost)
	}
	r.active[l.Run] = h
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer cancel(nil)
		err := r.Driver.Drive(dctx, l)
		r.mu.Lock()
		interrupted := h.interrupted
		if r.active[l.Run] == h {
			delete(r.active, l.Run)
		}
		r.mu.Unlock()
		if err != nil && !errors.Is(err, store.ErrFenced) && !errors.Is(context.Cause(dctx), errLeaseLost) && !errors.Is(context.Cause(dctx), errSelfFenced) {
			if !interrupted && ctx.Err() == nil && !errors.Is(err, store.ErrDriveAgain) {
				r.Log.Warn("drive ended with an error", "run", l.Run, "err", err)
			}
			// Give the run back at once so it is retried (or, when interrupted, re-claimed to apply
			// the user's action) rather than waiting for the lease to expire.
			wakeAt := time.Now()
			if errors.Is(err, store.ErrUnavailable) {
				wakeAt = wakeAt.Add(time.Second) // give the store a moment
			}
			// Bounded by the lease: past it the run is claimable anyway, and a store that does not
			// answer must not keep this goroutine (and Run, which waits for it) forever.
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), r.LeaseTTL)
			_, rerr := r.Store.Commit(rctx, l, store.Write{Release: true, WakeAt: &wakeAt})
			rcancel()
			if rerr != nil && !errors.Is(rerr, store.ErrFenced) {
				r.Log.Error("release run", "run", l.Run, "err", rerr)
			}
		}
	}()
}

// Interrupt stops the drive of a run this runner holds, so that it is re-claimed at once and sees a
// user action (a cancellation) without waiting for its current step to end.
func (r *Runner) Interrupt(run string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.active[run]; ok {
		h.interrupted = true
		h.cancel(errInterrupted)
	}
}

// Steer hands message seq, which asks to stop the turn in flight of run, to the drive of run on
// this runner, if any and if the driver can (Steerer); a seq already handed over is not again.
func (r *Runner) Steer(run string, seq int64) {
	st, ok := r.Driver.(Steerer)
	if !ok {
		return
	}
	r.mu.Lock()
	h, held := r.active[run]
	if held && seq > h.steered {
		h.steered = seq
	}
	r.mu.Unlock()
	if held {
		st.Steer(run, seq)
	}
}

// applyCancellations interrupts held runs a user asked to cancel, so a long model or tool call
// does not delay the cancellation; the run is re-claimed at once and finished as Cancelled.
func (r *Runner) applyCancellations(ctx context.Context, hs []*held) {
	if len(hs) == 0 {
		return
	}
	names := make([]string, len(hs))
	for i, h := range hs {
		names[i] = h.lease.Run
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	asked, err := r.Store.CancelRequested(cctx, names)
	if err != nil {
		if ctx.Err() == nil {
			r.Log.Warn("check cancel requests", "err", err)
		}
		return
	}
	for _, run := range asked {
		r.Interrupt(run)
	}
}

// steerEvery bounds how often the claim loop asks the store for messages that stop a turn.
const steerEvery = 250 * time.Millisecond

// checkSteered hands the drivers the messages that ask to stop a held run's turn (Steer), sent
// to a server in another process. The claim loop calls it after each wake-up: a message pokes its
// run, which wakes every runner (PostgreSQL NOTIFY agentrun_work, or in process), so a runner
// elsewhere notices it about as soon as it would a new run; at most every steerEvery.
func (r *Runner) checkSteered(ctx context.Context) {
	if _, ok := r.Driver.(Steerer); !ok || time.Since(r.steerAt) < steerEvery {
		return
	}
	r.steerAt = time.Now()
	r.mu.Lock()
	names := make([]string, 0, len(r.active))
	for run := range r.active {
		names = append(names, run)
	}
	r.mu.Unlock()
	if len(names) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	steered, err := r.Store.Steered(cctx, names)
	if err != nil {
		if ctx.Err() == nil {
			r.Log.Warn("check messages that stop a turn", "err", err)
		}
		return
	}
	for run, seq := range steered {
		r.mu.Lock()
		h, held := r.active[run]
		newer := held && seq > h.steered
		r.mu.Unlock()
		if newer {
			r.Steer(run, seq)
		}
	}
}

func (r *Runner) heartbeat(ctx context.Context, held int) {
	host, _ := os.Hostname()
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := r.Store.Heartbeat(hctx, store.RunnerInfo{Name: r.Name, Version: r.Version, Host: host, PID: os.Getpid(), StartedAt: r.started, RunsHeld: held}); err != nil && ctx.Err() == nil {
		r.Log.Warn("runner heartbeat", "err", err)
	}
}

// fenceLoop self-fences: a margin before a lease would run out at the store, by this process's
// monotonic clock, a run whose lease was not renewed is stopped here, so a runner that cannot
// renew (store down or unreachable, process paused) stops its own work before another runner may
// take the run over. It does no I/O, so a store call hanging in renewLoop cannot delay it.
func (r *Runner) fenceLoop(ctx context.Context) {
	t := time.NewTicker(r.fenceTick())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.selfFence()
	}
}

// selfFence stops the held runs past their self-fence deadline (see fenceMargin) and returns the
// others.
func (r *Runner) selfFence() []*held {
	r.mu.Lock()
	defer r.mu.Unlock()
	hs := make([]*held, 0, len(r.active))
	for _, h := range r.active {
		if late, since := r.fenced(h); late {
			r.Log.Warn("self-fencing run: its lease could not be renewed in time", "run", h.lease.Run, "since", since.Round(time.Millisecond))
			metrics.LeasesLost.Inc("self-fenced")
			h.cancel(errSelfFenced)
			delete(r.active, h.lease.Run)
			continue
		}
		hs = append(hs, h)
	}
	metrics.RunsActive.Set(float64(len(r.active)))
	return hs
}

// renewLoop renews the held leases every RenewEvery, heartbeats, and applies cancellations asked
// for; each store call is bounded, but may take its whole bound when the store does not answer,
// which is why self-fencing has its own loop (fenceLoop).
func (r *Runner) renewLoop(ctx context.Context) {
	t := time.NewTicker(r.fenceTick())
	defer t.Stop()
	lastAttempt := r.now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		hs := r.selfFence()
		r.applyCancellations(ctx, hs)
		if r.now().Sub(lastAttempt) < r.RenewEvery {
			continue
		}
		lastAttempt = r.now()
		r.heartbeat(ctx, len(hs))
		if rp, ok := r.Driver.(interface{ Reap(context.Context) }); ok {
			rp.Reap(ctx) // stop computers kept for runs that no longer wait here
		}
		if len(hs) == 0 {
			r.renewSlow.Store(false)
			continue
		}
		if !r.renew(ctx, hs, min(r.RenewEvery, r.fenceMargin())) {
			// Try again in a fifth of the period rather than a whole one: the leases this renewal
			// did not reach must be renewed before the self-fence margin runs out, and waiting the
			// full period left them a single bounded attempt (an overloaded runner holding 10,000
			// runs lost them all when that attempt was slow too).
			lastAttempt = r.now().Add(-r.RenewEvery + r.RenewEvery/5)
		}
	}
}

// renew renews the leases of hs, oldest renewal first, within bound, and reports whether it
// reached them all. Each lease the store renewed counts, even when the renewal as a whole ran out
// of time or failed part way (a slow store keeps the runs it managed to renew, and the others
// come first next time); a lease the store says is held no longer stops its run at once.
func (r *Runner) renew(ctx context.Context, hs []*held, bound time.Duration) bool {
	r.mu.Lock()
	slices.SortFunc(hs, func(a, b *held) int { return cmp.Compare(a.renewed.Load(), b.renewed.Load()) })
	leases := make([]store.Lease, len(hs))
	for i, h := range hs {
		leases[i] = h.lease
	}
	r.mu.Unlock()
	attempt := r.offset()
	attemptAt := time.Now()
	rctx, cancel := context.WithTimeout(ctx, bound)
	renewed, lost, err := r.Store.RenewLeases(rctx, leases, r.LeaseTTL)
	cancel()
	took := time.Since(attemptAt)
	metrics.RenewSeconds.Observe(took.Seconds())
	r.renewSlow.Store(took > bound/2) // see behind
	type key struct {
		run string
		gen int64
	}
	byLease := make(map[key]*held, len(hs))
	for _, h := range hs {
		byLease[key{h.lease.Run, h.lease.Generation}] = h
	}
	r.mu.Lock()
	for _, l := range renewed {
		if h := byLease[key{l.Run, l.Generation}]; h != nil {
			// The attempt's start, not its end: the store's new expiry is no earlier than that.
			h.renewed.Store(attempt)
		}
	}
	for _, l := range lost {
		// A drive that ended meanwhile gave its lease back (finished or parked): the store no
		// longer holds it for us, but nothing was lost.
		if h := byLease[key{l.Run, l.Generation}]; h != nil && r.active[l.Run] == h {
			r.Log.Warn("lease lost to another runner", "run", l.Run)
			metrics.LeasesLost.Inc("fenced")
			h.cancel(errLeaseLost)
		}
	}
	r.mu.Unlock()
	metrics.LeaseRenewals.Add(float64(len(renewed)), "ok")
	if err == nil {
		return true
	}
	unknown := len(leases) - len(renewed) - len(lost)
	metrics.LeaseRenewals.Add(float64(unknown), "error")
	if ctx.Err() == nil {
		r.Log.Error("renew leases", "runs", len(leases), "renewed", len(renewed), "not_reached", unknown, "took", took.Round(time.Millisecond), "err", err)
	}
	return false
}
