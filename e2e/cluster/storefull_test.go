package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/model/fake"
	"github.com/jackc/pgx/v5"
)

// TestStoreFullWaitsAndRecovers fills the disk the SQLite store lives on (a tmpfs mounted for the
// test) while a run's model call is in flight: the write of its big result fails, the run shows
// Waiting/StoreFull, the API answers a write with 507 StoreFull, and once the disk has space
// again the same write goes through and the run completes with nothing lost or repeated.
func TestStoreFullWaitsAndRecovers(t *testing.T) {
	t.Parallel()
	mnt := t.TempDir()
	// mode=0700: a data folder others can write is refused.
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=12m,mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (needs root or CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })

	content := strings.Repeat("0123456789abcdef", 400<<10/16) // 400 KiB
	script := `
entries:
  - name: big
    match: "Write the big file"
    turns:
      - text: "Writing it."
        tool_calls:
          - name: write
            input: {path: big.txt, content: "` + content + `"}
      - text: "Wrote big.txt."
`
	e := NewEnv(t, script)
	e.Dir = filepath.Join(mnt, "home")
	if err := os.Mkdir(e.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// When the first turn's call arrives (its intent is written, its reply not yet), fill the
	// disk and leave 128 KiB: enough for a status, not for the 400 KiB reply.
	filler := filepath.Join(mnt, "filler")
	filled := make(chan struct{})
	e.Model.OnRequest(func(c fake.Call) {
		if c.Entry == "big" && c.Turn == 0 {
			if err := fillDisk(filler); err != nil {
				t.Error(err)
			}
			fi, _ := os.Stat(filler)
			if err := os.Truncate(filler, fi.Size()-128<<10); err != nil {
				t.Error(err)
			}
			close(filled)
		}
	})
	e.Start()
	if st := e.Do("POST", "/v2/agents", `{"definition": {"id": "big", "tools": ["write"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	// The cap covers the worst case of a call carrying the 400 KiB back.
	name := "bigrun"
	if st := e.Do("POST", "/v2/agentruns", `{"kind": "AgentRun", "metadata": {"name": "bigrun"}, "spec": {"agent": "big", "input": "Write the big file", "maxCostUSD": "20"}}`, nil); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	select {
	case <-filled:
	case <-time.After(30 * time.Second):
		t.Fatalf("the model was never called: %+v", e.GetRun(name).Status)
	}

	deadline := time.Now().Add(30 * time.Second)
	var r api.AgentRun
	for time.Now().Before(deadline) {
		r = e.GetRun(name)
		if r.Status.Reason == api.ReasonStoreFull || api.Finished(r.Status.Phase) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.Status.Phase != api.PhaseWaiting || r.Status.Reason != api.ReasonStoreFull || !strings.Contains(r.Status.Message, "full") {
		t.Fatalf("with the disk full the run is %s/%s %q, want Waiting/StoreFull saying the store is full", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	// An API write that needs space is refused with the stable code, not 500 Internal.
	big := `{"definition": {"id": "big2", "instructions": "` + content[:250000] + `"}}`
	var apiErr api.Error
	if st := e.Do("POST", "/v2/agents", big, &apiErr); st != http.StatusInsufficientStorage || apiErr.Code != api.CodeStoreFull {
		t.Fatalf("create an agent on a full disk: HTTP %d %+v, want 507 StoreFull", st, apiErr)
	}
	// runs wait says the run waits on someone (exit 8), not that it runs.
	e.MustCLI(8, "runs", "wait", name)

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	r = e.WaitPhase(name, 30*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("after space was freed the run is %s/%s %q", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	// Nothing lost: the file the agent wrote is whole; nothing repeated: the model answered the
	// first turn once.
	req, _ := http.NewRequest("GET", e.URL+"/v2/agentruns/"+name+"/files/big.txt", nil)
	req.Header.Set("Authorization", "Bearer "+e.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(got) != content {
		t.Errorf("big.txt: HTTP %d, %d bytes, want the %d bytes written", resp.StatusCode, len(got), len(content))
	}
	if n := e.Model.CountTurn("big", 0); n != 1 {
		t.Errorf("model calls for the first turn = %d, want 1 (the reply was kept while the store was full)", n)
	}
	evs := e.Events(name)
	if !HasEvent(evs, "store.full", "full") || !HasEvent(evs, "store.space", "space") {
		t.Errorf("timeline lacks store.full and store.space: %+v", evs)
	}
	if resp, err := http.Get(e.URL + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("healthz after recovery: %v %v", resp, err)
	}
}

// fillDisk writes path until its filesystem has no space left (it runs in the model server's
// request goroutine, so it returns its error rather than failing the test).
func fillDisk(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return fmt.Errorf("fill disk: %w", err)
		}
	}
}

// TestHealthzChecksStore: /healthz answers ok while the store answers, and 503 with the reason
// once the store fails (its PostgreSQL schema dropped under the running server); /livez still
// answers ok then.
func TestHealthzChecksStore(t *testing.T) {
	t.Parallel()
	u := PGURL(t)
	e := NewEnv(t, QuickstartScript)
	e.Start("AGENTRUN_STORE_URL=" + u)
	getPath := func(path string) (int, string) {
		resp, err := http.Get(e.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	get := func() (int, string) { return getPath("/healthz") }
	if st, body := get(); st != 200 || body != "ok\n" {
		t.Fatalf("healthz with a working store: %d %q", st, body)
	}
	pu, _ := url.Parse(u)
	schema := pu.Query().Get("search_path")
	conn, err := pgx.Connect(context.Background(), os.Getenv("AGENTRUN_TEST_POSTGRES_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
		t.Fatal(err)
	}
	st, body := get()
	// What failed, not the driver's words (which name the database's user, host and port).
	if st != http.StatusServiceUnavailable || !strings.Contains(body, "store: unreachable") || strings.Contains(body, "schema_migrations") {
		t.Fatalf("healthz with the store's schema gone: %d %q, want 503 naming the store and no more", st, body)
	}
	// A liveness probe reads /livez: the process still serves, and restarting it would not bring
	// the store back.
	if st, body := getPath("/livez"); st != 200 || body != "ok\n" {
		t.Fatalf("livez with the store's schema gone: %d %q, want 200 (the process serves)", st, body)
	}
}
