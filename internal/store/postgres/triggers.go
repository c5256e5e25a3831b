package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// Triggers (store.Triggers). RecordFire locks the trigger's row FOR UPDATE first, so the fires of
// one trigger are recorded one at a time across every server: the check for an existing (trigger,
// key) row, the previous fire's run (for Forbid and Replace) and the insert all see one state. The
// primary key (trigger_name, fire_key) holds regardless.

const triggerCols = `SELECT name, uid, resource_version, generation, created_at, labels, spec FROM triggers`

func scanTrigger(row pgx.Row) (*api.Trigger, error) {
	var t api.Trigger
	var rv int64
	var created time.Time
	var labels, spec []byte
	if err := row.Scan(&t.Metadata.Name, &t.Metadata.UID, &rv, &t.Metadata.Generation, &created, &labels, &spec); err != nil {
		return nil, notFound(err)
	}
	t.APIVersion, t.Kind = api.APIVersion, "Trigger"
	t.Metadata.ResourceVersion = strconv.FormatInt(rv, 10)
	ct := utc(created)
	t.Metadata.CreationTimestamp = &ct
	if err := json.Unmarshal(labels, &t.Metadata.Labels); err != nil {
		return nil, fmt.Errorf("decode trigger %s labels: %w", t.Metadata.Name, err)
	}
	if err := json.Unmarshal(spec, &t.Spec); err != nil {
		return nil, fmt.Errorf("decode trigger %s spec: %w", t.Metadata.Name, err)
	}
	return &t, nil
}

func (s *Store) CreateTrigger(ctx context.Context, t *api.Trigger) error {
	uid := newUID()
	var created time.Time
	err := s.tx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO triggers (name, uid, resource_version, generation, created_at, labels, spec)
			VALUES ($1, $2, 1, 1, now(), $3, $4) RETURNING created_at`,
			t.Metadata.Name, uid, mustJSON(t.Metadata.Labels), mustJSON(t.Spec)).Scan(&created)
		if isUnique(err) {
			return store.ErrAlreadyExists
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("create trigger %s: %w", t.Metadata.Name, err)
	}
	t.Metadata.UID, t.Metadata.ResourceVersion, t.Metadata.Generation = uid, "1", 1
	ct := utc(created)
	t.Metadata.CreationTimestamp = &ct
	return nil
}

func (s *Store) UpdateTrigger(ctx context.Context, t *api.Trigger) error {
	name := t.Metadata.Name
	var cur *api.Trigger
	var v store.Versions
	// t is changed only after the commit: tx may run the function again, which must see t as given.
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		if cur, err = scanTrigger(tx.QueryRow(ctx, triggerCols+` WHERE name = $1 FOR UPDATE`, name)); err != nil {
			return err
		}
		if v, err = store.CheckTriggerUpdate(cur, t); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE triggers SET resource_version = $2, generation = $3, labels = $4, spec = $5 WHERE name = $1`,
			name, v.ResourceVersion, v.Generation, mustJSON(t.Metadata.Labels), mustJSON(t.Spec))
		return err
	})
	if err != nil {
		return fmt.Errorf("update trigger %s: %w", name, err)
	}
	t.Metadata.UID, t.Metadata.CreationTimestamp = cur.Metadata.UID, cur.Metadata.CreationTimestamp
	t.Metadata.ResourceVersion, t.Metadata.Generation = v.String(), v.Generation
	return nil
}

func (s *Store) GetTrigger(ctx context.Context, name string) (*api.Trigger, error) {
	t, err := scanTrigger(s.read.QueryRow(ctx, triggerCols+` WHERE name = $1`, name))
	if err != nil {
		return nil, fmt.Errorf("get trigger %s: %w", name, err)
	}
	return t, nil
}

func (s *Store) ListTriggers(ctx context.Context) ([]*api.Trigger, error) {
	rows, err := s.read.Query(ctx, triggerCols+` ORDER BY name`)
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
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM triggers WHERE name = $1`, name)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrNotFound
		}
		_, err = tx.Exec(ctx, `DELETE FROM trigger_fires WHERE trigger_name = $1`, name)
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

func scanFire(row pgx.Row) (api.TriggerFire, error) {
	var f api.TriggerFire
	var at time.Time
	var sched *time.Time
	var phase *string
	var status []byte
	if err := row.Scan(&f.Trigger, &f.Key, &at, &f.Source, &f.DeliveryID, &sched, &f.Run, &f.Outcome, &f.Message, &phase, &status); err != nil {
		return f, notFound(err)
	}
	f.Time = utc(at)
	f.ScheduledTime = utcPtr(sched)
	p := ""
	if phase != nil {
		p = *phase
	}
	store.FillFireRun(&f, p, status)
	return f, nil
}

func (s *Store) RecordFire(ctx context.Context, f api.TriggerFire, concurrency api.Concurrency, run *api.AgentRun) (api.TriggerFire, bool, error) {
	var rec api.TriggerFire
	created, claimable := false, false
	given := f
	err := s.tx(ctx, func(tx pgx.Tx) error {
		f, created, claimable = given, false, false
		var spec []byte
		if err := tx.QueryRow(ctx, `SELECT spec FROM triggers WHERE name = $1 FOR UPDATE`, f.Trigger).Scan(&spec); err != nil {
			return notFound(err)
		}
		got, err := scanFire(tx.QueryRow(ctx, fireCols+` WHERE f.trigger_name = $1 AND f.fire_key = $2`, f.Trigger, f.Key))
		if err == nil {
			rec = got
			return nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		var now time.Time
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
			return err
		}
		f.Time = utc(now)
		if run != nil {
			var prevRun string
			var prevPhase *string
			err := tx.QueryRow(ctx, `SELECT f.run, r.phase FROM trigger_fires f LEFT JOIN runs r ON r.name = f.run
				WHERE f.trigger_name = $1 AND f.run <> '' ORDER BY f.seq DESC LIMIT 1`, f.Trigger).Scan(&prevRun, &prevPhase)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			pp := ""
			if prevPhase != nil {
				pp = *prevPhase
			}
			d := store.PlanFire(concurrency, prevRun, pp)
			f.Outcome, f.Message = d.Outcome, d.Message
			if d.Start {
				if err := insertRunTx(ctx, tx, run, map[string]*store.BatchGroup{}, now); err != nil {
					return err
				}
				f.Run, claimable = run.Metadata.Name, store.ClaimableOnCreate(run)
			}
			if d.CancelPrevious {
				if _, err := tx.Exec(ctx, pokeSQL+`, cancel_requested = true WHERE name = $1`, prevRun); err != nil {
					return err
				}
				claimable = true
			}
			if claimable {
				if err := notifyWork(ctx, tx, f.Run); err != nil {
					return err
				}
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO trigger_fires (trigger_name, fire_key, seq, time, source, delivery_id, scheduled_at, run, outcome, message)
			VALUES ($1, $2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM trigger_fires WHERE trigger_name = $1), $3, $4, $5, $6, $7, $8, $9)`,
			f.Trigger, f.Key, f.Time, f.Source, f.DeliveryID, f.ScheduledTime, f.Run, f.Outcome, f.Message)
		if err != nil {
			return err
		}
		var ts api.TriggerSpec
		_ = json.Unmarshal(spec, &ts)
		if err := writeOutbox(ctx, tx, store.FireOutbox(f, ts.Agent, now)); err != nil {
			return err
		}
		rec, created = f, true
		if run != nil && f.Run != "" {
			store.FillFireRun(&rec, string(run.Status.Phase), []byte(mustJSON(run.Status)))
		}
		return nil
	})
	if err != nil {
		return api.TriggerFire{}, false, fmt.Errorf("record fire %s/%s: %w", given.Trigger, given.Key, err)
	}
	if claimable {
		s.wake.Poke()
	}
	return rec, created, nil
}

func (s *Store) ListFires(ctx context.Context, trigger string, limit int) ([]api.TriggerFire, error) {
	q := fireCols + ` WHERE f.trigger_name = $1 ORDER BY f.seq DESC`
	args := []any{trigger}
	if limit > 0 {
		q += ` LIMIT $2`
		args = append(args, limit)
	}
	rows, err := s.read.Query(ctx, q, args...)
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
	var v *time.Time
	if err := s.read.QueryRow(ctx, `SELECT MAX(scheduled_at) FROM trigger_fires WHERE trigger_name = $1 AND source = $2`, trigger, api.FireSourceSchedule).Scan(&v); err != nil {
		return time.Time{}, false, fmt.Errorf("last slot of %s: %w", trigger, err)
	}
	if v == nil {
		return time.Time{}, false, nil
	}
	return utc(*v), true, nil
}
