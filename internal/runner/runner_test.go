package runner

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/sqlite"
)

// failingRenewals is a real store whose lease renewals fail once broken is set (a store that has
// become unreachable for this runner).
type failingRenewals struct {
	store.Store
	broken atomic.Bool
	hang   atomic.Bool
}

func (f *failingRenewals) RenewLeases(ctx context.Context, l []store.Lease, ttl time.Duration) ([]store.Lease, []store.Lease, error) {
	if f.hang.Load() {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	}
	if f.broken.Load() {
		return nil, nil, errors.New("store unreachable")
	}
	return f.Store.RenewLeases(ctx, l, ttl)
}

// A store unreachable for this runner claims nothing for it either (else, once its own lease ran
// out, it would take the run back before the test's other runner).
func (f *failingRenewals) ClaimRuns(ctx context.Context, owner string, max int, ttl time.Duration) ([]store.Lease, error) {
	if f.hang.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if f.broken.Load() {
		return nil, errors.New("store unreachable")
	}
	return f.Store.ClaimRuns(ctx, owner, max, ttl)
}

// With hang set, the runner's periodic store calls answer only when their context ends, as over
// a connection cut off without a reset.
func (f *failingRenewals) Heartbeat(ctx context.Context, ri store.RunnerInfo) error {
	if f.hang.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return f.Store.Heartbeat(ctx, ri)
}

func (f *failingRenewals) CancelRequested(ctx context.Context, runs []string) ([]string, error) {
	if f.hang.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return f.Store.CancelRequested(ctx, runs)
}

// blockingDriver holds each run until its context ends and reports why it ended.
type blockingDriver struct {
	started chan store.Lease
	ended   chan error
}

func (d *blockingDriver) Drive(ctx context.Context, l store.Lease) error {
	// Later drives (the runner may claim the run again) report only if the test still listens.
	select {
	case d.started <- l:
	default:
	}
	<-ctx.Done()
	select {
	case d.ended <- context.Cause(ctx):
	default:
	}
	return ctx.Err()
}

func newStore(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func createRun(t *testing.T, st store.Store, name string) {
	t.Helper()
	r := &api.AgentRun{Metadata: api.ObjectMeta{Name: name}, Spec: api.AgentRunSpec{Agent: "a", Input: "x"}, Status: api.AgentRunStatus{Phase: api.PhaseQueued, AgentRevision: 1}}
	if err := st.CreateRun(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// run runs r until the test ends.
func run(t *testing.T, r *Runner) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); r.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// clock is a time source the test moves by hand, shared by the runner and the store, so lease
// deadlines and expiry are decided on it and not on how promptly the machine schedules the
// runner's goroutines.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fencingSetup is a runner and a store on one test clock, with a run claimed and its drive
// blocked: the clock reads the claim's time until the test advances it.
func fencingSetup(t *testing.T) (*clock, *failingRenewals, *sqlite.Store, *Runner, *blockingDriver, store.Lease) {
	t.Helper()
	c := newClock()
	base, err := sqlite.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { base.Close() })
	base.SetClock(c.Now)
	st := &failingRenewals{Store: base}
	createRun(t, st, "run-1")
	d := &blockingDriver{started: make(chan store.Lease, 1), ended: make(chan error, 1)}
	r := &Runner{Name: "r1", Store: st, Driver: d, Log: quiet, LeaseTTL: 30 * time.Second, RenewEvery: 10 * time.Second, PollEvery: 20 * time.Millisecond, now: c.Now}
	run(t, r)
	l := <-d.started
	return c, st, base, r, d, l
}

// A runner that cannot renew stops its own work on the run before the lease runs out at the
// store, so no other runner can be working on it at the same time. Time is the test's: the fence
// is decided on the clock, whatever the machine's load.
func TestSelfFenceBeforeLeaseExpires(t *testing.T) {
	t.Parallel()
	c, st, base, r, d, l := fencingSetup(t)
	st.broken.Store(true)
	// Just past the self-fence deadline, and still short of the lease's expiry at the store.
	c.Advance(r.LeaseTTL - r.fenceMargin() + time.Millisecond)
	cause := <-d.ended
	if !errors.Is(cause, errSelfFenced) {
		t.Fatalf("drive ended with %v, want a self-fence", cause)
	}
	// The drive stopped while the lease was still live at the store: nobody else could claim yet.
	if got, err := base.ClaimRuns(context.Background(), "r2", 10, time.Minute); err != nil || len(got) != 0 {
		t.Fatalf("another runner claimed %v (%v) before the self-fenced lease expired", got, err)
	}
	// Once it has expired, another runner takes the run over with a newer generation.
	c.Advance(r.fenceMargin())
	got, err := base.ClaimRuns(context.Background(), "r2", 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("the run did not become claimable once its lease expired: %v", got)
	}
	if got[0].Generation <= l.Generation {
		t.Errorf("takeover generation %d, not newer than %d", got[0].Generation, l.Generation)
	}
}

// A runner whose store calls hang (a connection cut off without a reset: each call takes its
// whole timeout) still stops its work on the run before the lease runs out: self-fencing waits on
// no store call.
func TestSelfFenceWhileStoreHangs(t *testing.T) {
	t.Parallel()
	c, st, base, r, d, _ := fencingSetup(t)
	st.hang.Store(true)
	// Due for a renewal, which now hangs for its whole bound...
	c.Advance(r.RenewEvery)
	// ...and past the fence deadline while it may still hang.
	c.Advance(r.LeaseTTL - r.fenceMargin() - r.RenewEvery + time.Millisecond)
	cause := <-d.ended
	if !errors.Is(cause, errSelfFenced) {
		t.Fatalf("drive ended with %v, want a self-fence", cause)
	}
	if got, err := base.ClaimRuns(context.Background(), "r2", 10, time.Minute); err != nil || len(got) != 0 {
		t.Fatalf("another runner claimed %v (%v) before the self-fenced lease expired", got, err)
	}
}

// slowClaims is a store whose claims take time on the test's clock on the way there and back,
// and which records the store's time of each grant.
type slowClaims struct {
	store.Store
	c       *clock
	there   time.Duration
	back    time.Duration
	grantMu sync.Mutex
	grants  []time.Time
}

func (s *slowClaims) ClaimRuns(ctx context.Context, owner string, max int, ttl time.Duration) ([]store.Lease, error) {
	s.c.Advance(s.there)
	s.grantMu.Lock()
	s.grants = append(s.grants, s.c.Now())
	s.grantMu.Unlock()
	ls, err := s.Store.ClaimRuns(ctx, owner, max, ttl)
	s.c.Advance(s.back)
	return ls, err
}

// A claimed lease's self-fence deadline counts from before the claim was sent, not from when the
// answer came back or the run's drive started: the store granted the lease in between, so a
// deadline counted from later would let the fence come after the store's expiry.
func TestFenceDeadlineCountsFromTheClaimSent(t *testing.T) {
	t.Parallel()
	c := newClock()
	base, err := sqlite.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { base.Close() })
	base.SetClock(c.Now)
	for _, n := range []string{"run-1", "run-2", "run-3"} {
		createRun(t, base, n)
	}
	st := &slowClaims{Store: base, c: c, there: 2 * time.Second, back: 3 * time.Second}
	d := &blockingDriver{started: make(chan store.Lease, 3), ended: make(chan error, 3)}
	r := &Runner{Name: "r1", Store: st, Driver: d, Log: quiet, LeaseTTL: 30 * time.Second, RenewEvery: 10 * time.Second, PollEvery: 20 * time.Millisecond, now: c.Now}
	r.defaults()
	r.active = map[string]*held{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); r.wg.Wait() })
	if n := r.claim(ctx); n != 3 {
		t.Fatalf("claimed %d runs, want 3", n)
	}
	for range 3 {
		<-d.started
	}
	grant := st.grants[0]
	r.mu.Lock()
	defer r.mu.Unlock()
	for run, h := range r.active {
		deadline := r.epoch.Add(time.Duration(h.renewed.Load()) + r.LeaseTTL - r.fenceMargin())
		expiry := grant.Add(r.LeaseTTL)
		if gap := expiry.Sub(deadline); gap < r.fenceMargin() {
			t.Errorf("%s: self-fence deadline %s before the store's expiry, want at least the margin %s", run, gap, r.fenceMargin())
		}
	}
}

// A drive past its self-fence deadline starts no step, even when the goroutines that fence runs
// have not run at all (a runner whose scheduling is late): the check the journal calls before a
// step's effect reads the clock itself.
func TestLeaseCheckRefusesPastTheDeadlineWithoutTheFenceLoop(t *testing.T) {
	t.Parallel()
	c := newClock()
	base, err := sqlite.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { base.Close() })
	base.SetClock(c.Now)
	createRun(t, base, "run-1")
	checks := make(chan func() error, 1)
	d := driverFunc(func(ctx context.Context, l store.Lease) error {
		checks <- func() error { return store.CheckLease(ctx) }
		<-ctx.Done()
		return ctx.Err()
	})
	r := &Runner{Name: "r1", Store: base, Driver: d, Log: quiet, LeaseTTL: 30 * time.Second, RenewEvery: 10 * time.Second, now: c.Now}
	// Claim without Run: neither fenceLoop nor renewLoop ever runs.
	r.defaults()
	r.active = map[string]*held{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); r.wg.Wait() })
	if n := r.claim(ctx); n != 1 {
		t.Fatalf("claimed %d runs, want 1", n)
	}
	check := <-checks
	c.Advance(r.LeaseTTL - r.fenceMargin())
	if err := check(); err != nil {
		t.Fatalf("at the deadline the check says %v, want nil", err)
	}
	c.Advance(time.Millisecond)
	err = check()
	if !errors.Is(err, errSelfFenced) || !errors.Is(err, store.ErrFenced) {
		t.Fatalf("past the deadline the check says %v, want a self-fence (store.ErrFenced)", err)
	}
	// The lease is still the runner's at the store: the refusal came first.
	if got, err := base.ClaimRuns(context.Background(), "r2", 10, time.Minute); err != nil || len(got) != 0 {
		t.Fatalf("another runner claimed %v (%v) while the check refused", got, err)
	}
}

type driverFunc func(ctx context.Context, l store.Lease) error

func (f driverFunc) Drive(ctx context.Context, l store.Lease) error { return f(ctx, l) }

// A runner that sees its lease taken (stale generation at renewal) stops driving the run.
func TestLeaseLostStopsDrive(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	createRun(t, st, "run-1")
	d := &blockingDriver{started: make(chan store.Lease, 1), ended: make(chan error, 1)}
	r := &Runner{Name: "r1", Store: st, Driver: d, Log: quiet, LeaseTTL: 900 * time.Millisecond, RenewEvery: 300 * time.Millisecond, PollEvery: 50 * time.Millisecond}
	run(t, r)
	<-d.started
	// Another runner's claim after expiry: simulate by expiring this runner's leases at the store.
	// r1 renews every 300 ms, and a renewal between the two calls legitimately keeps its lease
	// (nobody had taken it yet), so try again until r2 gets in first.
	for i := 0; ; i++ {
		if _, err := st.ExpireLeases(context.Background(), "r1"); err != nil {
			t.Fatal(err)
		}
		got, err := st.ClaimRuns(context.Background(), "r2", 10, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 1 {
			break
		}
		if i == 20 {
			t.Fatalf("r2 never claimed the expired run: %v", got)
		}
	}
	if cause := <-d.ended; !errors.Is(cause, errLeaseLost) {
		t.Fatalf("drive ended with %v, want lease lost", cause)
	}
}

// A runner restarted under the same name takes its previous process's runs back at once.
func TestRestartTakesBackOwnRuns(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	createRun(t, st, "run-1")
	if got, _ := st.ClaimRuns(context.Background(), "r1", 10, time.Hour); len(got) != 1 {
		t.Fatal("setup claim failed")
	}
	d := &blockingDriver{started: make(chan store.Lease, 1), ended: make(chan error, 1)}
	r := &Runner{Name: "r1", Store: st, Driver: d, Log: quiet, PollEvery: 50 * time.Millisecond}
	run(t, r)
	select {
	case l := <-d.started:
		if l.Run != "run-1" || l.Generation != 2 {
			t.Errorf("took back %+v", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the restarted runner did not take back its run (its old lease had an hour left)")
	}
}

// failingStart is a store whose first ExpireLeases calls fail, as a store that is not reachable
// yet (or whose schema is gone) when a runner starts.
type failingStart struct {
	store.Store
	mu    sync.Mutex
	fails int
}

func (s *failingStart) ExpireLeases(ctx context.Context, owner string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fails > 0 {
		s.fails--
		return 0, errors.New(`relation "runs" does not exist`)
	}
	return s.Store.ExpireLeases(ctx, owner)
}

// TestStoreFailingAtStartIsWaitedFor: a runner whose store fails as it starts keeps trying and
// then drives runs, instead of returning (which ended the server hosting it, taking /healthz and
// the console down with a store that had only failed for a moment).
func TestStoreFailingAtStartIsWaitedFor(t *testing.T) {
	t.Parallel()
	st := &failingStart{Store: newStore(t), fails: 3}
	createRun(t, st, "run-1")
	d := &blockingDriver{started: make(chan store.Lease, 1), ended: make(chan error, 1)}
	r := &Runner{Name: "r1", Store: st, Driver: d, Log: quiet, PollEvery: 10 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	select {
	case l := <-d.started:
		if l.Run != "run-1" {
			t.Fatalf("drove %v, want run-1", l)
		}
	case err := <-done:
		t.Fatalf("the runner returned (%v) instead of waiting for its store", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
}
