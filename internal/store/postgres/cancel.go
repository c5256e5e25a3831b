package postgres

import (
	"context"
	"fmt"
)

func (s *Store) CancelRequested(ctx context.Context, runs []string) ([]string, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	rows, err := s.ctl.Query(ctx, `SELECT name FROM runs WHERE cancel_requested AND name = ANY($1)`, runs)
	if err != nil {
		return nil, fmt.Errorf("cancel requests: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("cancel requests: %w", err)
		}
		out = append(out, name)
	}
	return out, rows.Err()
}

func (s *Store) Steered(ctx context.Context, runs []string) (map[string]int64, error) {
	out := map[string]int64{}
	if len(runs) == 0 {
		return out, nil
	}
	rows, err := s.ctl.Query(ctx, `SELECT run, max(seq) FROM messages WHERE if_busy IN ('interrupt', 'rollback') AND run = ANY($1) GROUP BY run`, runs)
	if err != nil {
		return nil, fmt.Errorf("steering messages: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var seq int64
		if err := rows.Scan(&name, &seq); err != nil {
			return nil, fmt.Errorf("steering messages: %w", err)
		}
		out[name] = seq
	}
	return out, rows.Err()
}
