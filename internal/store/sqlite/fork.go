package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// ForkRun makes the fork in one transaction (see store.Forks): the rule is store.PlanFork, the
// folder store.FolderAt over the source's history.
func (s *Store) ForkRun(ctx context.Context, f store.Fork, first ...api.Event) error {
	r := f.Run
	now := s.now()
	r.Metadata.UID = newUID()
	r.Metadata.ResourceVersion = "1"
	r.Metadata.Generation = 1
	ct := now.UTC().Truncate(time.Millisecond)
	r.Metadata.CreationTimestamp = &ct
	name := r.Metadata.Name
	err := s.tx(ctx, func(tx *sql.Tx) error {
		src, err := s.loadRun(ctx, tx, f.Source)
		if err != nil {
			return err
		}
		rows, err := s.txQuery(ctx, tx, stepCols, f.Source)
		if err != nil {
			return err
		}
		steps, err := scanSteps(rows)
		if err != nil {
			return err
		}
		plan, err := store.PlanFork(f.Source, src.Status, steps, f.AtStep)
		if err != nil {
			return err
		}
		history, err := s.history(ctx, tx, f.Source, plan.At)
		if err != nil {
			return err
		}
		nextMsg := plan.LastMessage
		if f.Message != "" {
			nextMsg++
		}
		if _, err := s.txExec(ctx, tx, `INSERT INTO runs (name, uid, agent, resource_version, created_at, labels, spec, status, phase, claimable_at, next_step, next_message) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?)`,
			name, r.Metadata.UID, r.Spec.Agent, ms(now), mustJSON(r.Metadata.Labels), mustJSON(r.Spec), mustJSON(r.Status), r.Status.Phase, ms(now), len(plan.Steps), nextMsg); err != nil {
			return err
		}
		for _, st := range plan.Steps {
			var completed any
			if st.CompletedAt != nil {
				completed = ms(*st.CompletedAt)
			}
			if _, err := s.txExec(ctx, tx, `INSERT INTO steps (run, seq, key, kind, state, title, attempt, args_hash, args, result, error, cost_micros, started_at, completed_at, resolution, resolution_result, copied_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				name, st.Seq, st.Key, st.Kind, st.State, st.Title, st.Attempt, st.ArgsHash, nullJSON(st.Args), nullJSON(st.Result), st.Error, st.CostMicros, ms(st.StartedAt), completed, st.Resolution, nullJSON(st.ResolutionResult), st.CopiedFrom); err != nil {
				return err
			}
		}
		if _, err := s.txExec(ctx, tx, `INSERT INTO messages (run, seq, key, payload, time) SELECT ?, seq, key, payload, time FROM messages WHERE run = ? AND seq <= ?`, name, f.Source, plan.LastMessage); err != nil {
			return err
		}
		if f.Message != "" {
			if _, err := s.txExec(ctx, tx, `INSERT INTO messages (run, seq, key, payload, time) VALUES (?, ?, ?, ?, ?)`, name, nextMsg, store.ForkMessageKey(name), f.Message, ms(now)); err != nil {
				return err
			}
		}
		for _, v := range history {
			deleted := 0
			if v.Deleted {
				deleted = 1
			}
			if _, err := s.txExec(ctx, tx, `INSERT INTO file_history (run, tag, path, content, mode, deleted) VALUES (?, ?, ?, ?, ?, ?)`,
				name, plan.NewTag(v.Tag), v.Path, v.Content, v.Mode, deleted); err != nil {
				return err
			}
		}
		for _, fw := range store.FolderAt(history, plan.At) {
			if _, err := s.txExec(ctx, tx, `INSERT INTO files (run, path, content, mode, size, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
				name, fw.Path, fw.Content, fw.Mode, len(fw.Content), ms(now)); err != nil {
				return err
			}
		}
		if err := s.writeEvents(ctx, tx, name, first); err != nil {
			return err
		}
		store.DevForkPause(f.Source)
		return nil
	})
	if err != nil {
		if isUnique(err) {
			return fmt.Errorf("fork run %s as %s: %w", f.Source, name, store.ErrAlreadyExists)
		}
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("fork run %s: %w", f.Source, err)
		}
		return fmt.Errorf("fork run %s as %s: %w", f.Source, name, fullErr(err))
	}
	s.wake.Poke()
	if len(first) > 0 {
		s.wake.Event()
	}
	return nil
}

// history is the run folder's saves tagged at or below tag, in the order they were made.
func (s *Store) history(ctx context.Context, tx *sql.Tx, run string, tag int64) ([]store.FileVersion, error) {
	rows, err := s.txQuery(ctx, tx, `SELECT version, tag, path, content, mode, deleted FROM file_history WHERE run = ? AND tag <= ? ORDER BY version`, run, tag)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.FileVersion
	for rows.Next() {
		var v store.FileVersion
		var deleted int
		if err := rows.Scan(&v.Version, &v.Tag, &v.Path, &v.Content, &v.Mode, &deleted); err != nil {
			return nil, err
		}
		v.Deleted = deleted != 0
		if v.Content == nil && !v.Deleted {
			v.Content = []byte{}
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
