package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"agentrun.dev/agentrun/internal/store"
)

// writeFiles saves a write's folder changes and appends them to the folder's history, tagged
// with the seq of step (store.Write.HistoryStep), or the run's highest step seq when step is "".
func (s *Store) writeFiles(ctx context.Context, tx *sql.Tx, run, step string, files []store.FileWrite) error {
	if len(files) == 0 {
		return nil
	}
	var tag int64
	if err := s.txQueryRow(ctx, tx, `SELECT COALESCE((SELECT seq FROM steps WHERE run = ? AND key = ?), (SELECT next_step FROM runs WHERE name = ?))`, run, step, run).Scan(&tag); err != nil {
		return err
	}
	now := ms(s.now())
	for _, f := range files {
		deleted := 0
		var content []byte
		if f.Deleted {
			deleted = 1
		} else if content = f.Content; content == nil {
			content = []byte{}
		}
		if _, err := s.txExec(ctx, tx, `INSERT INTO file_history (run, tag, path, content, mode, deleted) VALUES (?, ?, ?, ?, ?, ?)`,
			run, tag, f.Path, content, f.Mode, deleted); err != nil {
			return err
		}
		if f.Deleted {
			if _, err := s.txExec(ctx, tx, `DELETE FROM files WHERE run = ? AND path = ?`, run, f.Path); err != nil {
				return err
			}
			continue
		}
		if _, err := s.txExec(ctx, tx, `INSERT INTO files (run, path, content, mode, size, updated_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (run, path) DO UPDATE SET content = excluded.content, mode = excluded.mode, size = excluded.size, updated_at = excluded.updated_at`,
			run, f.Path, content, f.Mode, len(content), now); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) ListFiles(ctx context.Context, run string) ([]store.File, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT path, content, mode, size, updated_at FROM files WHERE run = ? ORDER BY path`, run)
	if err != nil {
		return nil, fmt.Errorf("list files of %s: %w", run, err)
	}
	defer rows.Close()
	var out []store.File
	for rows.Next() {
		var f store.File
		var t int64
		if err := rows.Scan(&f.Path, &f.Content, &f.Mode, &f.Size, &t); err != nil {
			return nil, fmt.Errorf("list files of %s: %w", run, err)
		}
		f.UpdatedAt = fromMS(t)
		out = append(out, f)
	}
	return out, rows.Err()
}

func (s *Store) ListFileInfos(ctx context.Context, run string) ([]store.File, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT path, mode, size, updated_at FROM files WHERE run = ? ORDER BY path`, run)
	if err != nil {
		return nil, fmt.Errorf("list file infos of %s: %w", run, err)
	}
	defer rows.Close()
	var out []store.File
	for rows.Next() {
		var f store.File
		var t int64
		if err := rows.Scan(&f.Path, &f.Mode, &f.Size, &t); err != nil {
			return nil, fmt.Errorf("list file infos of %s: %w", run, err)
		}
		f.UpdatedAt = fromMS(t)
		out = append(out, f)
	}
	return out, rows.Err()
}

func (s *Store) GetFile(ctx context.Context, run, path string) (store.File, error) {
	f := store.File{Path: path}
	var t int64
	err := s.r.QueryRowContext(ctx, `SELECT content, mode, size, updated_at FROM files WHERE run = ? AND path = ?`, run, path).Scan(&f.Content, &f.Mode, &f.Size, &t)
	if errors.Is(err, sql.ErrNoRows) {
		return store.File{}, fmt.Errorf("file %s of run %s: %w", path, run, store.ErrNotFound)
	}
	if err != nil {
		return store.File{}, fmt.Errorf("file %s of run %s: %w", path, run, err)
	}
	f.UpdatedAt = fromMS(t)
	return f, nil
}
