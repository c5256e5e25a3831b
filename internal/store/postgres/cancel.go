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
