package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"agentrun.dev/agentrun/internal/store"
)

// ---- learning folders ----

func (s *Store) LearningMain(ctx context.Context, agent string) (string, error) {
	var main string
	err := s.r.QueryRowContext(ctx, `SELECT main FROM learning_refs WHERE agent = ?`, agent).Scan(&main)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("learning main of %s: %w", agent, err)
	}
	return main, nil
}

func (s *Store) LearningObjects(ctx context.Context, agent string) ([]store.GitObject, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT hash, type, data FROM learning_objects WHERE agent = ?`, agent)
	if err != nil {
		return nil, fmt.Errorf("learning objects of %s: %w", agent, err)
	}
	defer rows.Close()
	var out []store.GitObject
	for rows.Next() {
		var o store.GitObject
		if err := rows.Scan(&o.Hash, &o.Type, &o.Data); err != nil {
			return nil, fmt.Errorf("learning objects of %s: %w", agent, err)
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

func (s *Store) UpdateLearningMain(ctx context.Context, agent string, objs []store.GitObject, old, new string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var current string
		err := tx.QueryRowContext(ctx, `SELECT main FROM learning_refs WHERE agent = ?`, agent).Scan(&current)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := store.CheckLearningMain(agent, current, old); err != nil {
			return err
		}
		for _, o := range objs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO learning_objects (agent, hash, type, data) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, agent, o.Hash, o.Type, o.Data); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO learning_refs (agent, main) VALUES (?, ?) ON CONFLICT (agent) DO UPDATE SET main = excluded.main`, agent, new)
		return err
	})
	if err != nil {
		return fmt.Errorf("update learning main of %s: %w", agent, err)
	}
	return nil
}
