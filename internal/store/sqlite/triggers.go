package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// Triggers (store.Triggers). The single writer connection serializes RecordFire, so the
// check for an existing (trigger, key) row and the insert cannot interleave with another's.

const triggerCols = `SELECT name, uid, resource_version, generation, created_at, labels, spec FROM triggers`

func scanTrigger(row rowScanner) (*api.Trigger, error) {
	var t api.Trigger
	var rv, created int64
	var labels, spec string
	if err := row.Scan(&t.Metadata.Name, &t.Metadata.UID, &rv, &t.Metadata.Generation, &created, &labels, &spec); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, store.ErrNotFound
		}
		return nil, err
	}
	t.APIVersion, t.Kind = api.APIVersion, "Trigger"
	t.Metadata.ResourceVersion = strconv.FormatInt(rv, 10)
	ct := fromMS(created)
	t.Metadata.CreationTimestamp = &ct
	if err := json.Unmarshal([]byte(labels), &t.Metadata.Labels); err != nil {
		return nil, fmt.Errorf("decode trigger %s labels: %w", t.Metadata.Name, err)
	}
	if err := json.Unmarshal([]byte(spec), &t.Spec); err != nil {
		return nil, fmt.Errorf("decode trigger %s spec: %w", t.Metadata.Name, err)
	}
	return &t, nil
}

func (s *Store) CreateTrigger(ctx context.Context, t *api.Trigger) error {
	now := s.now()
	t.Metadata.UID = newUID()
	t.Metadata.ResourceVersion = "1"
	t.Metadata.Generation = 1
	ct := now.UTC().Truncate(time.Millisecond)
	t.Metadata.CreationTimestamp = &ct
	_, err := s.w.ExecContext(ctx, `INSERT INTO triggers (name, uid, resource_version, generation, created_at, labels, spec) VALUES (?, ?, 1, 1, ?, ?, ?)`,
		t.Metadata.Name, t.Metadata.UID, ms(now), mustJSON(t.Metadata.Labels), mustJSON(t.Spec))
	if err != nil {
		if isUnique(err) {
			return fmt.Errorf("create trigger %s: %w", t.Metadata.Name, store.ErrAlreadyExists)
		}
		return fmt.Errorf("create trigger %s: %w", t.Metadata.Name, fullErr(err))
	}
	return nil
}

func (s *Store) UpdateTrigger(ctx context.Context, t *api.Trigger) error {
	name := t.Metadata.Name
	err := s.tx(ctx, func(tx *sql.Tx) error {
		cur, err := scanTrigger(s.txQueryRow(ctx, tx, triggerCols+` WHERE name = ?`, name))
		if err != nil {
			return err
		}
		v, err := store.CheckTriggerUpdate(cur, t)
		if err != nil {
			return err
		}
		if _, err := s.txExec(ctx, tx, `UPDATE triggers SET resource_version = ?, generation = ?, labels = ?, spec = ? WHERE name = ?`,
			v.ResourceVersion, v.Generation, mustJSON(t.Metadata.Labels), mustJSON(t.Spec), name); err != nil {
			return err
		}
		t.Metadata.UID, t.Metadata.CreationTimestamp = cur.Metadata.UID, cur.Metadata.CreationTimestamp
		t.Metadata.ResourceVersion, t.Metadata.Generation = v.String(), v.Generation
		return nil
	})
	if err != nil {
		return fmt.Errorf("update trigger %s: %w", name, fullErr(err))
	}
	return nil
}

func (s *Store) GetTrigger(ctx context.Context, name string) (*api.Trigger, error) {
	t, err := scanTrigger(s.r.QueryRowContext(ctx, triggerCols+` WHERE name = ?`, name))
	if err != nil {
		return nil, fmt.Errorf("get trigger %s: %w", name, err)
	}
	return t, nil
}

func (s *Store) ListTriggers(ctx context.Context) ([]*api.Trigger, error) {
	rows, err := s.r.QueryContext(ctx, triggerCols+` ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list triggers: %w", err)
	}
	defer rows.Close()
	var out []*api.Trigger
	for rows.Next() {
		t, err := scanTrigger(rows)
		if err != nil {
			return nil, fmt.Errorf("list triggers: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func (s *Store) DeleteTrigger(ctx context.Context, name string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `DELETE FROM triggers WHERE name = ?`, name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.ErrNotFound
		}
		_, err = s.txExec(ctx, tx, `DELETE FROM trigger_fires WHERE trigger_name = ?`, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete trigger %s: %w", name, err)
	}
	return nil
}

// fireCols reads a fire with its run's phase and status (for the cost), if the run still exists.
const fireCols = `SELECT f.trigger_name, f.fire_key, f.time, f.source, f.delivery_id, f.scheduled_at, f.run, f.outcome, f.message, r.phase, r.status
	FROM trigger_fires f LEFT JOIN runs r ON r.name = f.run AND f.run <> ''`

func scanFire(row rowScanner) (api.TriggerFire, error) {
	var f api.TriggerFire
	var at int64
	var sched sql.NullInt64
	var phase, status sql.NullString
	if err := row.Scan(&f.Trigger, &f.Key, &at, &f.Source, &f.DeliveryID, &sched, &f.Run, &f.Outcome, &f.Message, &phase, &status); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return f, store.ErrNotFound
		}
		return f, err
	}
	f.Time = fromMS(at)
	if sched.Valid {
		t := fromMS(sched.Int64)
		f.ScheduledTime = &t
	}
	store.FillFireRun(&f, phase.String, []byte(status.String))
	return f, nil
}

func (s *Store) RecordFire(ctx context.Context, f api.TriggerFire, concurrency api.Concurrency, run *api.AgentRun) (api.TriggerFire, bool, error) {
	var rec api.TriggerFire
	created, claimable := false, false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		created, claimable = false, false
		var spec string
		if err := s.txQueryRow(ctx, tx, `SELECT spec FROM triggers WHERE name = ?`, f.Trigger).Scan(&spec); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		got, err := scanFire(s.txQueryRow(ctx, tx, fireCols+` WHERE f.trigger_name = ? AND f.fire_key = ?`, f.Trigger, f.Key))
		if err == nil {
			rec = got
			return nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		now := s.now()
		f.Time = now.UTC().Truncate(time.Millisecond)
		if run != nil {
			var prevRun string
			var prevPhase sql.NullString
			err := s.txQueryRow(ctx, tx, `SELECT f.run, r.phase FROM trigger_fires f LEFT JOIN runs r ON r.name = f.run
				WHERE f.trigger_name = ? AND f.run <> '' ORDER BY f.seq DESC LIMIT 1`, f.Trigger).Scan(&prevRun, &prevPhase)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			d := store.PlanFire(concurrency, prevRun, prevPhase.String)
			f.Outcome, f.Message = d.Outcome, d.Message
			if d.Start {
				if err := s.insertRunTx(ctx, tx, run, map[string]*store.BatchGroup{}, now); err != nil {
					return err
				}
				f.Run, claimable = run.Metadata.Name, store.ClaimableOnCreate(run)
			}
			if d.CancelPrevious {
				if err := s.pokeTx(ctx, tx, prevRun, `, cancel_requested = 1`); err != nil {
					return err
				}
				claimable = true
			}
		}
		var seq int64
		if err := s.txQueryRow(ctx, tx, `SELECT COALESCE(MAX(seq), 0) + 1 FROM trigger_fires WHERE trigger_name = ?`, f.Trigger).Scan(&seq); err != nil {
			return err
		}
		var sched any
		if f.ScheduledTime != nil {
			sched = ms(*f.ScheduledTime)
		}
		if _, err := s.txExec(ctx, tx, `INSERT INTO trigger_fires (trigger_name, fire_key, seq, time, source, delivery_id, scheduled_at, run, outcome, message)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, f.Trigger, f.Key, seq, ms(f.Time), f.Source, f.DeliveryID, sched, f.Run, f.Outcome, f.Message); err != nil {
			return err
		}
		var ts api.TriggerSpec
		_ = json.Unmarshal([]byte(spec), &ts)
		if err := s.writeOutbox(ctx, tx, store.FireOutbox(f, ts.Agent, now)); err != nil {
			return err
		}
		rec, created = f, true
		if run != nil && f.Run != "" {
			store.FillFireRun(&rec, string(run.Status.Phase), []byte(mustJSON(run.Status)))
		}
		return nil
	})
	if err != nil {
		return api.TriggerFire{}, false, fmt.Errorf("record fire %s/%s: %w", f.Trigger, f.Key, fullErr(err))
	}
	if claimable {
		s.wake.Poke()
	}
	return rec, created, nil
}

func (s *Store) ListFires(ctx context.Context, trigger string, limit int) ([]api.TriggerFire, error) {
	q := fireCols + ` WHERE f.trigger_name = ? ORDER BY f.seq DESC`
	args := []any{trigger}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list fires of %s: %w", trigger, err)
	}
	defer rows.Close()
	var out []api.TriggerFire
	for rows.Next() {
		f, err := scanFire(rows)
		if err != nil {
			return nil, fmt.Errorf("list fires of %s: %w", trigger, err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

func (s *Store) LastSlot(ctx context.Context, trigger string) (time.Time, bool, error) {
	var v sql.NullInt64
	if err := s.r.QueryRowContext(ctx, `SELECT MAX(scheduled_at) FROM trigger_fires WHERE trigger_name = ? AND source = ?`, trigger, api.FireSourceSchedule).Scan(&v); err != nil {
		return time.Time{}, false, fmt.Errorf("last slot of %s: %w", trigger, err)
	}
	if !v.Valid {
		return time.Time{}, false, nil
	}
	return fromMS(v.Int64), true, nil
}
