package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"agentrun.dev/agentrun/internal/store"
)

// fileItems are the data-modifying WITH items of a commit's fence statement (queueFence) that
// save the run folder's changes: one upsert of every written file and one delete of every
// deleted one, each joined to the fenced run row r, so nothing is written when the lease is
// stale. arg adds a parameter and returns its placeholder; $1 is the run. A write names a path
// once. Every change is also appended to the folder's history, tagged with the seq of step (the
// step the write ends, store.Write.HistoryStep) or, for "", the run's highest step seq, both as
// the statement's snapshot has them (before this write's own changes); stepSeq, when not "", is
// the query of the seq this statement gives step (it started in the same write), used when the
// snapshot has no row of it, so the files are tagged with that step and not the one before.
func fileItems(files []store.FileWrite, step, stepSeq string, arg func(any) string) string {
	if len(files) == 0 {
		return ""
	}
	var paths, gone, allPaths []string
	var contents, allContents [][]byte
	var modes, allModes []int64
	var deleted []bool
	for _, f := range files {
		allPaths, allModes, deleted = append(allPaths, f.Path), append(allModes, int64(f.Mode)), append(deleted, f.Deleted)
		if f.Deleted {
			allContents = append(allContents, nil)
			gone = append(gone, f.Path)
			continue
		}
		content := f.Content
		if content == nil {
			content = []byte{} // NOT NULL: an empty file
		}
		allContents = append(allContents, content)
		paths, contents, modes = append(paths, f.Path), append(contents, content), append(modes, int64(f.Mode))
	}
	// A step restarted in this write keeps its seq, which the snapshot has.
	last := `SELECT next_step FROM runs WHERE name = $1`
	if stepSeq != "" {
		last = stepSeq
	}
	tag := `COALESCE((SELECT seq FROM steps WHERE run = $1 AND key = ` + arg(step) + `), (` + last + `))`
	items := `, fh AS (INSERT INTO file_history (run, tag, path, content, mode, deleted)
		SELECT $1, ` + tag + `,
			f.path, f.content, f.mode, f.deleted
		FROM r, unnest(` + arg(allPaths) + `::text[], ` + arg(allContents) + `::bytea[], ` + arg(allModes) + `::bigint[], ` + arg(deleted) + `::boolean[])
			WITH ORDINALITY AS f (path, content, mode, deleted, ord) ORDER BY f.ord)`
	if len(paths) > 0 {
		items += `, fw AS (INSERT INTO files (run, path, content, mode, size, updated_at)
			SELECT $1, f.path, f.content, f.mode, octet_length(f.content), now()
			FROM r, unnest(` + arg(paths) + `::text[], ` + arg(contents) + `::bytea[], ` + arg(modes) + `::bigint[]) AS f (path, content, mode)
			ON CONFLICT (run, path) DO UPDATE SET content = EXCLUDED.content, mode = EXCLUDED.mode, size = EXCLUDED.size,
				updated_at = EXCLUDED.updated_at)`
	}
	if len(gone) > 0 {
		items += `, fd AS (DELETE FROM files WHERE run = $1 AND path = ANY (` + arg(gone) + `::text[]) AND EXISTS (SELECT FROM r))`
	}
	return items
}

// ListFiles returns the run folder as saved, ordered by path (bytewise).
func (s *Store) ListFiles(ctx context.Context, run string) ([]store.File, error) {
	rows, err := s.read.Query(ctx, `SELECT path, content, mode, size, updated_at FROM files WHERE run = $1 ORDER BY path`, run)
	if err != nil {
		return nil, fmt.Errorf("list files of %s: %w", run, err)
	}
	defer rows.Close()
	var out []store.File
	for rows.Next() {
		f, err := scanFile(rows)
		if err != nil {
			return nil, fmt.Errorf("list files of %s: %w", run, err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list files of %s: %w", run, err)
	}
	return out, nil
}

// ListFileInfos is ListFiles without the contents.
func (s *Store) ListFileInfos(ctx context.Context, run string) ([]store.File, error) {
	rows, err := s.read.Query(ctx, `SELECT path, mode, size, updated_at FROM files WHERE run = $1 ORDER BY path`, run)
	if err != nil {
		return nil, fmt.Errorf("list file infos of %s: %w", run, err)
	}
	defer rows.Close()
	var out []store.File
	for rows.Next() {
		var f store.File
		var mode int64
		var t time.Time
		if err := rows.Scan(&f.Path, &mode, &f.Size, &t); err != nil {
			return nil, fmt.Errorf("list file infos of %s: %w", run, err)
		}
		f.Mode, f.UpdatedAt = uint32(mode), utc(t)
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list file infos of %s: %w", run, err)
	}
	return out, nil
}

// GetFile returns one saved file; ErrNotFound if it was never saved or was deleted since.
func (s *Store) GetFile(ctx context.Context, run, path string) (store.File, error) {
	f, err := scanFile(s.read.QueryRow(ctx, `SELECT path, content, mode, size, updated_at FROM files WHERE run = $1 AND path = $2`, run, path))
	if err != nil {
		return store.File{}, fmt.Errorf("get file %s of %s: %w", path, run, notFound(err))
	}
	return f, nil
}

func scanFile(row pgx.Row) (store.File, error) {
	var f store.File
	var mode int64
	var t time.Time
	if err := row.Scan(&f.Path, &f.Content, &mode, &f.Size, &t); err != nil {
		return store.File{}, err
	}
	if f.Content == nil {
		f.Content = []byte{}
	}
	f.Mode, f.UpdatedAt = uint32(mode), utc(t)
	return f, nil
}

// ---- runners ----

// Heartbeat registers a runner or refreshes its entry; HeartbeatAt is the database's now().
func (s *Store) Heartbeat(ctx context.Context, r store.RunnerInfo) error {
	err := s.ctlTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO runners (name, version, host, pid, started_at, heartbeat_at, runs_held)
			VALUES ($1, $2, $3, $4, $5, now(), $6)
			ON CONFLICT (name) DO UPDATE SET version = EXCLUDED.version, host = EXCLUDED.host, pid = EXCLUDED.pid,
				started_at = EXCLUDED.started_at, heartbeat_at = EXCLUDED.heartbeat_at, runs_held = EXCLUDED.runs_held`,
			r.Name, pgText(r.Version), pgText(r.Host), int64(r.PID), r.StartedAt, int64(r.RunsHeld))
		return err
	})
	if err != nil {
		return fmt.Errorf("heartbeat of runner %s: %w", r.Name, err)
	}
	return nil
}

// ListRunners returns every registered runner, ordered by name.
func (s *Store) ListRunners(ctx context.Context) ([]store.RunnerInfo, error) {
	rows, err := s.read.Query(ctx, `SELECT name, version, host, pid, started_at, heartbeat_at, runs_held FROM runners ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list runners: %w", err)
	}
	defer rows.Close()
	var out []store.RunnerInfo
	for rows.Next() {
		var r store.RunnerInfo
		var pid, held int64
		if err := rows.Scan(&r.Name, &r.Version, &r.Host, &pid, &r.StartedAt, &r.HeartbeatAt, &held); err != nil {
			return nil, fmt.Errorf("list runners: %w", err)
		}
		r.PID, r.RunsHeld = int(pid), int(held)
		r.StartedAt, r.HeartbeatAt = utc(r.StartedAt), utc(r.HeartbeatAt)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runners: %w", err)
	}
	return out, nil
}
