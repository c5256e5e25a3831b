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

// A runner that cannot renew stops its own work on the run before the lease runs out at the
// store, so no other runner can be working on it at the same time.
func TestSelfFenceBeforeLeaseExpires(t *testing.T) {
	t.Parallel()
	base := newStore(t)
	st := &failingRenewals{Store: base}
	createRun(t, st, "run-1")
	d := &blockingDriver{started: make(chan store.Lease, 1), ended: make(chan error, 1)}
	r := &Runner{Name: "r1", Store: st, Driver: d, Log: quiet, LeaseTTL: 1200 * time.Millisecond, RenewEvery: 400 * time.Millisecond, PollEvery: 50 * time.Millisecond}
	run(t, r)

	l := <-d.started
	st.broken.Store(true)
	cause := <-d.ended
	if !errors.Is(cause, errSelfFenced) {
		t.Fatalf("drive ended with %v, want a self-fence", cause)
	}
	// The drive stopped while the lease was still live at the store: nobody else could claim yet.
	if got, err := base.ClaimRuns(context.Background(), "r2", 10, time.Minute); err != nil || len(got) != 0 {
		t.Fatalf("another runner claimed %v (%v) before the self-fenced lease expired", got, err)
	}
	// Once it has expired, another runner takes the run over with a newer generation.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		got, err := base.ClaimRuns(context.Background(), "r2", 10, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 1 {
			if got[0].Generation <= l.Generation {
				t.Errorf("takeover generation %d, not newer than %d", got[0].Generation, l.Generation)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the run never became claimable after the lease expired")
}

// A runner whose store calls hang (a connection cut off without a reset: each call takes its
// whole timeout) still stops its work on the run before the lease runs out: self-fencing waits on
// no store call.
func TestSelfFenceWhileStoreHangs(t *testing.T) {
	t.Parallel()
	base := newStore(t)
	st := &failingRenewals{Store: base}
	createRun(t, st, "run-1")
	d := &blockingDriver{started: make(chan store.Lease, 1), ended: make(chan error, 1)}
	r := &Runner{Name: "r1", Store: st, Driver: d, Log: quiet, LeaseTTL: 1200 * time.Millisecond, RenewEvery: 400 * time.Millisecond, PollEvery: 50 * time.Millisecond}
	run(t, r)

	<-d.started
	st.hang.Store(true)
	start := time.Now()
	cause := <-d.ended
	if !errors.Is(cause, errSelfFenced) {
		t.Fatalf("drive ended with %v, want a self-fence", cause)
	}
	if got, err := base.ClaimRuns(context.Background(), "r2", 10, time.Minute); err != nil || len(got) != 0 {
		t.Fatalf("another runner claimed %v (%v) before the self-fenced lease expired (the fence came %s after the store hung)", got, err, time.Since(start))
	}
}

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
