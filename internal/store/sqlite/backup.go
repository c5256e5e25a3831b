package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of the database at path to dest with VACUUM INTO: one read
// transaction, so a server writing meanwhile (WAL mode) is neither stopped nor seen half-way. The
// copy is written beside dest and renamed into place, mode 0600; dest must not exist.
func Backup(ctx context.Context, path, dest string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("backup: the store %s: %w", path, err)
	}
	if _, err := os.Stat(dest); err == nil {
		return fmt.Errorf("backup: %s exists: give a new file name", dest)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("backup: open %s: %w", path, err)
	}
	defer db.Close()
	tmp := dest + ".partial"
	os.Remove(tmp)
	if err := createPrivate(tmp); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	// VACUUM INTO wants an absent or empty file: createPrivate made an empty one, 0600.
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("backup: copy %s: %w", path, fullErr(err))
	}
	if err := syncFile(tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(tmp, dest); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}

// CheckBackup opens a backup read-only and checks it is an agentrun store this binary can open:
// SQLite's integrity check passes and its schema is not newer than this binary knows.
func CheckBackup(ctx context.Context, file string) (int, error) {
	if _, err := os.Stat(file); err != nil {
		return 0, fmt.Errorf("backup %s: %w", file, err)
	}
	db, err := sql.Open("sqlite", "file:"+file+"?mode=ro")
	if err != nil {
		return 0, fmt.Errorf("backup %s: %w", file, err)
	}
	defer db.Close()
	var ok string
	if err := db.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&ok); err != nil {
		return 0, fmt.Errorf("backup %s is not a SQLite database: %w", file, err)
	}
	if ok != "ok" {
		return 0, fmt.Errorf("backup %s is damaged: %s", file, ok)
	}
	s := &Store{}
	sc, err := s.schemaVersion(ctx, db)
	if err != nil {
		return 0, fmt.Errorf("backup %s is not an agentrun store: %w", file, err)
	}
	if err := sc.Check(); err != nil {
		return 0, fmt.Errorf("backup %s: %w", file, err)
	}
	return sc.Version, nil
}

// Restore replaces the database at path with a copy of the backup file (checked by CheckBackup),
// removing the old database's WAL and shared-memory files. No process may have the store open:
// the caller checks that no server runs on it.
func Restore(ctx context.Context, file, path string) error {
	if _, err := CheckBackup(ctx, file); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".restoring")
	if err := copyFile(file, tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("restore: %w", err)
	}
	for _, ext := range []string{"-wal", "-shm"} {
		if err := os.Remove(path + ext); err != nil && !errors.Is(err, os.ErrNotExist) {
			os.Remove(tmp)
			return fmt.Errorf("restore: remove %s: %w", path+ext, err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("restore: %w", err)
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func syncFile(p string) error {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
