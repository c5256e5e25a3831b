package local

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The cgroups a dead server left behind go at once; a live server's stay, and one of an older
// server (no PID in its name) goes only once it is a minute old.
func TestRemoveStale(t *testing.T) {
	t.Parallel()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	names := map[string]bool{ // name: should remain
		fmt.Sprintf("agentrun-run-1-%d-0a1b2c3d", dead.Process.Pid):    false,
		fmt.Sprintf("agentrun-run-1-%d-0a1b2c3d", os.Getpid()):         true,
		fmt.Sprintf("agentrun-my-run-2-%d-deadbeef", dead.Process.Pid): false,
		"agentrun-ka1-9654fb66": true,  // older format, new
		"agentrun-old-1234abcd": false, // older format, aged below
		"other-thing":           true,
	}
	for n := range names {
		if err := os.Mkdir(filepath.Join(parent, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Minute)
	os.Chtimes(filepath.Join(parent, "agentrun-old-1234abcd"), old, old)
	removeStale(parent)
	for n, keep := range names {
		_, err := os.Stat(filepath.Join(parent, n))
		if (err == nil) != keep {
			t.Errorf("%s: kept %v, want %v", n, err == nil, keep)
		}
	}
}
