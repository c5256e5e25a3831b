package sqlite

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"agentrun.dev/agentrun/internal/store"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// fullErr marks err as store.ErrStoreFull when SQLite says the disk (or the database) is full,
// so the API answers 507 StoreFull and a runner waits for space instead of failing the run.
func fullErr(err error) error {
	if err == nil || errors.Is(err, store.ErrStoreFull) {
		return err
	}
	var se *sqlite.Error
	// The primary code is the low byte of an extended one.
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_FULL || strings.Contains(err.Error(), "database or disk is full") {
		return fmt.Errorf("%w: %w", store.ErrStoreFull, err)
	}
	return err
}

// Ping reads from the database file through the reader pool: it fails when the file cannot be
// read (a lost lock, an I/O error), which is what /healthz asks.
func (s *Store) Ping(ctx context.Context) error {
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		return fmt.Errorf("sqlite ping: %w", err)
	}
	return nil
}
