package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// PurgePayloads: see store.Retention. Candidates are read page by page, oldest first (the walk is
// store.PurgeWalk); each run is purged in its own transaction after PurgeDue says so again on the
// row read inside it.
func (s *Store) PurgePayloads(ctx context.Context, before, now time.Time, max int) ([]string, error) {
	phases := make([]any, len(store.FinishedPhases))
	for i, p := range store.FinishedPhases {
		phases[i] = string(p)
	}
	// A run created after the cut-off cannot have finished before it.
	q := `SELECT name, created_at, phase, status FROM runs WHERE phase IN (?` + strings.Repeat(", ?", len(phases)-1) + `)
		AND created_at < ? AND json_extract(status, '$.payloadsPurgedAt') IS NULL AND (created_at, name) > (?, ?)
		ORDER BY created_at, name LIMIT ?`
	lastCreated, lastName := int64(-1<<62), ""
	next := func(ctx context.Context) ([]store.PurgeCandidate, error) {
		rows, err := s.r.QueryContext(ctx, q, append(phases, ms(before), lastCreated, lastName, store.PurgePage)...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var page []store.PurgeCandidate
		for rows.Next() {
			var name, phase, status string
			var created int64
			if err := rows.Scan(&name, &created, &phase, &status); err != nil {
				return nil, err
			}
			lastCreated, lastName = created, name
			c := store.PurgeCandidate{Name: name, Phase: api.Phase(phase)}
			if err := json.Unmarshal([]byte(status), &c.Status); err != nil {
				return nil, fmt.Errorf("decode run %s status: %w", name, err)
			}
			page = append(page, c)
		}
		return page, rows.Err()
	}
	return store.PurgeWalk(ctx, before, max, next, func(ctx context.Context, name string) (bool, error) {
		return s.purgeRun(ctx, name, before, now)
	})
}

func (s *Store) purgeRun(ctx context.Context, name string, before, now time.Time) (bool, error) {
	purged := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		row, err := s.loadRun(ctx, tx, name)
		if errors.Is(err, store.ErrNotFound) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return err
		}
		if !store.PurgeDue(row.Phase, row.Status, before) {
			return nil
		}
		for _, q := range []string{
			`UPDATE steps SET args = NULL, result = NULL, resolution_result = NULL WHERE run = ?`,
			`UPDATE run_events SET data = NULL WHERE run = ?`,
			`DELETE FROM files WHERE run = ?`,
			`DELETE FROM file_history WHERE run = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, name); err != nil {
				return err
			}
		}
		st := store.Purged(row.Status, now)
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, resource_version = resource_version + 1 WHERE name = ?`, mustJSON(st), name); err != nil {
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
