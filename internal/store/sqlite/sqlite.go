// Package sqlite is the embedded store backend: one SQLite file in the data folder, in WAL mode,
// with a single writer connection (so write transactions never contend) and a pool of readers.
// It implements store.Store and passes the shared conformance suite in store/storetest
// (docs/architecture.md, "The store contract").
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/wake"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Store is the SQLite backend.
type Store struct {
	w     *sql.DB // the single writer connection
	r     *sql.DB // readers
	now   func() time.Time
	wake  *wake.Waker
	stmts *stmtCache
	// commits feeds the group committer (commitLoop), which stops when closed is closed.
	commits   chan *commitReq
	closed    chan struct{}
	closeOnce sync.Once
	loopDone  chan struct{}
	// path is the database file ("" for one in memory); inUse is its lock file, held shared
	// once HoldInUse is called (reseal.go).
	path  string
	inUse *os.File
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database at path and applies migrations.
func Open(path string) (*Store, error) {
	if err := createPrivate(path); err != nil {
		return nil, err
	}
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(FULL)&_pragma=foreign_keys(ON)&_txlock=immediate"
	w, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	r.SetMaxOpenConns(8)
	s := &Store{w: w, r: r, now: time.Now, wake: wake.New(), stmts: &stmtCache{db: w}, commits: make(chan *commitReq), closed: make(chan struct{}), loopDone: make(chan struct{})}
	if path != ":memory:" && !strings.HasPrefix(path, "file:") {
		s.path = path
	}
	if err := s.migrate(context.Background()); err != nil {
		w.Close()
		r.Close()
		return nil, err
	}
	go s.commitLoop()
	return s, nil
}

// createPrivate creates a new database file 0600 before SQLite opens it: SQLite would create it
// with the umask's mode (0644), readable by other users until the next start tightened it, and
// it gives its -wal and -shm files the main file's mode. An existing file is left to the data
// folder's check.
func createPrivate(path string) error {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create sqlite %s: %w", path, err)
	}
	return f.Close()
}

// Backend names the backend.
func (s *Store) Backend() string { return "sqlite" }

// Close stops the group committer and closes both pools.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	<-s.loopDone
	s.stmts.close()
	err := errors.Join(s.r.Close(), s.w.Close())
	if s.inUse != nil {
		s.inUse.Close() // lets go of the shared lock
	}
	return err
}

func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	s.stmts.prepareWanted(ctx)
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return fullErr(err)
	}
	return fullErr(tx.Commit())
}

// newUID is a resource's metadata.uid: a random (version 4) UUID.
var newUID = uuid.NewString

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

var mustJSON = store.MustJSON

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

func isUnique(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed") || err != nil && strings.Contains(err.Error(), "constraint failed: PRIMARY KEY")
}

type rowScanner interface{ Scan(...any) error }

func (s *Store) WaitWork(ctx context.Context, d time.Duration) {
	s.wake.WaitWork(ctx, d)
}

// WaitEvents blocks until an event is appended in this process, ctx ends, or d passes.
func (s *Store) WaitEvents(ctx context.Context, d time.Duration) {
	s.wake.WaitEvent(ctx, d)
}

// SetClock makes the store read the time from now instead of time.Now: a test that controls
// time (lease expiry, claimability) gives the store and the runner the same clock. Call it
// before the store is used.
func (s *Store) SetClock(now func() time.Time) { s.now = now }
