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

func (s *Store) writeSteps(ctx context.Context, tx *sql.Tx, run string, steps []api.Step) error {
	for _, st := range steps {
		var completed any
		if st.CompletedAt != nil {
			completed = ms(*st.CompletedAt)
		}
		switch st.State {
		case api.StepStarted:
			res, err := s.txExec(ctx, tx, `UPDATE steps SET state = ?, attempt = ?, args_hash = ?, args = ?, result = NULL, error = '', started_at = ?, completed_at = NULL, cost_micros = NULL, resolution = '', resolution_result = NULL WHERE run = ? AND key = ?`,
				st.State, st.Attempt, st.ArgsHash, nullJSON(st.Args), ms(st.StartedAt), run, st.Key)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n > 0 {
				continue
			}
			var seq int64
			if err := s.txQueryRow(ctx, tx, `UPDATE runs SET next_step = next_step + 1 WHERE name = ? RETURNING next_step`, run).Scan(&seq); err != nil {
				return err
			}
			if _, err := s.txExec(ctx, tx, `INSERT INTO steps (run, seq, key, kind, state, title, attempt, args_hash, args, result, error, cost_micros, started_at, completed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				run, seq, st.Key, st.Kind, st.State, st.Title, st.Attempt, st.ArgsHash, nullJSON(st.Args), nullJSON(st.Result), st.Error, st.CostMicros, ms(st.StartedAt), completed); err != nil {
				return err
			}
		default:
			res, err := s.txExec(ctx, tx, `UPDATE steps SET state = ?, result = ?, error = ?, cost_micros = ?, completed_at = ? WHERE run = ? AND key = ?`,
				st.State, nullJSON(st.Result), st.Error, st.CostMicros, completed, run, st.Key)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return fmt.Errorf("step %s of %s: %s before Started", st.Key, run, st.State)
			}
		}
	}
	return nil
}

func (s *Store) writeEvents(ctx context.Context, tx *sql.Tx, run string, evs []api.Event) error {
	for _, ev := range evs {
		var seq int64
		if err := s.txQueryRow(ctx, tx, `UPDATE runs SET next_event = next_event + 1 WHERE name = ? RETURNING next_event`, run).Scan(&seq); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		t := ev.Time
		if t.IsZero() {
			t = s.now()
		}
		if _, err := s.txExec(ctx, tx, `INSERT INTO run_events (run, seq, time, type, step_key, message, data) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			run, seq, ms(t), ev.Type, ev.StepKey, ev.Message, nullJSON(ev.Data)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) AppendEvents(ctx context.Context, run string, evs []api.Event) error {
	if err := s.tx(ctx, func(tx *sql.Tx) error { return s.writeEvents(ctx, tx, run, evs) }); err != nil {
		return fmt.Errorf("append events to %s: %w", run, err)
	}
	s.wake.Event()
	return nil
}

const stepCols = `SELECT seq, key, kind, state, title, attempt, args_hash, args, result, error, cost_micros, started_at, completed_at, resolution, resolution_result, copied_from FROM steps WHERE run = ? ORDER BY seq`

func (s *Store) ListSteps(ctx context.Context, run string) ([]api.Step, error) {
	rows, err := s.r.QueryContext(ctx, stepCols, run)
	if err != nil {
		return nil, fmt.Errorf("list steps of %s: %w", run, err)
	}
	out, err := scanSteps(rows)
	if err != nil {
		return nil, fmt.Errorf("list steps of %s: %w", run, err)
	}
	return out, nil
}

func scanSteps(rows *sql.Rows) ([]api.Step, error) {
	defer rows.Close()
	var out []api.Step
	for rows.Next() {
		var st api.Step
		var args, result, resResult sql.NullString
		var costM, completed sql.NullInt64
		var started int64
		if err := rows.Scan(&st.Seq, &st.Key, &st.Kind, &st.State, &st.Title, &st.Attempt, &st.ArgsHash, &args, &result, &st.Error, &costM, &started, &completed, &st.Resolution, &resResult, &st.CopiedFrom); err != nil {
			return nil, err
		}
		if args.Valid {
			st.Args = json.RawMessage(args.String)
		}
		if result.Valid {
			st.Result = json.RawMessage(result.String)
		}
		if resResult.Valid {
			st.ResolutionResult = json.RawMessage(resResult.String)
		}
		if costM.Valid {
			v := costM.Int64
			st.CostMicros = &v
		}
		st.StartedAt = fromMS(started)
		if completed.Valid {
			t := fromMS(completed.Int64)
			st.CompletedAt = &t
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

func (s *Store) ListEvents(ctx context.Context, run string, afterSeq int64, limit int) ([]api.Event, error) {
	q := `SELECT seq, time, type, step_key, message, data FROM run_events WHERE run = ? AND seq > ? ORDER BY seq`
	args := []any{run, afterSeq}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list events of %s: %w", run, err)
	}
	defer rows.Close()
	var out []api.Event
	for rows.Next() {
		var ev api.Event
		var t int64
		var data sql.NullString
		if err := rows.Scan(&ev.Seq, &t, &ev.Type, &ev.StepKey, &ev.Message, &data); err != nil {
			return nil, fmt.Errorf("list events of %s: %w", run, err)
		}
		ev.Time = fromMS(t)
		if data.Valid {
			ev.Data = json.RawMessage(data.String)
		}
		out = append(out, ev)
	}
	return out, rows.Err()
}
