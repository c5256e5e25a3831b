// Package postgres is the PostgreSQL store backend (AGENTRUN_STORE_URL=postgres://...), for a
// server and runners spread over several machines. It owns the agentrun tables in the first schema
// of the connection's search path, created by versioned migrations that Open applies under a
// transaction-scoped advisory lock (so processes starting together apply each exactly once), and
// implements store.Store on a pgx pool, one transaction per operation (fenced commits and the
// server's hot writes are grouped into shared transactions: group.go), with lease times taken from
// the database clock so that every machine agrees on them. A runner claims runs with one UPDATE
// over rows picked by SELECT ... FOR UPDATE SKIP LOCKED (unleased runs whose claimable time has
// come, and runs whose lease has expired), which bumps each run's lease generation; Commit locks
// the run row and applies nothing unless owner and generation still match. Waiters are woken by
// LISTEN/NOTIFY: creating, poking or releasing a run and expiring leases notify agentrun_work,
// appending events notifies agentrun_events (payload: the run name), and each Store holds one
// dedicated listening connection, owned by a goroutine that reconnects with backoff if the
// connection drops and stops on Close; changes made through a Store also wake its own waiters
// directly. See docs/architecture.md, "The store contract".
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/wake"
)

// Store is the PostgreSQL backend.
type Store struct {
	pool *pgxpool.Pool
	// commitPool holds the group committers' connections (one each), so a commit never queues
	// behind the reads waiting for pool; ctlPool (ctl for its reads) the runner's claims, lease
	// renewals, heartbeats and cancellation checks, so that a runner busy with thousands of runs
	// still renews their leases in time (queued behind the runs' reads, a renewal of 4,000 leases
	// outlasted the runner's 5 s bound and every run it held was self-fenced).
	commitPool *pgxpool.Pool
	ctlPool    *pgxpool.Pool
	ctl        reads
	// read runs the statements outside a transaction (reads, mostly) on pool.
	read   reads
	wake   *wake.Waker
	lis    *listener
	events *eventNotifier
	revs   revCache
	// credits caches whether credits are enforced (credits.go).
	credits creditsCache
	// text sends the model's live text (text.go), started by the first SendText.
	text     *textNotifier
	textOnce sync.Once

	// life ends when the store closes (stopLife); commits feeds the group committers
	// (commitLoop, group.go), which leave loops when they have stopped.
	life     context.Context
	stopLife context.CancelFunc
	commits  chan *commitReq
	ahead    aheadQueue // CommitAhead's writes (group.go)
	loops    sync.WaitGroup
	// waiting counts writes waiting for a committer to take them; batches counts the batches
	// sent (tests read both).
	waiting atomic.Int64
	batches atomic.Int64
	// workKick asks workNotifyLoop for one agentrun_work notification (notifyWorkSoon).
	workKick chan struct{}

	// inUse holds the store in use for this process (reseal.go), once HoldInUse is called.
	inUse *inUseHold

	closeOnce sync.Once
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url (a postgres:// URL or a key=value DSN; pgx pool settings
// such as pool_max_conns and runtime parameters such as search_path are honoured), applies the
// migrations and starts listening for notifications. Tables are created in the first schema of
// the search path. ctx bounds the start-up only.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open postgres: parse url: %w", err)
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "agentrun"
	}
	cfg.ShouldPing = shouldPing
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres %s: %w", redact(cfg.ConnConfig), err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres %s: %w", redact(cfg.ConnConfig), err)
	}
	s := &Store{pool: pool, read: reads{pool}, wake: wake.New()}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	lcfg := cfg.ConnConfig.Copy()
	lcfg.RuntimeParams["application_name"] += " (listener)"
	lis, err := startListener(ctx, lcfg, s.wake, &s.credits.on)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres %s: %w", redact(cfg.ConnConfig), err)
	}
	s.lis = lis
	// As many committers as the pool may have connections, at most committers: a URL that
	// sets pool_max_conns low keeps the store's connections low.
	n := min(committers, int(cfg.MaxConns))
	ccfg := cfg.Copy()
	ccfg.MaxConns, ccfg.MinConns = int32(n), 0
	ccfg.ConnConfig.RuntimeParams["application_name"] += " (commits)"
	if s.commitPool, err = pgxpool.NewWithConfig(ctx, ccfg); err != nil {
		lis.stop()
		pool.Close()
		return nil, fmt.Errorf("open postgres %s: %w", redact(cfg.ConnConfig), err)
	}
	kcfg := cfg.Copy()
	kcfg.MaxConns, kcfg.MinConns = int32(min(2, int(cfg.MaxConns))), 0
	kcfg.ConnConfig.RuntimeParams["application_name"] += " (leases)"
	if s.ctlPool, err = pgxpool.NewWithConfig(ctx, kcfg); err != nil {
		s.commitPool.Close()
		lis.stop()
		pool.Close()
		return nil, fmt.Errorf("open postgres %s: %w", redact(cfg.ConnConfig), err)
	}
	s.ctl = reads{s.ctlPool}
	s.events = newEventNotifier(s)
	s.life, s.stopLife = context.WithCancel(context.Background())
	s.commits, s.workKick = make(chan *commitReq), make(chan struct{}, 1)
	s.ahead.kick = make(chan struct{}, 1)
	s.loops.Add(1)
	go s.workNotifyLoop()
	for range n {
		s.loops.Add(1)
		go s.commitLoop()
	}
	return s, nil
}

func redact(c *pgx.ConnConfig) string {
	return fmt.Sprintf("%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
}

// Backend names the backend.
func (s *Store) Backend() string { return "postgres" }

// Close stops the listener and closes the pool. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.stopLife != nil {
			s.stopLife() // ends the batches in flight; commits still waiting are refused
			s.loops.Wait()
		}
		if s.events != nil {
			s.events.close()
		}
		s.textOnce.Do(func() {}) // no notifier starts after this
		if s.text != nil {
			s.text.close()
		}
		if s.lis != nil {
			s.lis.stop()
		}
		if s.inUse != nil {
			s.inUse.stop()
		}
		if s.commitPool != nil {
			s.commitPool.Close()
		}
		if s.ctlPool != nil {
			s.ctlPool.Close()
		}
		s.pool.Close()
	})
	return nil
}

// ---- transactions and errors ----

const maxAttempts = 4

// tx runs fn in one transaction and commits it. When the transaction certainly applied nothing
// (a deadlock or serialization failure, or a connection lost before COMMIT was sent) it runs fn
// again, a few times, in a new transaction; fn must therefore only act through tx. A COMMIT whose
// outcome is unknown is never retried.
func (s *Store) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	return txOn(ctx, s.pool, fn)
}

// ctlTx is tx on the runner control connections (ctlPool).
func (s *Store) ctlTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return txOn(ctx, s.ctlPool, fn)
}

// txOn is tx on the given pool.
func txOn(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	return retry(ctx, func() (error, bool) { return tryTx(ctx, pool, fn) })
}

// retry runs try until it succeeds, fails in a way that may have applied something (a failure
// while committing that does not prove a rollback), ctx ends, or maxAttempts are used, backing
// off between attempts; an error from an unreachable database says store.ErrUnavailable.
func retry(ctx context.Context, try func() (err error, committing bool)) error {
	backoff := 25 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err, committing := try()
		if err != nil && unreachable(err) {
			noteConnFailure()
		}
		if err == nil || attempt == maxAttempts || ctx.Err() != nil || !retryable(err, committing) {
			if err != nil && ctx.Err() == nil && unreachable(err) {
				err = fmt.Errorf("%w: %w", store.ErrUnavailable, err)
			}
			return fullErr(err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff *= 3
	}
}

func tryTx(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) (err error, committing bool) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err, false
	}
	if err := fn(tx); err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = tx.Rollback(rctx) // a broken connection is closed and dropped from the pool
		cancel()
		return err, false
	}
	return tx.Commit(ctx), true
}

// pipe sends the statements build queues as one pipelined batch: one round trip, run by
// PostgreSQL as one implicit transaction (the statements before the batch's Sync commit together,
// and a failing statement aborts them all). Like tx it runs the batch again, a few times, when
// it certainly applied nothing; build is called again each time. The batch must not hold
// transaction control statements.
func (s *Store) pipe(ctx context.Context, build func(b *pgx.Batch)) error {
	return pipeOn(ctx, s.pool, build)
}

// pipeOn is pipe on the given pool.
func pipeOn(ctx context.Context, pool *pgxpool.Pool, build func(b *pgx.Batch)) error {
	return retry(ctx, func() (error, bool) {
		b := &pgx.Batch{}
		build(b)
		if b.Len() == 0 {
			return nil, false
		}
		// The commit happens at the batch's end: an error that does not prove a rollback leaves
		// the outcome unknown, as for a failed COMMIT.
		return pool.SendBatch(ctx, b).Close(), true
	})
}

// SQLSTATEs raised by agentrun_raise in the statements of a pipelined commit.
const (
	// errFencedCode: the lease is stale (store.ErrFenced).
	errFencedCode = "AR001"
	// errStepCode: a step completed, interrupted or failed that was never started.
	errStepCode = "AR002"
)

func isCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// retryable reports whether err proves the transaction applied nothing, so it may run again.
// Before COMMIT is sent any failure rolls the transaction back; a failed COMMIT is retried only
// when the server reports a rollback (a connection killed during COMMIT may have committed).
func retryable(err error, committing bool) bool {
	if pgconn.SafeToRetry(err) { // nothing was sent
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "40001", pe.Code == "40P01": // serialization_failure, deadlock_detected
			return true
		case committing:
			return false
		case strings.HasPrefix(pe.Code, "08"), strings.HasPrefix(pe.Code, "57P"): // connection lost, shutdown
			return true
		}
		return false
	}
	if committing {
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// unreachable reports a failure of the connection or the server (not of the statement): the
// caller may try again later; a commit it interrupted may or may not have happened.
func unreachable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P") || pe.Code == "53300" // too_many_connections
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err)
}

// reads runs statements outside a transaction on the pool. Their errors say ErrUnavailable when
// the database could not be reached (restarting, connection killed), as tx's do, so a run reading
// is retried, not failed, and the API answers "unavailable" rather than an internal error.
type reads struct{ pool *pgxpool.Pool }

func (r reads) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := r.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, readErr(ctx, err)
	}
	return readRows{rows, ctx}, nil
}

func (r reads) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return readRow{r.pool.QueryRow(ctx, sql, args...), ctx}
}

func (r reads) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := r.pool.Exec(ctx, sql, args...)
	return tag, readErr(ctx, err)
}

type readRow struct {
	pgx.Row
	ctx context.Context
}

func (r readRow) Scan(dest ...any) error { return readErr(r.ctx, r.Row.Scan(dest...)) }

type readRows struct {
	pgx.Rows
	ctx context.Context
}

func (r readRows) Err() error { return readErr(r.ctx, r.Rows.Err()) }

func (r readRows) Scan(dest ...any) error { return readErr(r.ctx, r.Rows.Scan(dest...)) }

// readErr marks err as ErrUnavailable when it says the database could not be reached.
func readErr(ctx context.Context, err error) error {
	if err != nil && unreachable(err) {
		noteConnFailure()
	}
	if err != nil && ctx.Err() == nil && unreachable(err) {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}

// lastConnFailure is when (Unix nanoseconds) an operation of this process last failed because a
// connection or the server failed (a restart, a killed backend): see shouldPing.
var lastConnFailure atomic.Int64

func noteConnFailure() { lastConnFailure.Store(time.Now().UnixNano()) }

// shouldPing is the pools' liveness check of a connection handed out: pgx's default (a
// connection idle for a second is pinged first) and also one that sat idle while a connection
// failure was seen. A PostgreSQL restart or a killed backend leaves the pool's idle connections
// dead; a commit sent on one fails with its outcome unknown (ErrUnavailable, the run retried),
// so once one operation has seen such a failure the others check their connection before use.
func shouldPing(_ context.Context, p pgxpool.ShouldPingParams) bool {
	if p.IdleDuration >= time.Second {
		return true
	}
	return time.Now().Add(-p.IdleDuration).UnixNano() <= lastConnFailure.Load()
}

func isUnique(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" // unique_violation
}

func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}

// ---- notifications ----

const (
	chanWork   = "agentrun_work"
	chanEvents = "agentrun_events"
	// chanCredits: credits were added (payload: the schema), so they are enforced from now on.
	chanCredits = "agentrun_credits"
)

// notifyWork tells every listening store (at commit) that runs may have become claimable.
func notifyWork(ctx context.Context, tx pgx.Tx, run string) error {
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, chanWork, run)
	return err
}

// ---- helpers ----

// newUID is a resource's metadata.uid: a random (version 4) UUID.
var newUID = uuid.NewString

var mustJSON = store.MustJSON

// nullJSON passes raw JSON to a json column, empty as NULL.
func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return []byte(b)
}

// rawJSON returns a json column read as bytes, NULL as nil.
func rawJSON(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

// pgText makes free-form text storable in a text column: PostgreSQL refuses NUL bytes and
// invalid UTF-8, which tool output may carry; each becomes U+FFFD.
func pgText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

func utc(t time.Time) time.Time { return t.UTC() }

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// micros converts a duration to whole microseconds for `$n * interval '1 microsecond'`.
func micros(d time.Duration) int64 { return d.Microseconds() }
