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

func (s *Store) AddMessage(ctx context.Context, run, key, payload string) (api.Message, bool, error) {
	return s.AddMessageIfBusy(ctx, run, key, payload, "")
}

func (s *Store) AddMessageIfBusy(ctx context.Context, run, key, payload string, ifBusy api.IfBusy) (api.Message, bool, error) {
	var msg api.Message
	created := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		row, err := s.loadRun(ctx, tx, run)
		if err != nil {
			return err
		}
		if key != "" {
			var t int64
			err := s.txQueryRow(ctx, tx, `SELECT seq, payload, time, if_busy FROM messages WHERE run = ? AND key = ?`, run, key).Scan(&msg.Seq, &msg.Payload, &t, &msg.IfBusy)
			if err == nil {
				msg.Key, msg.Time = key, fromMS(t)
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		requeued, mode, err := store.MessageRunIfBusy(row, ifBusy)
		if err != nil {
			return err
		}
		now := s.now()
		if err := s.txQueryRow(ctx, tx, `UPDATE runs SET next_message = next_message + 1 WHERE name = ? RETURNING next_message`, run).Scan(&msg.Seq); err != nil {
			return err
		}
		if _, err := s.txExec(ctx, tx, `INSERT INTO messages (run, seq, key, payload, time, if_busy) VALUES (?, ?, ?, ?, ?, ?)`, run, msg.Seq, key, payload, ms(now), mode); err != nil {
			return err
		}
		msg.Key, msg.Payload, msg.Time, msg.IfBusy = key, payload, now.UTC().Truncate(time.Millisecond), mode
		created = true
		if err := s.setStatusTx(ctx, tx, run, requeued); err != nil {
			return err
		}
		return s.pokeTx(ctx, tx, run, "")
	})
	if err != nil {
		return api.Message{}, false, fmt.Errorf("message run %s: %w", run, err)
	}
	if created {
		s.wake.Poke()
	}
	return msg, created, nil
}

func (s *Store) ListMessages(ctx context.Context, run string, afterSeq int64) ([]api.Message, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT seq, key, payload, time, if_busy FROM messages WHERE run = ? AND seq > ? ORDER BY seq`, run, afterSeq)
	if err != nil {
		return nil, fmt.Errorf("list messages of %s: %w", run, err)
	}
	defer rows.Close()
	var out []api.Message
	for rows.Next() {
		var m api.Message
		var t int64
		if err := rows.Scan(&m.Seq, &m.Key, &m.Payload, &t, &m.IfBusy); err != nil {
			return nil, fmt.Errorf("list messages of %s: %w", run, err)
		}
		m.Time = fromMS(t)
		out = append(out, m)
	}
	return out, rows.Err()
}

func (s *Store) ResolveStep(ctx context.Context, run, stepKey string, resolution api.Resolution, result []byte) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		row, err := s.loadRun(ctx, tx, run)
		if err != nil {
			return err
		}
		requeued, err := store.ResolveRun(row, stepKey, resolution)
		if err != nil {
			return err
		}
		res, err := s.txExec(ctx, tx, `UPDATE steps SET resolution = ?, resolution_result = ? WHERE run = ? AND key = ? AND resolution = ''`, string(resolution), nullJSON(result), run, stepKey)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.ErrNotWaiting
		}
		if err := s.setStatusTx(ctx, tx, run, requeued); err != nil {
			return err
		}
		return s.pokeTx(ctx, tx, run, "")
	})
	if err != nil {
		return fmt.Errorf("resolve step %s of %s: %w", stepKey, run, err)
	}
	s.wake.Poke()
	return nil
}
