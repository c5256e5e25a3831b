package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// ForkRun makes the fork in one transaction (see store.Forks): the rule is store.PlanFork, the
// folder store.FolderAt over the source's history. The transaction is REPEATABLE READ, so the
// source's status, steps and history are read as of one moment without locking its row: the
// source's own commits (batched with other runs' in the group commit) never wait for a fork.
func (s *Store) ForkRun(ctx context.Context, f store.Fork, first ...api.Event) error {
	r := f.Run
	name := r.Metadata.Name
	uid := newUID()
	var created time.Time
	err := snapshotTx(ctx, s.pool, func(tx pgx.Tx) error {
		var status []byte
		if err := tx.QueryRow(ctx, `SELECT status FROM runs WHERE name = $1`, f.Source).Scan(&status); err != nil {
			return notFound(err)
		}
		var src store.RunRow
		if err := json.Unmarshal(status, &src.Status); err != nil {
			return fmt.Errorf("decode run %s status: %w", f.Source, err)
		}
		rows, err := tx.Query(ctx, stepCols, f.Source)
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
		history, err := folderHistory(ctx, tx, f.Source, plan.At)
		if err != nil {
			return err
		}
		nextMsg := plan.LastMessage
		if f.Message != "" {
			nextMsg++
		}
		if err := tx.QueryRow(ctx, `INSERT INTO runs (name, uid, agent, resource_version, created_at, labels, spec, status, phase, claimable_at, next_step, next_message)
			VALUES ($1, $2, $3, 1, now(), $4, $5, $6, $7, now(), $8, $9) RETURNING created_at`,
			name, uid, r.Spec.Agent, mustJSON(r.Metadata.Labels), mustJSON(r.Spec), mustJSON(r.Status), r.Status.Phase, len(plan.Steps), nextMsg).Scan(&created); err != nil {
			return err
		}
		b := &pgx.Batch{}
		for _, st := range plan.Steps {
			b.Queue(`INSERT INTO steps (run, seq, key, kind, state, title, attempt, args_hash, args, result, error, cost_micros, started_at, completed_at, resolution, resolution_result, copied_from)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::json, $10::json, $11, $12, $13, $14, $15, $16::json, $17)`,
				name, st.Seq, st.Key, st.Kind, st.State, pgText(st.Title), st.Attempt, st.ArgsHash, nullJSON(st.Args), nullJSON(st.Result), pgText(st.Error),
				st.CostMicros, st.StartedAt, st.CompletedAt, st.Resolution, nullJSON(st.ResolutionResult), st.CopiedFrom)
		}
		b.Queue(`INSERT INTO messages (run, seq, key, payload, time) SELECT $1, seq, key, payload, time FROM messages WHERE run = $2 AND seq <= $3`, name, f.Source, plan.LastMessage)
		if f.Message != "" {
			b.Queue(`INSERT INTO messages (run, seq, key, payload, time) VALUES ($1, $2, $3, $4, now())`, name, nextMsg, store.ForkMessageKey(name), []byte(f.Message))
		}
		for _, v := range history {
			b.Queue(`INSERT INTO file_history (run, tag, path, content, mode, deleted) VALUES ($1, $2, $3, $4, $5, $6)`,
				name, plan.NewTag(v.Tag), v.Path, v.Content, int64(v.Mode), v.Deleted)
		}
		for _, fw := range store.FolderAt(history, plan.At) {
			b.Queue(`INSERT INTO files (run, path, content, mode, size, updated_at) VALUES ($1, $2, $3, $4, $5, now())`,
				name, fw.Path, fw.Content, int64(fw.Mode), len(fw.Content))
		}
		for i, ev := range first {
			var t any
			if !ev.Time.IsZero() {
				t = ev.Time
			}
			b.Queue(`INSERT INTO run_events (run, seq, time, type, step_key, message, data) VALUES ($1, $2, COALESCE($3::timestamptz, now()), $4, $5, $6, $7::json)`,
				name, i+1, t, ev.Type, pgText(ev.StepKey), pgText(ev.Message), nullJSON(ev.Data))
		}
		b.Queue(`UPDATE runs SET next_event = $2 WHERE name = $1`, name, len(first))
		b.Queue(`SELECT pg_notify($1, $2)`, chanWork, name)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
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
		return fmt.Errorf("fork run %s as %s: %w", f.Source, name, err)
	}
	r.Metadata.UID = uid
	r.Metadata.ResourceVersion = "1"
	r.Metadata.Generation = 1
	ct := utc(created)
	r.Metadata.CreationTimestamp = &ct
	s.wake.Poke()
	if len(first) > 0 {
		s.wake.Event()
		s.events.add(name)
	}
	return nil
}

// snapshotTx is tx (retried as it is) in a REPEATABLE READ transaction: every statement reads one
// snapshot.
func snapshotTx(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	return retry(ctx, func() (error, bool) {
		tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		if err != nil {
			return err, false
		}
		if err := fn(tx); err != nil {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = tx.Rollback(rctx)
			cancel()
			return err, false
		}
		return tx.Commit(ctx), true
	})
}

// folderHistory is the run folder's saves tagged at or below tag, in the order they were made.
func folderHistory(ctx context.Context, tx pgx.Tx, run string, tag int64) ([]store.FileVersion, error) {
	rows, err := tx.Query(ctx, `SELECT version, tag, path, content, mode, deleted FROM file_history WHERE run = $1 AND tag <= $2 ORDER BY version`, run, tag)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.FileVersion
	for rows.Next() {
		var v store.FileVersion
		var mode int64
		if err := rows.Scan(&v.Version, &v.Tag, &v.Path, &v.Content, &mode, &v.Deleted); err != nil {
			return nil, err
		}
		v.Mode = uint32(mode)
		if v.Content == nil && !v.Deleted {
			v.Content = []byte{}
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
