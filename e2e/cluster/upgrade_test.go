package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"
)

// getBody answers a GET's status and body.
func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitReady polls url's /readyz until it answers 200 (a fresh server's runner says "not claiming
// yet" until its first claim, which under load can take a moment) and answers the last reply.
func waitReady(t *testing.T, url string) (int, string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st, body := getBody(t, url+"/readyz")
		if st == 200 || time.Now().After(deadline) {
			return st, body
		}
	}
}

// wantRefusal checks a refusal names the store's schema version, what this binary knows, and the
// agentrun that migrated it.
func wantRefusal(t *testing.T, what string, code int, out string, newer, known int) {
	t.Helper()
	for _, want := range []string{
		fmt.Sprintf("schema version %d", newer),
		fmt.Sprintf("knows schema versions up to %d", known),
		"agentrun 99.0.0 or later",
	} {
		if code == 0 || !strings.Contains(out, want) {
			t.Errorf("%s on a store migrated by a newer agentrun: exit %d, output lacks %q:\n%s", what, code, want, Tail(out, 3000))
		}
	}
}

// TestNewerSchemaRefusesToStartSQLite: a store whose schema a newer agentrun migrated (a higher
// migration row, and the writer it recorded) makes this binary's serve exit at once, naming both
// schema versions and the agentrun it needs, and leaves the store as it was.
func TestNewerSchemaRefusesToStartSQLite(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, QuickstartScript)
	e.Start()
	if st, body := waitReady(t, e.URL); st != 200 || !strings.HasPrefix(body, "ok") {
		t.Fatalf("readyz of a fresh server: %d %q", st, body)
	}
	e.Kill()
	db, err := sql.Open("sqlite", filepath.Join(e.Dir, "agentrun.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var known int
	if err := db.QueryRow(`SELECT MAX(version) FROM schema_migrations`).Scan(&known); err != nil {
		t.Fatal(err)
	}
	var by string
	if err := db.QueryRow(`SELECT agentrun_version FROM schema_writers WHERE version = ?`, known).Scan(&by); err != nil || by == "" {
		t.Fatalf("the store does not record which agentrun applied migration %d: %q %v", known, by, err)
	}
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0); INSERT INTO schema_writers VALUES (?, '99.0.0')`, known+1, known+1); err != nil {
		t.Fatal(err)
	}
	code, out := RunToExit(t, e, []string{"serve", "--listen", "127.0.0.1:0"})
	wantRefusal(t, "serve", code, out, known+1, known)
	var n int
	if err := db.QueryRow(`SELECT MAX(version) FROM schema_migrations`).Scan(&n); err != nil || n != known+1 {
		t.Errorf("schema after the refusal: %d %v, want %d untouched", n, err, known+1)
	}
}

// TestNewerSchemaRefusesToStartPostgres: the same on PostgreSQL, for serve and runner; and a
// runner already running when another process migrates the store past it stops claiming, says
// which agentrun it needs (its log and /readyz on --metrics-addr), and claims again once the
// schema is one it can write.
func TestNewerSchemaRefusesToStartPostgres(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, clusterScript)
	c.LeaseTTL = "30s"
	c.StartServer()
	if st, body := waitReady(t, c.URL); st != 200 {
		t.Fatalf("readyz of serve --no-runner: %d %q", st, body)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	maddr := ln.Addr().String()
	ln.Close()
	r := c.StartRunner("r1", "--metrics-addr", maddr)
	waitReady := func(want int, sub string) string {
		t.Helper()
		deadline := time.Now().Add(40 * time.Second)
		for {
			resp, err := http.Get("http://" + maddr + "/readyz")
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == want && strings.Contains(string(b), sub) {
					return string(b)
				}
				if time.Now().After(deadline) {
					t.Fatalf("runner /readyz: %d %q, want %d with %q\n%s", resp.StatusCode, b, want, sub, Tail(r.Stderr.String(), 3000))
				}
			} else if time.Now().After(deadline) {
				t.Fatalf("runner /readyz: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitReady(200, "ok")
	if st, body := getBody(t, "http://"+maddr+"/healthz"); st != 200 || body != "ok\n" {
		t.Fatalf("runner /healthz: %d %q", st, body)
	}

	ctx := context.Background()
	cu, _ := url.Parse(c.StoreURL)
	q := cu.Query()
	q.Del("pool_max_conns") // a pool setting, not a connection's
	cu.RawQuery = q.Encode()
	conn, err := pgx.Connect(ctx, cu.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var known int
	if err := conn.QueryRow(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&known); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, known+1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO schema_writers (version, agentrun_version) VALUES ($1, '99.0.0')`, known+1); err != nil {
		t.Fatal(err)
	}

	// A new process refuses to start: serve and runner alike.
	code, out := RunToExit(t, c.Env, []string{"serve", "--listen", "127.0.0.1:0", "--no-runner"})
	wantRefusal(t, "serve", code, out, known+1, known)
	code, out = RunToExit(t, c.Env, []string{"runner", "--name", "late", "--data", t.TempDir()})
	wantRefusal(t, "runner", code, out, known+1, known)

	// The running runner stops claiming within its 10 s check, and says why.
	body := waitReady(503, "refuses to claim")
	wantRefusal(t, "the running runner's /readyz", 1, body, known+1, known)
	if st, body := getBody(t, c.URL+"/readyz"); st != 503 || !strings.Contains(body, "schema version") {
		t.Errorf("server /readyz on a newer schema: %d %q, want 503 naming the schema", st, body)
	}
	CreateCounterAgent(t, c.Env, `["dev_count","write"]`)
	names := createTaskRuns(t, c.Env, 1)
	time.Sleep(3 * time.Second) // several claim rounds
	if run := c.GetRun(names[0]); run.Status.Phase != api.PhaseQueued {
		t.Errorf("a run created while the runner refuses: %s, want Queued (not claimed)", run.Status.Phase)
	}
	if !strings.Contains(r.Stderr.String(), "refusing to claim runs") {
		t.Errorf("the runner's log does not say it refuses to claim:\n%s", Tail(r.Stderr.String(), 3000))
	}

	// Back to a schema it knows (the newer binary rolled back): it claims again and the run ends.
	if _, err := conn.Exec(ctx, `DELETE FROM schema_migrations WHERE version = $1`, known+1); err != nil {
		t.Fatal(err)
	}
	waitReady(200, "ok")
	c.WaitPhase(names[0], time.Minute, api.PhaseSucceeded)

	// The store gone (its schema dropped; the shared PostgreSQL here cannot be stopped): both
	// processes go unready, naming the store.
	if _, err := conn.Exec(ctx, `DROP SCHEMA `+q.Get("search_path")+` CASCADE`); err != nil {
		t.Fatal(err)
	}
	waitReady(503, "store:")
	if st, body := getBody(t, c.URL+"/readyz"); st != 503 || !strings.Contains(body, "store:") {
		t.Errorf("server /readyz with its store gone: %d %q, want 503 naming the store", st, body)
	}
}
