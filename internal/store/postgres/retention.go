package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// PurgePayloads: see store.Retention. Candidates are read page by page, oldest first (the walk is
// store.PurgeWalk); each run is purged in its own transaction after PurgeDue says so again on the
// row locked inside it.
func (s *Store) PurgePayloads(ctx context.Context, before, now time.Time, max int) ([]string, error) {
	phases := make([]string, len(store.FinishedPhases))
	for i, p := range store.FinishedPhases {
		phases[i] = string(p)
	}
	lastCreated, lastName := time.Unix(0, 0).Add(-1<<62), ""
	next := func(ctx context.Context) ([]store.PurgeCandidate, error) {
		// A run created after the cut-off cannot have finished before it.
		rows, err := s.pool.Query(ctx, `SELECT name, created_at, phase, status FROM runs
			WHERE phase = ANY($1) AND created_at < $2 AND status->>'payloadsPurgedAt' IS NULL AND (created_at, name) > ($3, $4)
			ORDER BY created_at, name LIMIT $5`, phases, before, lastCreated, lastName, store.PurgePage)
		if err != nil {
			return nil, readErr(ctx, err)
		}
		defer rows.Close()
		var page []store.PurgeCandidate
		for rows.Next() {
			var name, phase string
			var status []byte
			if err := rows.Scan(&name, &lastCreated, &phase, &status); err != nil {
				return nil, err
			}
			lastName = name
			c := store.PurgeCandidate{Name: name, Phase: api.Phase(phase)}
			if err := json.Unmarshal(status, &c.Status); err != nil {
				return nil, fmt.Errorf("decode run %s status: %w", name, err)
			}
			page = append(page, c)
		}
		if err := rows.Err(); err != nil {
			return nil, readErr(ctx, err)
		}
		return page, nil
	}
	return store.PurgeWalk(ctx, before, max, next, func(ctx context.Context, name string) (bool, error) {
		return s.purgeRun(ctx, name, before, now)
	})
}

func (s *Store) purgeRun(ctx context.Context, name string, before, now time.Time) (bool, error) {
	purged := false
	err := s.tx(ctx, func(tx pgx.Tx) error {
		purged = false
		row, err := lockRun(ctx, tx, name)
		if errors.Is(err, store.ErrNotFound) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return err
		}
		if !store.PurgeDue(row.Phase, row.Status, before) {
			return nil
		}
		b := &pgx.Batch{}
		b.Queue(`UPDATE steps SET args = NULL, result = NULL, resolution_result = NULL WHERE run = $1`, name)
		b.Queue(`UPDATE run_events SET data = NULL WHERE run = $1`, name)
		b.Queue(`DELETE FROM files WHERE run = $1`, name)
		b.Queue(`DELETE FROM file_history WHERE run = $1`, name)
		b.Queue(`UPDATE runs SET status = $2, resource_version = resource_version + 1 WHERE name = $1`, name, mustJSON(store.Purged(row.Status, now)))
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		purged = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("purge payloads of run %s: %w", name, fullErr(err))
	}
	return purged, nil
}
