package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"agentrun.dev/agentrun/internal/store"
)

// ---- learning folders ----

func (s *Store) LearningMain(ctx context.Context, agent string) (string, error) {
	var main string
	err := s.pool.QueryRow(ctx, `SELECT main FROM learning_refs WHERE agent = $1`, agent).Scan(&main)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("learning main of %s: %w", agent, err)
	}
	return main, nil
}

func (s *Store) LearningObjects(ctx context.Context, agent string) ([]store.GitObject, error) {
	rows, err := s.pool.Query(ctx, `SELECT hash, type, data FROM learning_objects WHERE agent = $1`, agent)
	if err != nil {
		return nil, fmt.Errorf("learning objects of %s: %w", agent, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.GitObject, error) {
		var o store.GitObject
		err := r.Scan(&o.Hash, &o.Type, &o.Data)
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("learning objects of %s: %w", agent, err)
	}
	return out, nil
}

func (s *Store) UpdateLearningMain(ctx context.Context, agent string, objs []store.GitObject, old, new string) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		// The row exists before it is locked, so two first commits at once also take turns.
		if _, err := tx.Exec(ctx, `INSERT INTO learning_refs (agent, main) VALUES ($1, '') ON CONFLICT DO NOTHING`, agent); err != nil {
			return err
		}
		var current string
		if err := tx.QueryRow(ctx, `SELECT main FROM learning_refs WHERE agent = $1 FOR UPDATE`, agent).Scan(&current); err != nil {
			return err
		}
		if err := store.CheckLearningMain(agent, current, old); err != nil {
			return err
		}
		for _, o := range objs {
			if _, err := tx.Exec(ctx, `INSERT INTO learning_objects (agent, hash, type, data) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, agent, o.Hash, o.Type, o.Data); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `UPDATE learning_refs SET main = $2 WHERE agent = $1`, agent, new)
		return err
	})
	if err != nil {
		return fmt.Errorf("update learning main of %s: %w", agent, err)
	}
	return nil
}
