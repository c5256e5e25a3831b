package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"agentrun.dev/agentrun/internal/store"
)

// fullErr marks err as store.ErrStoreFull when PostgreSQL says its disk is full (SQLSTATE 53100
// disk_full), so the API answers 507 StoreFull and a runner waits for space instead of failing.
func fullErr(err error) error {
	if err == nil || errors.Is(err, store.ErrStoreFull) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "53100" {
		return fmt.Errorf("%w: %w", store.ErrStoreFull, err)
	}
	return err
}

// Ping reads the store's own migrations table through the pool, for /healthz: it fails when the
// database cannot be reached or the store's schema is gone.
func (s *Store) Ping(ctx context.Context) error {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		return fmt.Errorf("postgres ping: %w", readErr(ctx, err))
	}
	return nil
}
