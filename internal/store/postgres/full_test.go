package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"agentrun.dev/agentrun/internal/store"
)

// TestDiskFullIsStoreFull: PostgreSQL's disk_full (53100), as the driver reports it through the
// retry loop every transaction uses, is store.ErrStoreFull; other errors are not.
func TestDiskFullIsStoreFull(t *testing.T) {
	full := &pgconn.PgError{Code: "53100", Message: `could not extend file "base/16384/16385": No space left on device`}
	err := retry(context.Background(), func() (error, bool) { return fmt.Errorf("insert step: %w", full), false })
	if !errors.Is(err, store.ErrStoreFull) {
		t.Fatalf("disk_full through retry: %v, want ErrStoreFull", err)
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53100" {
		t.Errorf("the driver's error is lost: %v", err)
	}
	other := &pgconn.PgError{Code: "23505"}
	if err := retry(context.Background(), func() (error, bool) { return other, false }); errors.Is(err, store.ErrStoreFull) {
		t.Errorf("unique_violation reads as full: %v", err)
	}
}
