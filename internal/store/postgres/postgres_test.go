package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/storetest"
)

const urlEnv = "AGENTRUN_TEST_POSTGRES_URL"

// testDB returns the test database URL and an admin pool on it, or skips the test.
func testDB(t *testing.T) (string, *pgxpool.Pool) {
	t.Helper()
	base := os.Getenv(urlEnv)
	if base == "" {
		t.Skip("PostgreSQL tests skipped: set " + urlEnv + " (CI does)")
	}
	admin, err := pgxpool.New(context.Background(), base)
	if err != nil {
		t.Fatalf("connect to %s: %v", urlEnv, err)
	}
	t.Cleanup(admin.Close)
	return base, admin
}

// freshSchema creates an empty schema, dropped when t ends, and returns base with its
// search_path set to it.
func freshSchema(t *testing.T, base string, admin *pgxpool.Pool) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	schema := "s_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	if _, err := admin.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return withSearchPath(t, base, schema)
}

func withSearchPath(t *testing.T, base, schema string) string {
	t.Helper()
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		u, err := url.Parse(base)
		if err != nil {
			t.Fatalf("parse %s: %v", urlEnv, err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		// Many subtests run at once, each with its own store; small pools keep the whole suite
		// (and the e2e tests running beside it) under the server's max_connections.
		if q.Get("pool_max_conns") == "" {
			q.Set("pool_max_conns", "2")
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	return base + " search_path=" + schema + " pool_max_conns=2" // key=value DSN
}

func mustOpen(t *testing.T, u string) *Store {
	t.Helper()
	s, err := Open(context.Background(), u)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// TestConformance runs the shared store suite against a fresh schema per subtest.
func TestConformance(t *testing.T) {
	base, admin := testDB(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		// The schema's cleanup is registered first, so it runs after the suite closes the store.
		return mustOpen(t, freshSchema(t, base, admin))
	})
}

// TestConcurrentOpenMigratesOnce opens one fresh schema from many goroutines at once: every Open
// succeeds and each migration is recorded exactly once.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	base, admin := testDB(t)
	u := freshSchema(t, base, admin)
	const n = 8
	stores := make([]*Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			stores[i], errs[i] = Open(context.Background(), u)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open #%d: %v", i, err)
		} else {
			defer stores[i].Close()
		}
	}
	if t.Failed() {
		return
	}
	var rows, versions, maxV int
	if err := stores[0].pool.QueryRow(context.Background(),
		`SELECT count(*), count(DISTINCT version), max(version) FROM schema_migrations`).Scan(&rows, &versions, &maxV); err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	if rows != len(migrations) || versions != len(migrations) || maxV != len(migrations) {
		t.Errorf("schema_migrations has %d rows, %d versions, max %d; want each of the %d migrations once", rows, versions, maxV, len(migrations))
	}
	// Every store works on the same tables.
	for i, s := range stores {
		r := &api.AgentRun{Metadata: api.ObjectMeta{Name: "run-" + string(rune('a'+i))}, Spec: api.AgentRunSpec{Agent: "a"}, Status: api.AgentRunStatus{Phase: api.PhaseQueued}}
		if err := s.CreateRun(context.Background(), r); err != nil {
			t.Fatalf("CreateRun through store #%d: %v", i, err)
		}
	}
	if runs, err := stores[0].ListRuns(context.Background(), store.RunFilter{}); err != nil || len(runs) != n {
		t.Errorf("ListRuns = %d runs, %v; want %d", len(runs), err, n)
	}
	// Opening again applies nothing new.
	again := mustOpen(t, u)
	defer again.Close()
	var after int
	if err := again.pool.QueryRow(context.Background(), `SELECT count(*) FROM schema_migrations`).Scan(&after); err != nil || after != len(migrations) {
		t.Errorf("after another Open, schema_migrations has %d rows (%v), want %d", after, err, len(migrations))
	}
}

// TestOpenNeedsASchema refuses a search_path that names no existing schema.
func TestOpenNeedsASchema(t *testing.T) {
	base, _ := testDB(t)
	s, err := Open(context.Background(), withSearchPath(t, base, "s_does_not_exist"))
	if err == nil {
		s.Close()
		t.Fatal("Open with a search_path naming no schema succeeded, want an error")
	}
}

// returnsWithin reports whether f returns within d.
func returnsWithin(f func(), d time.Duration) bool {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// startWait runs f and returns a channel closed when it returns, after giving it a moment to
// start waiting.
func startWait(f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	time.Sleep(50 * time.Millisecond)
	return done
}

func within(t *testing.T, what string, done <-chan struct{}, d time.Duration) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: did not return within %v", what, d)
	}
}

// TestWakeAcrossStores checks that WaitWork and WaitEvents in one store wake on changes made
// through another store (another process, as far as the wake-up path goes), by NOTIFY alone.
func TestWakeAcrossStores(t *testing.T) {
	base, admin := testDB(t)
	u := freshSchema(t, base, admin)
	a, b := mustOpen(t, u), mustOpen(t, u)
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	const prompt = 2 * time.Second

	done := startWait(func() { a.WaitWork(ctx, time.Hour) })
	if err := b.CreateRun(ctx, &api.AgentRun{Metadata: api.ObjectMeta{Name: "run-1"}, Spec: api.AgentRunSpec{Agent: "x"}, Status: api.AgentRunStatus{Phase: api.PhaseQueued}}); err != nil {
		t.Fatal(err)
	}
	within(t, "WaitWork in store A after store B created a run", done, prompt)

	l, err := b.ClaimRuns(ctx, "runner-b", 1, time.Minute)
	if err != nil || len(l) != 1 {
		t.Fatalf("ClaimRuns = %v, %v", l, err)
	}
	done = startWait(func() { a.WaitEvents(ctx, time.Hour) })
	if _, err := b.Commit(ctx, l[0], store.Write{Events: []api.Event{{Type: "Note", Message: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	within(t, "WaitEvents in store A after store B committed an event", done, prompt)

	done = startWait(func() { a.WaitEvents(ctx, time.Hour) })
	if err := b.AppendEvents(ctx, "run-1", []api.Event{{Type: "Note"}}); err != nil {
		t.Fatal(err)
	}
	within(t, "WaitEvents in store A after store B appended an event", done, prompt)

	if _, err := b.Commit(ctx, l[0], store.Write{Release: true}); err != nil {
		t.Fatal(err)
	}
	done = startWait(func() { a.WaitWork(ctx, time.Hour) })
	if _, _, err := b.AddMessage(ctx, "run-1", "", "poke"); err != nil {
		t.Fatal(err)
	}
	within(t, "WaitWork in store A after store B poked a run", done, prompt)

	// Still bounded by d when nothing happens.
	if !returnsWithin(func() { a.WaitWork(ctx, 100*time.Millisecond) }, prompt) {
		t.Error("WaitWork(100ms) with no changes did not return")
	}
}

// TestListenerReconnects kills the listening connection's backend and checks that the store
// reconnects and wakes on notifications again.
func TestListenerReconnects(t *testing.T) {
	base, admin := testDB(t)
	u := freshSchema(t, base, admin)
	a, b := mustOpen(t, u), mustOpen(t, u)
	defer a.Close()
	defer b.Close()
	ctx := context.Background()

	old := a.lis.backendPID()
	if old == 0 {
		t.Fatal("listener has no connection after Open")
	}
	// The reconnection itself wakes waiters (notifications may have been lost meanwhile).
	done := startWait(func() { a.WaitWork(ctx, time.Hour) })
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, int32(old)); err != nil {
		t.Fatal(err)
	}
	within(t, "WaitWork after the listening connection was killed", done, 10*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if pid := a.lis.backendPID(); pid != 0 && pid != old {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("listener did not reconnect within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	done = startWait(func() { a.WaitWork(ctx, time.Hour) })
	if err := b.CreateRun(ctx, &api.AgentRun{Metadata: api.ObjectMeta{Name: "run-1"}, Spec: api.AgentRunSpec{Agent: "x"}, Status: api.AgentRunStatus{Phase: api.PhaseQueued}}); err != nil {
		t.Fatal(err)
	}
	within(t, "WaitWork after reconnecting, when another store created a run", done, 2*time.Second)
}

// TestCloseStopsListener checks that Close ends the listener goroutine and is idempotent.
func TestCloseStopsListener(t *testing.T) {
	base, admin := testDB(t)
	s := mustOpen(t, freshSchema(t, base, admin))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.lis.done:
	default:
		t.Error("listener goroutine still running after Close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestTextAndBytesRoundTrip checks values PostgreSQL is picky about: NUL bytes in a message
// payload and in JSON strings (json, unlike jsonb, keeps \u0000), and JSON null results.
func TestTextAndBytesRoundTrip(t *testing.T) {
	base, admin := testDB(t)
	s := mustOpen(t, freshSchema(t, base, admin))
	defer s.Close()
	ctx := context.Background()
	r := &api.AgentRun{Metadata: api.ObjectMeta{Name: "run-1"}, Spec: api.AgentRunSpec{Agent: "x", Input: "nul \x00 here"}, Status: api.AgentRunStatus{Phase: api.PhaseQueued}}
	if err := s.CreateRun(ctx, r); err != nil {
		t.Fatalf("CreateRun with a NUL in the input: %v", err)
	}
	if got, err := s.GetRun(ctx, "run-1"); err != nil || got.Spec.Input != "nul \x00 here" {
		t.Errorf("GetRun input = %q, %v", got.Spec.Input, err)
	}
	m, _, err := s.AddMessage(ctx, "run-1", "", "bin \x00\xff")
	if err != nil {
		t.Fatalf("AddMessage with NUL and invalid UTF-8: %v", err)
	}
	if msgs, err := s.ListMessages(ctx, "run-1", 0); err != nil || len(msgs) != 1 || msgs[0].Payload != "bin \x00\xff" || msgs[0].Seq != m.Seq {
		t.Errorf("ListMessages = %+v, %v", msgs, err)
	}
	l, err := s.ClaimRuns(ctx, "r", 1, time.Minute)
	if err != nil || len(l) != 1 {
		t.Fatalf("ClaimRuns = %v, %v", l, err)
	}
	now := time.Now()
	st := api.Step{Key: "k", Kind: "tool", State: api.StepStarted, Attempt: 1, StartedAt: now, Title: "t\x00"}
	done := st
	done.State, done.Result, done.CompletedAt, done.Error = api.StepCompleted, []byte(`null`), &now, "bad \x00 output"
	if _, err := s.Commit(ctx, l[0], store.Write{Steps: []api.Step{st, done}, Events: []api.Event{{Type: "Out", Message: "x\x00y"}}}); err != nil {
		t.Fatalf("Commit with NULs in free text: %v", err)
	}
	steps, err := s.ListSteps(ctx, "run-1")
	if err != nil || len(steps) != 1 || string(steps[0].Result) != "null" || steps[0].Error != "bad \uFFFD output" {
		t.Errorf("ListSteps = %+v, %v", steps, err)
	}
}

// TestSurvivesKilledConnections kills every connection of a store again and again while it
// commits: operations may fail, but nothing is half applied (event seqs stay 1..n with no gaps,
// and every acknowledged commit is there), and the store works normally afterwards.
func TestSurvivesKilledConnections(t *testing.T) {
	base, admin := testDB(t)
	var b [4]byte
	rand.Read(b[:])
	app := "agentrun_kill_" + hex.EncodeToString(b[:])
	u := freshSchema(t, base, admin)
	if strings.Contains(u, "://") {
		u += "&application_name=" + app
	} else {
		u += " application_name=" + app
	}
	s := mustOpen(t, u)
	defer s.Close()
	ctx := context.Background()
	if err := s.CreateRun(ctx, &api.AgentRun{Metadata: api.ObjectMeta{Name: "run-1"}, Spec: api.AgentRunSpec{Agent: "x"}, Status: api.AgentRunStatus{Phase: api.PhaseQueued}}); err != nil {
		t.Fatal(err)
	}
	ls, err := s.ClaimRuns(ctx, "r", 1, time.Hour)
	if err != nil || len(ls) != 1 {
		t.Fatalf("ClaimRuns = %v, %v", ls, err)
	}
	stop := make(chan struct{})
	var killed int
	var killer sync.WaitGroup
	killer.Add(1)
	go func() {
		defer killer.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(30 * time.Millisecond):
			}
			var n int
			if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name LIKE $1 || '%'`, app).Scan(&n); err == nil {
				killed += n
			}
		}
	}()
	var ok, failed, readsFailed int
	until := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(until) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := s.Commit(cctx, ls[0], store.Write{Events: []api.Event{{Type: "Tick"}}})
		cancel()
		if err != nil {
			failed++
		} else {
			ok++
		}
		// A read that a killed connection fails says the store is unavailable (a run retries it),
		// never a plain error (which would fail the run).
		cctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		_, rerr := s.GetRun(cctx, "run-1")
		if rerr == nil {
			_, rerr = s.ListMessages(cctx, "run-1", 0)
		}
		cancel()
		if rerr != nil {
			readsFailed++
			if !errors.Is(rerr, store.ErrUnavailable) {
				t.Errorf("a read on a killed connection: %v, want ErrUnavailable", rerr)
			}
		}
	}
	close(stop)
	killer.Wait()
	t.Logf("%d commits acknowledged, %d failed, %d reads failed while %d connections were killed", ok, failed, readsFailed, killed)
	if killed == 0 {
		t.Fatal("no connection was killed")
	}

	var evs []api.Event
	deadline := time.Now().Add(10 * time.Second)
	for {
		if evs, err = s.ListEvents(ctx, "run-1", 0, 0); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ListEvents after the kills: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(evs) < ok || len(evs) > ok+failed {
		t.Errorf("%d events stored, want between %d (acknowledged) and %d (attempted)", len(evs), ok, ok+failed)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d, want %d (no gaps or repeats)", i, e.Seq, i+1)
		}
	}
	// Works again, wake-ups included (the listener reconnected).
	deadline = time.Now().Add(10 * time.Second)
	for s.lis.backendPID() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("listener did not reconnect")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The pool may still hold a connection the killer's last round ended while it sat idle: its
	// first use says the store is unavailable, which a run retries, as this does.
	for {
		_, err := s.Commit(ctx, ls[0], store.Write{Events: []api.Event{{Type: "After"}}})
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("Commit after the kills: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCreditsEnforcedAcrossStores: a store that found credits not enforced (and so stops reading
// the account row for a while) enforces them once another store adds credits, through the
// agentrun_credits notification, without waiting for its cache to expire.
func TestCreditsEnforcedAcrossStores(t *testing.T) {
	base, admin := testDB(t)
	u := freshSchema(t, base, admin)
	a, b := mustOpen(t, u), mustOpen(t, u)
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	if err := a.CreateAgent(ctx, &api.Agent{Metadata: api.ObjectMeta{Name: "x"}}); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateRun(ctx, &api.AgentRun{Metadata: api.ObjectMeta{Name: "run-1"}, Spec: api.AgentRunSpec{Agent: "x"}, Status: api.AgentRunStatus{Phase: api.PhaseQueued}}); err != nil {
		t.Fatal(err)
	}
	ls, err := a.ClaimRuns(ctx, "runner-a", 1, time.Minute)
	if err != nil || len(ls) != 1 {
		t.Fatalf("ClaimRuns = %v, %v", ls, err)
	}
	r := store.Reservation{Run: "run-1", StepKey: "t0/model", Attempt: 1, Amount: 2000}
	if res, err := a.ReserveCredits(ctx, ls[0], r); err != nil || res.Enforced {
		t.Fatalf("reserve before any add = %+v, %v; want not enforced", res, err)
	}
	if _, err := b.AddCredits(ctx, 1000, "from b"); err != nil {
		t.Fatal(err)
	}
	// Only the notification can tell a now: a makes no read of the account row meanwhile.
	for deadline := time.Now().Add(10 * time.Second); !a.credits.on.Load(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("store a was not told that store b added credits")
		}
	}
	res, err := a.ReserveCredits(ctx, ls[0], r)
	if err != nil || !res.Enforced || res.OK || res.Available != 1000 {
		t.Fatalf("reserve 2000 of 1000 after the add = %+v, %v; want enforced and refused", res, err)
	}
}
