package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A first start creates the database and its WAL files 0600 even under the common 022 umask, so
// no other user can read the store before the next start's data folder check tightens it.
func TestOpenCreatesPrivateFiles(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "agentrun.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.ListAgents(context.Background()); err != nil { // the readers open their connections too
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if m := st.Mode().Perm(); m != 0o600 {
			t.Errorf("%s is %04o, want 0600", filepath.Base(p), m)
		}
	}
}
