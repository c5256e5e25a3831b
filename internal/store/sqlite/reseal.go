package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"agentrun.dev/agentrun/internal/store"
)

var _ store.Resealer = (*Store)(nil)

// lockPath is the file beside the database that every serve and runner process holds a shared
// flock on while it uses the store, and that a reseal takes exclusively. flock works between the
// processes of one host (containers sharing a volume included), which is where SQLite's WAL works.
func lockPath(db string) string { return db + ".lock" }

func openLock(db string) (*os.File, error) {
	f, err := os.OpenFile(lockPath(db), os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store lock file: %w", err)
	}
	return f, nil
}

// HoldInUse takes the shared lock on the store's lock file until the store closes.
func (s *Store) HoldInUse(ctx context.Context, waiting func()) error {
	if s.path == "" || s.inUse != nil {
		return nil
	}
	f, err := openLock(s.path)
	if err != nil {
		return err
	}
	for said := false; ; {
		err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return fmt.Errorf("lock %s: %w", lockPath(s.path), err)
		}
		if !said && waiting != nil {
			waiting()
			said = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return fmt.Errorf("waiting for a secrets reseal to let go of %s: %w", lockPath(s.path), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	s.inUse = f
	return nil
}

// ResealSecrets rotates every sealed value in one write transaction, holding the lock file
// exclusively (not waiting for it) from before the transaction until after it ends.
func (s *Store) ResealSecrets(ctx context.Context, reseal func(name string, sealed []byte) ([]byte, error), written func(done, total int)) (int, error) {
	if s.path != "" {
		f, err := openLock(s.path)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			if errors.Is(err, unix.EWOULDBLOCK) {
				return 0, fmt.Errorf("%w: %s is held%s: stop the server and every runner on this store, then reseal", store.ErrInUse, lockPath(s.path), holders(f))
			}
			return 0, fmt.Errorf("lock %s: %w", lockPath(s.path), err)
		}
	}
	var n int
	err := s.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT name, sealed FROM secrets ORDER BY name`)
		if err != nil {
			return err
		}
		var vals []store.Sealed
		for rows.Next() {
			var v store.Sealed
			if err := rows.Scan(&v.Name, &v.Value); err != nil {
				rows.Close()
				return err
			}
			vals = append(vals, v)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		n, err = store.ResealAll(vals, reseal, func(name string, sealed []byte) error {
			_, err := tx.ExecContext(ctx, `UPDATE secrets SET sealed = ? WHERE name = ?`, sealed, name)
			return err
		}, written)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("reseal secrets: %w", err)
	}
	return n, nil
}

// holders names the processes /proc/locks says hold a flock on f's file (", by pids 12, 34"),
// or "" when it cannot tell (another host's kernel, no /proc).
func holders(f *os.File) string {
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	lf, err := os.Open("/proc/locks")
	if err != nil {
		return ""
	}
	defer lf.Close()
	ino := ":" + strconv.FormatUint(st.Ino, 10)
	var pids []string
	sc := bufio.NewScanner(lf)
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  READ  4242 08:01:1234567 0 EOF"
		f := strings.Fields(sc.Text())
		if len(f) >= 6 && f[1] == "FLOCK" && strings.HasSuffix(f[5], ino) && f[4] != strconv.Itoa(os.Getpid()) {
			pids = append(pids, f[4])
		}
	}
	if len(pids) == 0 {
		return ""
	}
	return ", by pid " + strings.Join(pids, ", ")
}
