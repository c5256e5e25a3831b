package app

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// secureDataDir checks and tightens the data folder at every start. It holds the API token, the
// session and seal keys, the accounts and the store: a folder (or file in it) that another user
// can write, or that another user owns, may already have been tampered with, so the process
// refuses to start on it rather than quietly fixing it. Otherwise the folder is made 0700 and
// every file directly in it 0600, whatever an older version or a umask left (agentrun.db was
// 0644). Subfolders (run folders) are left as they are: the 0700 folder above them keeps other
// users out.
func secureDataDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data folder %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("data folder %s is not a folder", dir)
	}
	if err := checkOwner(dir, st); err != nil {
		return err
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("data folder %s is writable by other users (mode %04o): refusing to start, as its keys and token may have been replaced; check its contents, then chmod 700 %s", dir, st.Mode().Perm(), dir)
	}
	if st.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("make data folder %s private: %w", dir, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("data folder %s: %w", dir, err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue // folders (runs/) and anything else are not the process's secrets
		}
		p := filepath.Join(dir, e.Name())
		info, err := os.Lstat(p)
		if err != nil {
			continue // removed meanwhile
		}
		if err := checkOwner(p, info); err != nil {
			return err
		}
		if info.Mode().Perm()&0o022 != 0 {
			return fmt.Errorf("%s in the data folder is writable by other users (mode %04o): refusing to start; check it, then chmod 600 %s", p, info.Mode().Perm(), p)
		}
		if info.Mode().Perm() != 0o600 {
			if err := os.Chmod(p, 0o600); err != nil {
				return fmt.Errorf("make %s private: %w", p, err)
			}
		}
	}
	return nil
}

// checkOwner refuses a path owned by a user other than the one this process runs as.
func checkOwner(p string, info fs.FileInfo) error {
	sys, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Geteuid(); int(sys.Uid) != uid {
		return fmt.Errorf("%s is owned by uid %d, not by this process's uid %d: refusing to start on a data folder another user controls (use --data or AGENTRUN_HOME for a folder of your own)", p, sys.Uid, uid)
	}
	return nil
}
