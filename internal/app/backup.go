package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/internal/store/sqlite"
)

// sqlitePath is the SQLite store's file for the data folder dir, or an error naming what to do
// when the store is PostgreSQL (AGENTRUN_STORE_URL).
func sqlitePath(dir string) (string, error) {
	url := os.Getenv("AGENTRUN_STORE_URL")
	if p, ok := strings.CutPrefix(url, "sqlite:"); ok && p != "" {
		return p, nil
	}
	if url != "" && !strings.HasPrefix(url, "sqlite:") {
		return "", errors.New("AGENTRUN_STORE_URL names a PostgreSQL store: back it up with pg_dump and restore it with pg_restore (docs/scale-out-and-deploy.md#backups); backup and restore are for the SQLite store")
	}
	return filepath.Join(dir, "agentrun.db"), nil
}

func newBackupCmd() *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a consistent copy of the SQLite store to FILE, while the server runs",
		Long: `Write a consistent copy of the data folder's SQLite store (agentrun.db) to FILE, a new file.
The server may keep running: the copy is one read transaction (SQLite's VACUUM INTO), so runs in
flight are neither paused nor copied half-way. The copy holds everything the store holds, sealed
secrets included (sealed: they open only with the same AGENTRUN_SEAL_KEY or seal.key, which
this does not copy: keep the key apart). Restore it with ` + "`agentrun restore FILE`" + `.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := dataDir(data)
			if err != nil {
				return err
			}
			path, err := sqlitePath(dir)
			if err != nil {
				return err
			}
			if err := sqlite.Backup(cmd.Context(), path, args[0]); err != nil {
				return err
			}
			fi, err := os.Stat(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "backed up %s to %s (%d bytes)\n", path, args[0], fi.Size())
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "data folder (default $AGENTRUN_HOME or ~/.agentrun)")
	return cmd
}

func newRestoreCmd() *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "restore FILE",
		Short: "Replace the SQLite store with a backup (the server must be stopped)",
		Long: `Replace the data folder's SQLite store with FILE, a copy made by ` + "`agentrun backup`" + `. Stop the
server first: restore refuses while a server runs on the data folder. The backup is checked
first (SQLite's integrity check, a schema this agentrun knows); the token, seal.key and run
folders in the data folder stay. Start the server again and the runs carry on from the backup:
a run that waited on a person still waits, a running one resumes from its last finished step.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := dataDir(data)
			if err != nil {
				return err
			}
			path, err := sqlitePath(dir)
			if err != nil {
				return err
			}
			if pid, ok := serverRunning(dir); ok {
				return fmt.Errorf("a server (pid %d) runs on %s: stop it, then restore", pid, dir)
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				return err
			}
			if err := sqlite.Restore(cmd.Context(), args[0], path); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "restored %s from %s: start the server again\n", path, args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "data folder (default $AGENTRUN_HOME or ~/.agentrun)")
	return cmd
}

// serverRunning reports whether the data folder's server.json names a live process.
func serverRunning(dir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "server.json"))
	if err != nil {
		return 0, false
	}
	var info struct {
		PID int `json:"pid"`
	}
	if json.Unmarshal(b, &info) != nil || info.PID <= 0 {
		return 0, false
	}
	// Signal 0 checks the process exists; EPERM means it exists as another user's.
	err = syscall.Kill(info.PID, 0)
	return info.PID, err == nil || errors.Is(err, syscall.EPERM)
}
