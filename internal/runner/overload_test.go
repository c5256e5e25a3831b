package runner

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/postgres"
)

// recordingDriver holds each run until its context ends, and reports every start and every end.
type recordingDriver struct {
	started chan store.Lease
	ended   chan ended
}

type ended struct {
	lease store.Lease
	cause error
}

func newRecordingDriver() *recordingDriver {
	return &recordingDriver{started: make(chan store.Lease, 1000), ended: make(chan ended, 1000)}
}

func (d *recordingDriver) Drive(ctx context.Context, l store.Lease) error {
	d.started <- l
	<-ctx.Done()
	d.ended <- ended{l, context.Cause(ctx)}
	return ctx.Err()
}

// pgStore opens a PostgreSQL store on a fresh schema (dropped when the test ends) and returns it,
// an admin pool and the schema's name, or skips the test without AGENTRUN_TEST_POSTGRES_URL.
func pgStore(t *testing.T) (*postgres.Store, *pgxpool.Pool, string) {
	t.Helper()
	base := os.Getenv("AGENTRUN_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("PostgreSQL tests skipped: set AGENTRUN_TEST_POSTGRES_URL")
	}
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	var b [6]byte
	rand.Read(b[:])
	schema := "s_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("pool_max_conns", "4")
	u.RawQuery = q.Encode()
	st, err := postgres.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, admin, schema
}

// A renewal that runs out of time on a few leases (their rows held locked by a transaction, so
// its last pass waits on them for its whole bound) still counts for the leases it renewed: the
// runner self-fences the locked runs only, and keeps driving the others under the same leases.
// (Before, a renewal that failed counted for nothing and every run self-fenced.)
func TestSlowRenewalKeepsTheRunsItRenewed(t *testing.T) {
	t.Parallel()
	st, admin, schema := pgStore(t)
	ctx := context.Background()
	const n = 12
	locked := map[string]bool{"run-03": true, "run-08": true}
	for i := range n {
		createRun(t, st, fmt.Sprintf("run-%02d", i))
	}
	d := newRecordingDriver()
	// Renewal bound min(RenewEvery, LeaseTTL/6) = 1 s; a run self-fences 5 s after its last renewal.
	r := &Runner{Name: "r1", Store: st, Driver: d, Log: quiet, LeaseTTL: 6 * time.Second, RenewEvery: 2 * time.Second, PollEvery: 50 * time.Millisecond, MaxLag: -1}
	run(t, r)
	first := map[string]store.Lease{}
	for len(first) < n {
		l := <-d.started
		first[l.Run] = l
	}

	runs := pgx.Identifier{schema, "runs"}.Sanitize()
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var names []string
	for run := range locked {
		names = append(names, run)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+runs+` WHERE name = ANY($1) FOR UPDATE`, names); err != nil {
		t.Fatal(err)
	}
	// The locked runs cannot be renewed: they self-fence (before their leases run out at the
	// store, which the existing self-fence tests check).
	for fenced := map[string]bool{}; len(fenced) < len(locked); {
		e := <-d.ended
		if !locked[e.lease.Run] {
			t.Fatalf("run %s, renewable, stopped (%v) while only %v were locked", e.lease.Run, e.cause, names)
		}
		if !errors.Is(e.cause, errSelfFenced) {
			t.Fatalf("locked run %s stopped with %v, want a self-fence", e.lease.Run, e.cause)
		}
		fenced[e.lease.Run] = true
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// Wait for the others' leases to be extended at the store once more after the rollback (by a
	// renewal, or, had they self-fenced too, by their being claimed again).
	expiry := func() map[string]time.Time {
		rows, err := admin.Query(ctx, `SELECT name, lease_expires_at FROM `+runs)
		if err != nil {
			t.Fatal(err)
		}
		m, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct {
			n string
			e time.Time
		}, error) {
			var v struct {
				n string
				e time.Time
			}
			return v, row.Scan(&v.n, &v.e)
		})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]time.Time{}
		for _, v := range m {
			out[v.n] = v.e
		}
		return out
	}
	before := expiry()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		now, all := expiry(), true
		for run := range first {
			if !locked[run] && !now[run].After(before[run]) {
				all = false
			}
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the unlocked runs' leases were never extended again")
		}
	}
	for len(d.ended) > 0 {
		if e := <-d.ended; !locked[e.lease.Run] {
			t.Errorf("run %s, renewable, stopped: %v", e.lease.Run, e.cause)
		}
	}
	for len(d.started) > 0 {
		if l := <-d.started; !locked[l.Run] {
			t.Errorf("run %s, renewable, was claimed again (generation %d, first %d)", l.Run, l.Generation, first[l.Run].Generation)
		}
	}
	// At the store too, each still has the lease it was first claimed with.
	rows, err := admin.Query(ctx, `SELECT name, lease_owner, lease_generation FROM `+runs)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var run, owner string
		var gen int64
		if err := rows.Scan(&run, &owner, &gen); err != nil {
			t.Fatal(err)
		}
		if !locked[run] && (owner != "r1" || gen != first[run].Generation) {
			t.Errorf("run %s: lease %s generation %d at the store, want r1's first claim (generation %d)", run, owner, gen, first[run].Generation)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a log destination safe for the runner's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (b *syncBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.b.String(), s)
}

// A runner whose lag is over MaxLag takes no new runs (they stay queued) until its lag is back
// under half of MaxLag, and says so once each way. The lag source is injected: each reading is
// one turn of the claim loop, so the test counts turns instead of timing the machine.
func TestHoldsBackClaimsWhileBehind(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	var lag atomic.Int64
	lag.Store(int64(200 * time.Millisecond))
	readings := make(chan time.Duration, 1000)
	logs := &syncBuffer{}
	d := newRecordingDriver()
	r := &Runner{Name: "r1", Store: st, Driver: d, Log: slog.New(slog.NewTextHandler(logs, nil)), PollEvery: 20 * time.Millisecond,
		MaxLag: 50 * time.Millisecond,
		Lag: func() time.Duration {
			v := time.Duration(lag.Load())
			select {
			case readings <- v:
			default:
			}
			return v
		}}
	// turns waits for k readings of the lag taken after it was called.
	turns := func(k int) {
		for len(readings) > 0 {
			<-readings
		}
		for range k {
			<-readings
		}
	}
	held := func(run string) bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.active[run] != nil
	}

	// A runner driving fewer runs than one claim takes (64) takes work whatever its lag.
	for i := range claimBatch {
		createRun(t, st, fmt.Sprintf("run-1-%02d", i))
	}
	run(t, r)
	for range claimBatch {
		if l := <-d.started; l.Run == "run-2" {
			t.Fatal("started run-2 before it was created")
		}
	}
	turns(1)
	createRun(t, st, "run-2")
	turns(5)
	if held("run-2") {
		t.Fatal("the runner claimed run-2 while its lag (200 ms) was over MaxLag (50 ms)")
	}
	// Under MaxLag but not under half of it: still behind.
	lag.Store(int64(40 * time.Millisecond))
	turns(5)
	if held("run-2") {
		t.Fatal("the runner claimed run-2 at a lag of 40 ms, not yet under half of MaxLag")
	}
	lag.Store(int64(20 * time.Millisecond))
	if l := <-d.started; l.Run != "run-2" {
		t.Fatalf("started %s, want run-2", l.Run)
	}
	if b, c := logs.count("runner is behind"), logs.count("runner caught up"); b != 1 || c != 1 {
		t.Errorf("logged 'runner is behind' %d times and 'runner caught up' %d times, want once each:\n%s", b, c, logs)
	}
}
