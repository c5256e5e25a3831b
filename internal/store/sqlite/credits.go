package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// writeCharges settles the run's reservations named by charges into the ledger (once per step).
func (s *Store) writeCharges(ctx context.Context, tx *sql.Tx, run, uid string, charges []store.Charge) error {
	for _, c := range charges {
		var n int
		if err := s.txQueryRow(ctx, tx, `SELECT count(*) FROM credit_reservations WHERE run = ? AND step_key = ?`, run, c.StepKey).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			continue // credits were not enforced when the call was reserved
		}
		res, err := s.txExec(ctx, tx, `INSERT INTO credits_ledger (time, kind, amount, run, run_uid, step_key, note) VALUES (?, 'charge', ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			ms(s.now()), c.Amount, run, uid, c.StepKey, c.Note)
		if err != nil {
			return err
		}
		if k, _ := res.RowsAffected(); k == 1 {
			charged, unknown := store.ChargeTotals(c)
			if _, err := s.txExec(ctx, tx, `UPDATE credits_account SET charged = charged + ?, unknown_charges = unknown_charges + ? WHERE id = 1`, charged, unknown); err != nil {
				return err
			}
		}
		if _, err := s.txExec(ctx, tx, `DELETE FROM credit_reservations WHERE run = ? AND step_key = ?`, run, c.StepKey); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) AddCredits(ctx context.Context, amount int64, note string) (store.CreditEntry, error) {
	if amount <= 0 {
		return store.CreditEntry{}, fmt.Errorf("add credits: amount must be positive")
	}
	e := store.CreditEntry{Kind: "add", Amount: &amount, Note: note, Time: fromMS(ms(s.now()))}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.txQueryRow(ctx, tx, `INSERT INTO credits_ledger (time, kind, amount, run, run_uid, step_key, note) VALUES (?, 'add', ?, '', '', '', ?) RETURNING seq`,
			ms(e.Time), amount, note).Scan(&e.Seq); err != nil {
			return err
		}
		if _, err := s.txExec(ctx, tx, `UPDATE credits_account SET adds = adds + 1, added = added + ? WHERE id = 1`, amount); err != nil {
			return err
		}
		rows, err := s.txQuery(ctx, tx, `SELECT name, status FROM runs WHERE phase = 'Waiting' AND lease_owner IS NULL`)
		if err != nil {
			return err
		}
		requeued := map[string]*api.AgentRunStatus{}
		var names []string
		for rows.Next() {
			var name, status string
			if err := rows.Scan(&name, &status); err != nil {
				rows.Close()
				return err
			}
			row := store.RunRow{Phase: api.PhaseWaiting}
			if json.Unmarshal([]byte(status), &row.Status) != nil {
				continue
			}
			if st := store.CreditsAdded(row); st != nil {
				requeued[name] = st
				names = append(names, name)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, name := range names {
			if err := s.setStatusTx(ctx, tx, name, requeued[name]); err != nil {
				return err
			}
			if err := s.pokeTx(ctx, tx, name, ""); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return store.CreditEntry{}, fmt.Errorf("add credits: %w", err)
	}
	s.wake.Poke()
	return e, nil
}

func (s *Store) Credits(ctx context.Context, limit int) (store.CreditBalance, []store.CreditEntry, error) {
	var b store.CreditBalance
	var adds int64
	if err := s.r.QueryRowContext(ctx, `SELECT adds, added, charged, unknown_charges, (SELECT COALESCE(SUM(amount), 0) FROM credit_reservations) FROM credits_account WHERE id = 1`).
		Scan(&adds, &b.Added, &b.Charged, &b.UnknownCharges, &b.Reserved); err != nil {
		return b, nil, fmt.Errorf("credits: %w", err)
	}
	b.Enforced = adds > 0
	q := `SELECT seq, time, kind, amount, run, step_key, note FROM credits_ledger ORDER BY seq DESC`
	var args []any
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return b, nil, fmt.Errorf("credits ledger: %w", err)
	}
	defer rows.Close()
	var out []store.CreditEntry
	for rows.Next() {
		var e store.CreditEntry
		var t int64
		var amt sql.NullInt64
		if err := rows.Scan(&e.Seq, &t, &e.Kind, &amt, &e.Run, &e.StepKey, &e.Note); err != nil {
			return b, nil, fmt.Errorf("credits ledger: %w", err)
		}
		e.Time = fromMS(t)
		if amt.Valid {
			v := amt.Int64
			e.Amount = &v
		}
		out = append(out, e)
	}
	return b, out, rows.Err()
}

func (s *Store) ReserveCredits(ctx context.Context, l store.Lease, r store.Reservation) (store.ReserveResult, error) {
	var res store.ReserveResult
	// Until credits are first added nothing is reserved, and no reservation can exist: answer from
	// a reader, without a write transaction (and its fsync) on every model call.
	var adds int64
	if err := s.r.QueryRowContext(ctx, `SELECT adds FROM credits_account WHERE id = 1`).Scan(&adds); err != nil {
		return res, fmt.Errorf("reserve credits for %s %s: %w", l.Run, r.StepKey, err)
	}
	if adds == 0 {
		return res, nil
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res = store.ReserveResult{}
		var one int
		err := s.txQueryRow(ctx, tx, `SELECT 1 FROM runs WHERE name = ? AND lease_owner = ? AND lease_generation = ?`, l.Run, l.Owner, l.Generation).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrFenced
		}
		if err != nil {
			return err
		}
		var adds, added, charged int64
		if err := s.txQueryRow(ctx, tx, `SELECT adds, added, charged FROM credits_account WHERE id = 1`).Scan(&adds, &added, &charged); err != nil {
			return err
		}
		// An earlier attempt's hold on this step is dead either way.
		if _, err := s.txExec(ctx, tx, `DELETE FROM credit_reservations WHERE run = ? AND step_key = ?`, l.Run, r.StepKey); err != nil {
			return err
		}
		var others int64
		if err := s.txQueryRow(ctx, tx, `SELECT COALESCE(SUM(amount), 0) FROM credit_reservations`).Scan(&others); err != nil {
			return err
		}
		if res = store.PlanReservation(adds > 0, added, charged, others, r.Amount); !res.OK {
			return nil
		}
		_, err = s.txExec(ctx, tx, `INSERT INTO credit_reservations (run, step_key, attempt, amount, time) VALUES (?, ?, ?, ?, ?)`,
			l.Run, r.StepKey, r.Attempt, r.Amount, ms(s.now()))
		return err
	})
	if err != nil {
		return res, fmt.Errorf("reserve credits for %s %s: %w", l.Run, r.StepKey, err)
	}
	return res, nil
}

func (s *Store) ListReservations(ctx context.Context) ([]store.Reservation, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT run, step_key, attempt, amount, time FROM credit_reservations ORDER BY run, step_key`)
	if err != nil {
		return nil, fmt.Errorf("list reservations: %w", err)
	}
	defer rows.Close()
	var out []store.Reservation
	for rows.Next() {
		var r store.Reservation
		var t int64
		if err := rows.Scan(&r.Run, &r.StepKey, &r.Attempt, &r.Amount, &t); err != nil {
			return nil, fmt.Errorf("list reservations: %w", err)
		}
		r.Time = fromMS(t)
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *Store) RaiseRunCap(ctx context.Context, name, maxCostUSD string, check func(cur *api.AgentRun) error) (*api.AgentRun, error) {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		row, err := s.loadRun(ctx, tx, name)
		if err != nil {
			return err
		}
		cur, err := scanRun(s.txQueryRow(ctx, tx, runCols+` WHERE name = ?`, name))
		if err != nil {
			return err
		}
		if err := check(cur); err != nil {
			return err
		}
		spec, st := store.RaiseCap(cur.Spec, row, maxCostUSD)
		if _, err := s.txExec(ctx, tx, `UPDATE runs SET spec = ? WHERE name = ?`, mustJSON(spec), name); err != nil {
			return err
		}
		if err := s.setStatusTx(ctx, tx, name, st); err != nil {
			return err
		}
		return s.pokeTx(ctx, tx, name, "")
	})
	if err != nil {
		return nil, fmt.Errorf("raise cap of run %s: %w", name, err)
	}
	s.wake.Poke()
	return s.GetRun(ctx, name)
}

func (s *Store) PutSecret(ctx context.Context, name string, sealed []byte, keys []string) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO secrets (name, sealed, keys, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET sealed = excluded.sealed, keys = excluded.keys, updated_at = excluded.updated_at`,
		name, sealed, mustJSON(keys), ms(s.now()))
	if err != nil {
		return fmt.Errorf("put secret %s: %w", name, fullErr(err))
	}
	return nil
}

func (s *Store) GetSecret(ctx context.Context, name string) ([]byte, error) {
	var b []byte
	err := s.r.QueryRowContext(ctx, `SELECT sealed FROM secrets WHERE name = ?`, name).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("secret %s: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", name, err)
	}
	return b, nil
}

func (s *Store) ListSecrets(ctx context.Context) ([]store.SecretInfo, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT name, keys, updated_at FROM secrets ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	defer rows.Close()
	var out []store.SecretInfo
	for rows.Next() {
		var si store.SecretInfo
		var keys string
		var t int64
		if err := rows.Scan(&si.Name, &keys, &t); err != nil {
			return nil, fmt.Errorf("list secrets: %w", err)
		}
		if err := json.Unmarshal([]byte(keys), &si.Keys); err != nil {
			return nil, fmt.Errorf("list secrets: decode %s keys: %w", si.Name, err)
		}
		si.UpdatedAt = fromMS(t)
		out = append(out, si)
	}
	return out, rows.Err()
}

func (s *Store) DeleteSecret(ctx context.Context, name string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM secrets WHERE name = ?`, name)
	if err != nil {
		return fmt.Errorf("delete secret %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete secret %s: %w", name, store.ErrNotFound)
	}
	return nil
}

func (s *Store) PokeWaiting(ctx context.Context, reason api.Reason) (int, error) {
	var n int
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `UPDATE runs SET poke_seq = poke_seq + 1, claimable_at = ?, resource_version = resource_version + 1
			WHERE phase = 'Waiting' AND lease_owner IS NULL AND json_extract(status, '$.reason') = ?`, ms(s.now()), string(reason))
		if err != nil {
			return err
		}
		rows, _ := res.RowsAffected()
		n = int(rows)
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
