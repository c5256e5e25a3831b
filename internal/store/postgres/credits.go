package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// Lock order: a run's row, then the credits account row. Commit and ReserveCredits hold the run's
// row first; AddCredits takes the account row and then only unleased runs' rows, which no Commit
// or reservation holds.

func (s *Store) AddCredits(ctx context.Context, amount int64, note string) (store.CreditEntry, error) {
	if amount <= 0 {
		return store.CreditEntry{}, fmt.Errorf("add credits: amount must be positive")
	}
	e := store.CreditEntry{Kind: "add", Amount: &amount, Note: note}
	// Set before the commit: this process's reservations are enforced from the moment the add
	// can be seen (an add that then fails to commit only costs reads).
	s.credits.on.Store(true)
	poked := false
	err := s.tx(ctx, func(tx pgx.Tx) error {
		poked = false
		if _, err := tx.Exec(ctx, `UPDATE credits_account SET adds = adds + 1, added = added + $1 WHERE id = 1`, amount); err != nil {
			return err
		}
		// Every store of the database stops answering "not enforced" from its cache (rare:
		// NOTIFY serializes commits, which matters for hot paths only).
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, current_schema())`, chanCredits); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO credits_ledger (time, kind, amount, run, run_uid, step_key, note) VALUES (now(), 'add', $1, '', '', '', $2) RETURNING seq, time`,
			amount, pgText(note)).Scan(&e.Seq, &e.Time); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT name, status FROM runs WHERE phase = 'Waiting' AND lease_owner IS NULL ORDER BY name FOR UPDATE`)
		if err != nil {
			return err
		}
		type parked struct {
			name string
			st   *api.AgentRunStatus
		}
		var waiting []parked
		for rows.Next() {
			var name string
			var status []byte
			if err := rows.Scan(&name, &status); err != nil {
				rows.Close()
				return err
			}
			row := store.RunRow{Phase: api.PhaseWaiting}
			if json.Unmarshal(status, &row.Status) != nil {
				continue
			}
			if st := store.CreditsAdded(row); st != nil {
				waiting = append(waiting, parked{name, st})
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, p := range waiting {
			if err := setStatus(ctx, tx, p.name, p.st); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, pokeSQL+` WHERE name = $1`, p.name); err != nil {
				return err
			}
			if err := notifyWork(ctx, tx, p.name); err != nil {
				return err
			}
			poked = true
		}
		return nil
	})
	if err != nil {
		return store.CreditEntry{}, fmt.Errorf("add credits: %w", err)
	}
	e.Time = utc(e.Time)
	if poked {
		s.wake.Poke()
	}
	return e, nil
}

func (s *Store) Credits(ctx context.Context, limit int) (store.CreditBalance, []store.CreditEntry, error) {
	var b store.CreditBalance
	var adds int64
	if err := s.read.QueryRow(ctx, `SELECT adds, added, charged, unknown_charges, (SELECT COALESCE(SUM(amount), 0)::bigint FROM credit_reservations)
		FROM credits_account WHERE id = 1`).Scan(&adds, &b.Added, &b.Charged, &b.UnknownCharges, &b.Reserved); err != nil {
		return b, nil, fmt.Errorf("credits: %w", err)
	}
	b.Enforced = adds > 0
	q := `SELECT seq, time, kind, amount, run, step_key, note FROM credits_ledger ORDER BY seq DESC`
	var args []any
	if limit > 0 {
		q += ` LIMIT $1`
		args = append(args, limit)
	}
	rows, err := s.read.Query(ctx, q, args...)
	if err != nil {
		return b, nil, fmt.Errorf("credits ledger: %w", err)
	}
	defer rows.Close()
	var out []store.CreditEntry
	for rows.Next() {
		var e store.CreditEntry
		if err := rows.Scan(&e.Seq, &e.Time, &e.Kind, &e.Amount, &e.Run, &e.StepKey, &e.Note); err != nil {
			return b, nil, fmt.Errorf("credits ledger: %w", err)
		}
		e.Time = utc(e.Time)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return b, nil, fmt.Errorf("credits ledger: %w", err)
	}
	return b, out, nil
}

func (s *Store) ReserveCredits(ctx context.Context, l store.Lease, r store.Reservation) (store.ReserveResult, error) {
	var res store.ReserveResult
	// Until credits are first added nothing is reserved, and no reservation can exist: answer
	// without locking the account row on every model call, and, while that is known, without a
	// read either (creditsEnforced).
	enforced, err := s.creditsEnforced(ctx)
	if err != nil {
		return res, fmt.Errorf("reserve credits for %s %s: %w", l.Run, r.StepKey, err)
	}
	if !enforced {
		return res, nil
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		res = store.ReserveResult{}
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM runs WHERE name = $1 AND lease_owner = $2 AND lease_generation = $3 FOR UPDATE`, l.Run, l.Owner, l.Generation).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrFenced
		}
		if err != nil {
			return err
		}
		var adds, added, charged int64
		if err := tx.QueryRow(ctx, `SELECT adds, added, charged FROM credits_account WHERE id = 1 FOR UPDATE`).Scan(&adds, &added, &charged); err != nil {
			return err
		}
		// An earlier attempt's hold on this step is dead either way.
		if _, err := tx.Exec(ctx, `DELETE FROM credit_reservations WHERE run = $1 AND step_key = $2`, l.Run, r.StepKey); err != nil {
			return err
		}
		var others int64
		if err := tx.QueryRow(ctx, `SELECT COALESCE(SUM(amount), 0)::bigint FROM credit_reservations`).Scan(&others); err != nil {
			return err
		}
		if res = store.PlanReservation(adds > 0, added, charged, others, r.Amount); !res.OK {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO credit_reservations (run, step_key, attempt, amount, time) VALUES ($1, $2, $3, $4, now())`,
			l.Run, r.StepKey, r.Attempt, r.Amount)
		return err
	})
	if err != nil {
		return res, fmt.Errorf("reserve credits for %s %s: %w", l.Run, r.StepKey, err)
	}
	return res, nil
}

func (s *Store) ListReservations(ctx context.Context) ([]store.Reservation, error) {
	rows, err := s.read.Query(ctx, `SELECT run, step_key, attempt, amount, time FROM credit_reservations ORDER BY run, step_key`)
	if err != nil {
		return nil, fmt.Errorf("list reservations: %w", err)
	}
	defer rows.Close()
	var out []store.Reservation
	for rows.Next() {
		var r store.Reservation
		if err := rows.Scan(&r.Run, &r.StepKey, &r.Attempt, &r.Amount, &r.Time); err != nil {
			return nil, fmt.Errorf("list reservations: %w", err)
		}
		r.Time = utc(r.Time)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list reservations: %w", err)
	}
	return out, nil
}

func (s *Store) RaiseRunCap(ctx context.Context, name, maxCostUSD string, check func(cur *api.AgentRun) error) (*api.AgentRun, error) {
	var out *api.AgentRun
	err := s.tx(ctx, func(tx pgx.Tx) error {
		row, err := lockRun(ctx, tx, name)
		if err != nil {
			return err
		}
		cur, err := scanRun(tx.QueryRow(ctx, runCols+` WHERE name = $1`, name))
		if err != nil {
			return err
		}
		if err := check(cur); err != nil {
			return err
		}
		spec, st := store.RaiseCap(cur.Spec, row, maxCostUSD)
		if _, err := tx.Exec(ctx, `UPDATE runs SET spec = $2 WHERE name = $1`, name, mustJSON(spec)); err != nil {
			return err
		}
		if err := setStatus(ctx, tx, name, st); err != nil {
			return err
		}
		if out, err = scanRun(tx.QueryRow(ctx, pokeSQL+` WHERE name = $1`+runReturning, name)); err != nil {
			return err
		}
		return notifyWork(ctx, tx, name)
	})
	if err != nil {
		return nil, fmt.Errorf("raise cap of run %s: %w", name, err)
	}
	s.wake.Poke()
	return out, nil
}

func (s *Store) PutSecret(ctx context.Context, name string, sealed []byte, keys []string) error {
	if keys == nil {
		keys = []string{}
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO secrets (name, sealed, keys, updated_at) VALUES ($1, $2, $3, now())
			ON CONFLICT (name) DO UPDATE SET sealed = excluded.sealed, keys = excluded.keys, updated_at = excluded.updated_at`,
			name, sealed, mustJSON(keys))
		return err
	})
	if err != nil {
		return fmt.Errorf("put secret %s: %w", name, err)
	}
	return nil
}

func (s *Store) GetSecret(ctx context.Context, name string) ([]byte, error) {
	var b []byte
	if err := s.read.QueryRow(ctx, `SELECT sealed FROM secrets WHERE name = $1`, name).Scan(&b); err != nil {
		return nil, fmt.Errorf("secret %s: %w", name, notFound(err))
	}
	return b, nil
}

func (s *Store) ListSecrets(ctx context.Context) ([]store.SecretInfo, error) {
	rows, err := s.read.Query(ctx, `SELECT name, keys, updated_at FROM secrets ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	defer rows.Close()
	var out []store.SecretInfo
	for rows.Next() {
		var si store.SecretInfo
		var keys []byte
		var t time.Time
		if err := rows.Scan(&si.Name, &keys, &t); err != nil {
			return nil, fmt.Errorf("list secrets: %w", err)
		}
		if err := json.Unmarshal(keys, &si.Keys); err != nil {
			return nil, fmt.Errorf("list secrets: decode %s keys: %w", si.Name, err)
		}
		si.UpdatedAt = utc(t)
		out = append(out, si)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	return out, nil
}

func (s *Store) DeleteSecret(ctx context.Context, name string) error {
	tag, err := s.read.Exec(ctx, `DELETE FROM secrets WHERE name = $1`, name)
	if err != nil {
		return fmt.Errorf("delete secret %s: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete secret %s: %w", name, store.ErrNotFound)
	}
	return nil
}

func (s *Store) PokeWaiting(ctx context.Context, reason api.Reason) (int, error) {
	var n int
	err := s.tx(ctx, func(tx pgx.Tx) error {
		n = 0
		rows, err := tx.Query(ctx, pokeSQL+` WHERE phase = 'Waiting' AND lease_owner IS NULL AND status->>'reason' = $1 RETURNING name`, string(reason))
		if err != nil {
			return err
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		// One notification wakes every runner (the listener reads no payload), as CancelGroup does.
		if len(names) > 0 {
			if err := notifyWork(ctx, tx, ""); err != nil {
				return err
			}
		}
		n = len(names)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("poke runs waiting %s: %w", reason, err)
	}
	if n > 0 {
		s.wake.Poke()
	}
	return n, nil
}

// creditsCache remembers whether credits are enforced (credits_account.adds > 0), so that a model
// call's reservation does not read the account row on every call when they are not. adds only
// grows, so "enforced" is kept for good; "not enforced" is kept while the store's listener stays
// connected (an add notifies agentrun_credits in its transaction, which sets on) and for at most
// creditsOffTTL, in case a notification is lost without the connection being seen to drop.
type creditsCache struct {
	on     atomic.Bool
	mu     sync.Mutex
	offGen uint64
	offAt  time.Time
}

const creditsOffTTL = time.Second

// creditsEnforced reports whether credits have ever been added.
func (s *Store) creditsEnforced(ctx context.Context) (bool, error) {
	c := &s.credits
	if c.on.Load() {
		return true, nil
	}
	gen, connected := s.lis.generation()
	c.mu.Lock()
	fresh := connected && c.offGen == gen && !c.offAt.IsZero() && time.Since(c.offAt) < creditsOffTTL
	c.mu.Unlock()
	if fresh {
		return false, nil
	}
	var adds int64
	if err := s.read.QueryRow(ctx, `SELECT adds FROM credits_account WHERE id = 1`).Scan(&adds); err != nil {
		return false, err
	}
	if adds > 0 {
		c.on.Store(true)
		return true, nil
	}
	if connected {
		// The listener was connected before the read: an add committed after it notifies.
		c.mu.Lock()
		c.offGen, c.offAt = gen, time.Now()
		c.mu.Unlock()
	}
	return false, nil
}
