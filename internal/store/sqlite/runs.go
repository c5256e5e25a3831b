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

// CreateRun stores a new run with its first timeline events, in one transaction.
func (s *Store) CreateRun(ctx context.Context, r *api.AgentRun, first ...api.Event) error {
	now := s.now()
	r.Metadata.UID = newUID()
	r.Metadata.ResourceVersion = "1"
	r.Metadata.Generation = 1
	ct := now.UTC().Truncate(time.Millisecond)
	r.Metadata.CreationTimestamp = &ct
	var claimable any = ms(now)
	if api.Finished(r.Status.Phase) {
		claimable = nil
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.txExec(ctx, tx, `INSERT INTO runs (name, uid, agent, resource_version, created_at, labels, spec, status, phase, claimable_at) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?)`,
			r.Metadata.Name, r.Metadata.UID, r.Spec.Agent, ms(now), mustJSON(r.Metadata.Labels), mustJSON(r.Spec), mustJSON(r.Status), r.Status.Phase, claimable); err != nil {
			return err
		}
		return s.writeEvents(ctx, tx, r.Metadata.Name, first)
	})
	if err != nil {
		if isUnique(err) {
			return fmt.Errorf("create run %s: %w", r.Metadata.Name, store.ErrAlreadyExists)
		}
		return fmt.Errorf("create run %s: %w", r.Metadata.Name, err)
	}
	s.wake.Poke()
	if len(first) > 0 {
		s.wake.Event()
	}
	return nil
}

const runCols = `SELECT name, uid, resource_version, created_at, labels, spec, status, cancel_requested, lease_owner FROM runs`

func scanRun(row rowScanner) (*api.AgentRun, error) {
	var r api.AgentRun
	var rv, created int64
	var labels, spec, status string
	var cancel int
	var owner sql.NullString
	if err := row.Scan(&r.Metadata.Name, &r.Metadata.UID, &rv, &created, &labels, &spec, &status, &cancel, &owner); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, store.ErrNotFound
		}
		return nil, err
	}
	r.APIVersion, r.Kind = api.APIVersion, "AgentRun"
	r.Metadata.ResourceVersion = strconv.FormatInt(rv, 10)
	r.Metadata.Generation = 1
	ct := fromMS(created)
	r.Metadata.CreationTimestamp = &ct
	if err := json.Unmarshal([]byte(labels), &r.Metadata.Labels); err != nil {
		return nil, fmt.Errorf("decode run %s labels: %w", r.Metadata.Name, err)
	}
	if err := json.Unmarshal([]byte(spec), &r.Spec); err != nil {
		return nil, fmt.Errorf("decode run %s spec: %w", r.Metadata.Name, err)
	}
	if err := json.Unmarshal([]byte(status), &r.Status); err != nil {
		return nil, fmt.Errorf("decode run %s status: %w", r.Metadata.Name, err)
	}
	r.Status.CancelRequested = cancel != 0 && !api.Finished(r.Status.Phase)
	return &r, nil
}

func (s *Store) GetRun(ctx context.Context, name string) (*api.AgentRun, error) {
	r, err := scanRun(s.r.QueryRowContext(ctx, runCols+` WHERE name = ?`, name))
	if err != nil {
		return nil, fmt.Errorf("get run %s: %w", name, err)
	}
	return r, nil
}

func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]*api.AgentRun, error) {
	q := runCols + ` WHERE 1=1`
	var args []any
	if f.Agent != "" {
		q += ` AND agent = ?`
		args = append(args, f.Agent)
	}
	if f.Phase != "" {
		q += ` AND phase = ?`
		args = append(args, f.Phase)
	}
	if f.Group != "" {
		q += ` AND group_name = ?`
		args = append(args, f.Group)
	}
	if f.Newest {
		q += ` ORDER BY created_at DESC, name DESC`
	} else {
		q += ` ORDER BY created_at, name`
	}
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	} else if f.Offset > 0 {
		q += ` LIMIT -1` // SQLite takes OFFSET only after a LIMIT
	}
	if f.Offset > 0 {
		q += ` OFFSET ?`
		args = append(args, f.Offset)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []*api.AgentRun
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *Store) CountRuns(ctx context.Context) (map[string]int, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT phase, count(*) FROM runs GROUP BY phase`)
	if err != nil {
		return nil, fmt.Errorf("count runs: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var p string
		var n int
		if err := rows.Scan(&p, &n); err != nil {
			return nil, fmt.Errorf("count runs: %w", err)
		}
		out[p] = n
	}
	return out, rows.Err()
}

func (s *Store) DeleteRun(ctx context.Context, name string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `DELETE FROM runs WHERE name = ?`, name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.ErrNotFound
		}
		for _, t := range []string{"steps", "run_events", "messages", "files", "file_history", "credit_reservations"} {
			if _, err := s.txExec(ctx, tx, `DELETE FROM `+t+` WHERE run = ?`, name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete run %s: %w", name, err)
	}
	return nil
}

// loadRun reads what the transitions need of a run inside tx (store.RunRow); ErrNotFound if it
// is missing.
func (s *Store) loadRun(ctx context.Context, tx *sql.Tx, name string) (store.RunRow, error) {
	var r store.RunRow
	var status string
	var owner sql.NullString
	err := s.txQueryRow(ctx, tx, `SELECT phase, status, lease_owner FROM runs WHERE name = ?`, name).Scan(&r.Phase, &status, &owner)
	if errors.Is(err, sql.ErrNoRows) {
		return r, store.ErrNotFound
	}
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(status), &r.Status); err != nil {
		return r, fmt.Errorf("decode run %s status: %w", name, err)
	}
	r.Leased = owner.Valid
	return r, nil
}

// setStatusTx writes a status a transition returned (nil: none).
func (s *Store) setStatusTx(ctx context.Context, tx *sql.Tx, name string, st *api.AgentRunStatus) error {
	if st == nil {
		return nil
	}
	_, err := s.txExec(ctx, tx, `UPDATE runs SET status = ?, phase = ? WHERE name = ?`, mustJSON(st), st.Phase, name)
	return err
}

// poke marks a run as needing attention: claimable now if unleased, and noted for the holder.
func (s *Store) pokeTx(ctx context.Context, tx *sql.Tx, name string, extra string) error {
	_, err := s.txExec(ctx, tx, `UPDATE runs SET poke_seq = poke_seq + 1, claimable_at = ?`+extra+`, resource_version = resource_version + 1 WHERE name = ?`, ms(s.now()), name)
	return err
}

func (s *Store) RequestCancel(ctx context.Context, name string) (*api.AgentRun, error) {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		row, err := s.loadRun(ctx, tx, name)
		if err != nil {
			return err
		}
		if err := store.CancelRun(row); err != nil {
			return err
		}
		return s.pokeTx(ctx, tx, name, `, cancel_requested = 1`)
	})
	if err != nil {
		return nil, fmt.Errorf("cancel run %s: %w", name, err)
	}
	s.wake.Poke()
	return s.GetRun(ctx, name)
}
