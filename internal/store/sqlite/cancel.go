package sqlite

import (
	"context"
	"fmt"
	"strings"
)

func (s *Store) CancelRequested(ctx context.Context, runs []string) ([]string, error) {
	var out []string
	for len(runs) > 0 {
		n := min(len(runs), 500)
		chunk := runs[:n]
		runs = runs[n:]
		args := make([]any, len(chunk))
		for i, r := range chunk {
			args[i] = r
		}
		q := `SELECT name FROM runs WHERE cancel_requested <> 0 AND name IN (?` + strings.Repeat(",?", len(chunk)-1) + `)`
		rows, err := s.r.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("cancel requests: %w", err)
		}
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				rows.Close()
				return nil, fmt.Errorf("cancel requests: %w", err)
			}
			out = append(out, name)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("cancel requests: %w", err)
		}
	}
	return out, nil
}

func (s *Store) Steered(ctx context.Context, runs []string) (map[string]int64, error) {
	out := map[string]int64{}
	for len(runs) > 0 {
		n := min(len(runs), 500)
		chunk := runs[:n]
		runs = runs[n:]
		args := make([]any, len(chunk))
		for i, r := range chunk {
			args[i] = r
		}
		q := `SELECT run, max(seq) FROM messages WHERE if_busy IN ('interrupt', 'rollback') AND run IN (?` + strings.Repeat(",?", len(chunk)-1) + `) GROUP BY run`
		rows, err := s.r.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("steering messages: %w", err)
		}
		for rows.Next() {
			var name string
			var seq int64
			if err := rows.Scan(&name, &seq); err != nil {
				rows.Close()
				return nil, fmt.Errorf("steering messages: %w", err)
			}
			out[name] = seq
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("steering messages: %w", err)
		}
	}
	return out, nil
}
