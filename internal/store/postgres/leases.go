package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// claimSQL leases up to $3 runs to $1 for $2 microseconds, in one statement. The candidates are
// unleased runs whose claimable time has come and leased runs whose lease has run out (by the
// database clock), oldest first, locked with FOR UPDATE SKIP LOCKED so concurrent claimers skip
// each other's picks instead of waiting or double-claiming. (A row changed by a claimer that
// committed meanwhile is re-checked against the WHERE clause before it is locked.) The pick is an
// ARRAY(...) sub-select, an InitPlan that runs exactly once, so the LIMIT and the locks apply to
// exactly the rows updated. The candidates come from two sub-selects, each walking its partial
// index (runs_claimable, runs_leased) rather than the whole table (finished runs included); they
// take four times the batch so that claimers skipping each other's locks still fill theirs.
const claimSQL = `
UPDATE runs SET lease_owner = $1,
	lease_expires_at = now() + $2::bigint * interval '1 microsecond',
	lease_generation = lease_generation + 1
WHERE name = ANY (ARRAY(
	SELECT name FROM runs
	WHERE name = ANY (ARRAY(
		(SELECT name FROM runs
		 WHERE lease_owner IS NULL AND claimable_at IS NOT NULL AND claimable_at <= now() AND admitted
		 ORDER BY claimable_at LIMIT 4 * $3)
		UNION ALL
		(SELECT name FROM runs
		 WHERE lease_owner IS NOT NULL AND lease_expires_at < now()
		 ORDER BY lease_expires_at LIMIT 4 * $3)))
	  AND ((lease_owner IS NULL AND claimable_at <= now() AND admitted)
	    OR (lease_owner IS NOT NULL AND lease_expires_at < now()))
	ORDER BY COALESCE(lease_expires_at, claimable_at), name
	LIMIT $3
	FOR UPDATE SKIP LOCKED))
RETURNING name, lease_generation, poke_seq, lease_expires_at`

// ClaimSQL is the claim statement ($1 owner, $2 lease in microseconds, $3 batch), for the
// benchmark's EXPLAIN, so it always shows the query the store runs.
const ClaimSQL = claimSQL

// ClaimRuns leases up to max claimable runs to owner for ttl.
func (s *Store) ClaimRuns(ctx context.Context, owner string, max int, ttl time.Duration) ([]store.Lease, error) {
	if max <= 0 {
		return nil, nil
	}
	var out []store.Lease
	err := s.tx(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, claimSQL, owner, micros(ttl), max)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			l := store.Lease{Owner: owner}
			if err := rows.Scan(&l.Run, &l.Generation, &l.PokeSeq, &l.ExpiresAt); err != nil {
				return err
			}
			l.ExpiresAt = utc(l.ExpiresAt)
			out = append(out, l)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("claim runs for %s: %w", owner, err)
	}
	return out, nil
}

// ExpireLeases ends every lease held by owner so its runs are claimable at once.
func (s *Store) ExpireLeases(ctx context.Context, owner string) (int, error) {
	var n int64
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE runs SET lease_expires_at = now() - interval '1 millisecond' WHERE lease_owner = $1`, owner)
		if err != nil {
			return err
		}
		if n = tag.RowsAffected(); n > 0 {
			return notifyWork(ctx, tx, "")
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("expire leases of %s: %w", owner, err)
	}
	if n > 0 {
		s.wake.Poke()
	}
	return int(n), nil
}

// RenewLeases extends the given leases by ttl from now (database clock) and returns those no
// longer held. The updates go in one pipelined batch, in run-name order so that two renewals
// sharing runs cannot deadlock.
func (s *Store) RenewLeases(ctx context.Context, leases []store.Lease, ttl time.Duration) ([]store.Lease, error) {
	if len(leases) == 0 {
		return nil, nil
	}
	order := make([]int, len(leases))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return leases[order[a]].Run < leases[order[b]].Run })
	held := make([]bool, len(leases))
	err := s.tx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, i := range order {
			l := leases[i]
			b.Queue(`UPDATE runs SET lease_expires_at = now() + $4::bigint * interval '1 microsecond' WHERE name = $1 AND lease_owner = $2 AND lease_generation = $3`,
				l.Run, l.Owner, l.Generation, micros(ttl)).Exec(func(tag pgconn.CommandTag) error {
				held[i] = tag.RowsAffected() > 0
				return nil
			})
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return nil, fmt.Errorf("renew %d leases: %w", len(leases), err)
	}
	var lost []store.Lease
	for i, l := range leases {
		if !held[i] {
			lost = append(lost, l)
		}
	}
	return lost, nil
}

// Commit applies w under the lease, atomically, or returns ErrFenced and applies nothing.
//
// The run row is locked (SELECT ... FOR UPDATE) only if owner and generation still match; that
// lock is held to the end of the transaction, so the fence cannot change under the write, and
// it also serializes the run's sequence counters, which are read there and written back once.
// Everything else goes to the server in one pipelined batch.
func (s *Store) Commit(ctx context.Context, l store.Lease, w store.Write) (store.Signals, error) {
	var sig store.Signals
	var phase string
	// Keys of Started steps, to learn which already have a row (restarts keep their seq).
	var startedKeys []string
	for _, st := range w.Steps {
		if st.State == api.StepStarted {
			startedKeys = append(startedKeys, st.Key)
		}
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var nextStep, nextEvent int64
		var uid string
		err := tx.QueryRow(ctx, `SELECT cancel_requested, poke_seq, phase, next_step, next_event, uid
			FROM runs WHERE name = $1 AND lease_owner = $2 AND lease_generation = $3 FOR UPDATE`,
			l.Run, l.Owner, l.Generation).Scan(&sig.CancelRequested, &sig.PokeSeq, &phase, &nextStep, &nextEvent, &uid)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrFenced
		}
		if err != nil {
			return err
		}
		// Read after the lock is held, so steps committed by a write we waited for are seen.
		var existing []string
		if len(startedKeys) > 0 {
			rows, _ := tx.Query(ctx, `SELECT key FROM steps WHERE run = $1 AND key = ANY ($2::text[])`, l.Run, startedKeys)
			if existing, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
				return err
			}
		}
		b := &pgx.Batch{}
		known := make(map[string]bool, len(existing))
		for _, k := range existing {
			known[k] = true
		}
		steps0 := nextStep
		for _, st := range w.Steps {
			queueStep(b, l.Run, st, known, &nextStep)
		}
		events0 := nextEvent
		if len(w.Events) > 0 {
			queueEvents(b, l.Run, nextEvent+1, w.Events)
			nextEvent += int64(len(w.Events))
		}
		if nextStep != steps0 || nextEvent != events0 {
			b.Queue(`UPDATE runs SET next_step = $2, next_event = $3 WHERE name = $1`, l.Run, nextStep, nextEvent)
		}
		if w.Status != nil {
			b.Queue(`UPDATE runs SET status = $2, phase = $3, resource_version = resource_version + 1 WHERE name = $1`,
				l.Run, mustJSON(w.Status), w.Status.Phase)
			phase = w.Status.Phase
		}
		queueFiles(b, l.Run, w.Files)
		if len(w.Charges) > 0 {
			if err := writeCharges(ctx, tx, l.Run, uid, w.Charges); err != nil {
				return err
			}
		}
		if w.Release {
			b.Queue(`DELETE FROM credit_reservations WHERE run = $1`, l.Run)
			var wake any
			if w.WakeAt != nil {
				wake = *w.WakeAt
			}
			// A poke after the claim means something arrived the holder may not have seen, so the
			// run is claimable at once; a finished run is never claimable again. Other stores are
			// told only if the run is claimable now.
			b.Queue(`
				WITH r AS (
					UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL,
						claimable_at = CASE WHEN phase IN `+finishedPhases+` THEN NULL
							WHEN poke_seq <> $2 THEN now() ELSE $3::timestamptz END
					WHERE name = $1 RETURNING claimable_at)
				SELECT pg_notify($4, $1) FROM r WHERE claimable_at <= now()`,
				l.Run, l.PokeSeq, wake, chanWork)
		}
		if b.Len() == 0 {
			return nil
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return sig, fmt.Errorf("commit run %s (generation %d): %w", l.Run, l.Generation, err)
	}
	if w.Release && !api.Finished(phase) {
		s.wake.Poke()
	}
	if len(w.Events) > 0 {
		s.wake.Event()
		s.events.add(l.Run)
	}
	return sig, nil
}

// queueStep queues the write of one journal row. Started inserts the step with the next seq, or
// restarts a row already present; Completed, Interrupted and Failed update the existing row and
// fail the commit if there is none.
func queueStep(b *pgx.Batch, run string, st api.Step, known map[string]bool, nextStep *int64) {
	var completed any
	if st.CompletedAt != nil {
		completed = *st.CompletedAt
	}
	if st.State == api.StepStarted && !known[st.Key] {
		known[st.Key] = true
		*nextStep++
		b.Queue(`INSERT INTO steps (run, seq, key, kind, state, title, attempt, args_hash, args, result, error, cost_micros, started_at, completed_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			run, *nextStep, st.Key, st.Kind, st.State, pgText(st.Title), st.Attempt, st.ArgsHash, nullJSON(st.Args), nullJSON(st.Result),
			pgText(st.Error), st.CostMicros, st.StartedAt, completed)
		return
	}
	if st.State == api.StepStarted {
		b.Queue(`UPDATE steps SET state = $3, attempt = $4, args_hash = $5, args = $6, result = NULL, error = '', started_at = $7,
				completed_at = NULL, cost_micros = NULL, resolution = '', resolution_result = NULL
			WHERE run = $1 AND key = $2`,
			run, st.Key, st.State, st.Attempt, st.ArgsHash, nullJSON(st.Args), st.StartedAt)
		return
	}
	b.Queue(`UPDATE steps SET state = $3, result = $4, error = $5, cost_micros = $6, completed_at = $7 WHERE run = $1 AND key = $2`,
		run, st.Key, st.State, nullJSON(st.Result), pgText(st.Error), st.CostMicros, completed).Exec(func(tag pgconn.CommandTag) error {
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("step %s of %s: %s before Started", st.Key, run, st.State)
		}
		return nil
	})
}
