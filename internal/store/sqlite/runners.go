package sqlite

import (
	"context"
	"fmt"

	"agentrun.dev/agentrun/internal/store"
)

func (s *Store) Heartbeat(ctx context.Context, r store.RunnerInfo) error {
	now := ms(s.now())
	_, err := s.w.ExecContext(ctx, `INSERT INTO runners (name, version, host, pid, started_at, heartbeat_at, runs_held) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET version = excluded.version, host = excluded.host, pid = excluded.pid, started_at = excluded.started_at,
		heartbeat_at = excluded.heartbeat_at, runs_held = excluded.runs_held`,
		r.Name, r.Version, r.Host, r.PID, ms(r.StartedAt), now, r.RunsHeld)
	if err != nil {
		return fmt.Errorf("heartbeat of runner %s: %w", r.Name, err)
	}
	return nil
}

func (s *Store) ListRunners(ctx context.Context) ([]store.RunnerInfo, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT name, version, host, pid, started_at, heartbeat_at, runs_held FROM runners ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list runners: %w", err)
	}
	defer rows.Close()
	var out []store.RunnerInfo
	for rows.Next() {
		var r store.RunnerInfo
		var st, hb int64
		if err := rows.Scan(&r.Name, &r.Version, &r.Host, &r.PID, &st, &hb, &r.RunsHeld); err != nil {
			return nil, fmt.Errorf("list runners: %w", err)
		}
		r.StartedAt, r.HeartbeatAt = fromMS(st), fromMS(hb)
		out = append(out, r)
	}
	return out, rows.Err()
}
