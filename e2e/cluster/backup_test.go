package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// TestBackupRestoreResumesWaitingRun: `agentrun backup` copies the SQLite store while the server
// runs (a run waits on a question); after the store is lost, `agentrun restore` (refused while a
// server runs) puts the copy back, the server starts on it, a run made after the backup is gone,
// and the waiting run takes its answer and finishes, writing its file.
func TestBackupRestoreResumesWaitingRun(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, QuickstartScript)
	e.Start()
	CreateCounterAgent(t, e, `["write","ask_person"]`)
	body := `{"kind":"AgentRun","metadata":{"name":"notes-1"},"spec":{"agent":"worker","input":"Ask me which region to cover, then write region.md about it."}}`
	if st := e.Do("POST", "/v2/agentruns", body, nil); st != 201 {
		t.Fatalf("create run: HTTP %d", st)
	}
	e.WaitPhase("notes-1", time.Minute, api.PhaseWaiting)

	file := filepath.Join(t.TempDir(), "agentrun-backup.db")
	e.MustCLI(0, "backup", file)
	if r := e.CLI(e.Dir, "backup", file); r.Code == 0 || !strings.Contains(r.Stderr, "exists") {
		t.Errorf("a second backup to the same file: exit %d %q, want refused (the file exists)", r.Code, r.Stderr)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v %v, want mode 0600", fi, err)
	}
	after := `{"kind":"AgentRun","metadata":{"name":"after-backup"},"spec":{"agent":"worker","input":"Ask me which region, again"}}`
	if st := e.Do("POST", "/v2/agentruns", after, nil); st != 201 {
		t.Fatalf("create run after the backup: HTTP %d", st)
	}
	if r := e.CLI(e.Dir, "restore", file); r.Code == 0 || !strings.Contains(r.Stderr, "stop it") {
		t.Errorf("restore while the server runs: exit %d %q, want refused", r.Code, r.Stderr)
	}

	// The store is lost: the server dies and its database with it.
	e.Kill()
	for _, ext := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(e.Dir, "agentrun.db"+ext))
	}
	bad := filepath.Join(t.TempDir(), "not-a-store")
	os.WriteFile(bad, []byte("hello"), 0o600)
	if r := e.CLI(e.Dir, "restore", bad); r.Code == 0 || !strings.Contains(r.Stderr, "not") {
		t.Errorf("restore of a file that is no store: exit %d %q, want refused", r.Code, r.Stderr)
	}
	e.MustCLI(0, "restore", file)
	e.Start()
	if st := e.Do("GET", "/v2/agentruns/after-backup", nil, nil); st != 404 {
		t.Errorf("a run made after the backup: HTTP %d after the restore, want 404", st)
	}
	if r := e.GetRun("notes-1"); r.Status.Phase != api.PhaseWaiting || r.Status.WaitingOn == nil || r.Status.WaitingOn.Question == "" {
		t.Fatalf("the restored run: %+v, want Waiting on its question", r.Status)
	}
	e.MustCLI(0, "runs", "message", "notes-1", "--content", "Europe")
	e.WaitPhase("notes-1", time.Minute, api.PhaseSucceeded)
	res := e.MustCLI(0, "runs", "read-file", "notes-1", "region.md")
	if !strings.Contains(res.Stdout, "Europe") {
		t.Errorf("region.md after the restore = %q, want it about Europe", res.Stdout)
	}
}
