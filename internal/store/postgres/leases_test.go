package postgres

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// A renewal that runs out of time waiting for a locked row still reports what it did: the lease
// it extended, and the lease another runner took (found stale without waiting for any lock); only
// the locked one is unknown.
func TestRenewCutShortReportsWhatItDid(t *testing.T) {
	t.Parallel()
	base, admin := testDB(t)
	u := freshSchema(t, base, admin)
	s := mustOpen(t, u)
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	for _, name := range []string{"free", "locked", "taken"} {
		r := &api.AgentRun{Metadata: api.ObjectMeta{Name: name}, Spec: api.AgentRunSpec{Agent: "a", Input: "x"}, Status: api.AgentRunStatus{Phase: api.PhaseQueued, AgentRevision: 1}}
		if err := s.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	claimed, err := s.ClaimRuns(ctx, "r1", 10, time.Minute)
	if err != nil || len(claimed) != 3 {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	leases := map[string]store.Lease{}
	for _, l := range claimed {
		leases[l.Run] = l
	}
	runs := pgx.Identifier{schemaOfURL(t, u), "runs"}.Sanitize()
	// Another runner's claim of "taken" (a newer generation), and a transaction holding "locked".
	if _, err := admin.Exec(ctx, `UPDATE `+runs+` SET lease_owner = 'r2', lease_generation = lease_generation + 1 WHERE name = 'taken'`); err != nil {
		t.Fatal(err)
	}
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+runs+` WHERE name = 'locked' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	var before time.Time
	if err := admin.QueryRow(ctx, `SELECT lease_expires_at FROM `+runs+` WHERE name = 'free'`).Scan(&before); err != nil {
		t.Fatal(err)
	}

	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	renewed, lost, err := s.RenewLeases(rctx, []store.Lease{leases["locked"], leases["free"], leases["taken"]}, time.Hour)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RenewLeases with a row held locked past its deadline: err %v, want the deadline", err)
	}
	if len(renewed) != 1 || renewed[0] != leases["free"] {
		t.Errorf("renewed %+v, want exactly the lease on free", renewed)
	}
	if len(lost) != 1 || lost[0] != leases["taken"] {
		t.Errorf("lost %+v, want exactly the lease on taken", lost)
	}
	var after time.Time
	if err := admin.QueryRow(ctx, `SELECT lease_expires_at FROM `+runs+` WHERE name = 'free'`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if !after.After(before.Add(30 * time.Minute)) {
		t.Errorf("free's lease expires at %v, was %v: not extended by an hour", after, before)
	}
}

// schemaOfURL is the search_path freshSchema put in u.
func schemaOfURL(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Query().Get("search_path")
}
