package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/secret"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/postgres"
	"agentrun.dev/agentrun/internal/store/sqlite"
	"agentrun.dev/agentrun/internal/trigger"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Seal-key rotation (issue 17): secrets sealed under key A are resealed under key B by
// `agentrun secrets reseal --from-key`, on each backend: refused while a server or runner uses the
// store and with a wrong old key (nothing changed), all or nothing when killed in the middle, and
// afterwards a server with B opens every secret (a BYOK run uses the model key, a webhook
// delivery verifies with the signing secret) while one with A refuses to start.
func TestResealSQLite(t *testing.T) { t.Parallel(); testReseal(t, false) }

func TestResealPostgres(t *testing.T) { t.Parallel(); testReseal(t, true) }

const resealScript = `
entries:
  - name: own
    match: "*"
    turns:
      - text: "paid by you"
        usage: {input_tokens: 10, output_tokens: 5}
`

// extraSecrets is how many secrets besides the model key and the signing secret the store holds,
// so that a reseal killed after a few writes has written some and not others.
const extraSecrets = 12

func newSealKey(t *testing.T, dir, name string) (string, string) {
	t.Helper()
	k := make([]byte, 32)
	rand.Read(k)
	v := base64.StdEncoding.EncodeToString(k)
	return v, WriteFile(t, dir, name, v+"\n")
}

func testReseal(t *testing.T, pg bool) {
	e := NewEnv(t, resealScript)
	storeURL := "sqlite:" + filepath.Join(e.Dir, "agentrun.db")
	if pg {
		storeURL = PGURL(t)
		e.Extra = append(e.Extra, "AGENTRUN_STORE_URL="+storeURL)
	}
	keys := t.TempDir()
	keyA, fileA := newSealKey(t, keys, "a.key")
	keyB, _ := newSealKey(t, keys, "b.key")
	_, fileC := newSealKey(t, keys, "c.key")
	withA, withB := "AGENTRUN_SEAL_KEY="+keyA, "AGENTRUN_SEAL_KEY="+keyB

	e.Start(withA, "ANTHROPIC_API_KEY=")
	session := e.PersonSession()
	put := func(name, body string) {
		t.Helper()
		if st := e.DoAs(session, "PUT", "/v2/secrets/"+name, body, nil); st != 200 {
			t.Fatalf("set secret %s: HTTP %d", name, st)
		}
	}
	put("anthropic-key", `{"data":{"ANTHROPIC_API_KEY":"sk-ant-test-reseal"}}`)
	put("lead-hook", `{"data":{"WEBHOOK_SECRET":"`+VecSecret+`"}}`)
	for i := range extraSecrets {
		put(fmt.Sprintf("tool-%02d", i), fmt.Sprintf(`{"data":{"TOKEN":"tok-%d"}}`, i))
	}
	if st := e.Do("PUT", "/v2/agents/mine", `{"metadata":{"name":"mine"},"spec":{"model":{"access":"BYOK","name":"claude-sonnet-4-5","apiKeySecret":"anthropic-key"}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	if st := e.Do("PUT", "/v2/triggers/inbound-lead", `{"apiVersion":"agentrun.dev/v1","kind":"Trigger","metadata":{"name":"inbound-lead"},
		"spec":{"agent":"mine","input":"Lead {{.body.email}}","webhook":{"secretRef":"lead-hook"}}}`, nil); st != 201 {
		t.Fatalf("create trigger: HTTP %d", st)
	}
	byokRun(t, e)
	all := extraSecrets + 2
	if got := sealedUnder(t, storeURL, keyA); got != all {
		t.Fatalf("%d of %d secrets open with key A after setting them", got, all)
	}

	reseal := func(stdin string, extraEnv []string, args ...string) Result {
		t.Helper()
		cmd := exec.Command(BinPath, append([]string{"secrets", "reseal"}, args...)...)
		cmd.Env = append(e.BaseEnv(), extraEnv...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb SyncBuffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("reseal: %v", err)
		}
		return Result{Stdout: out.String(), Stderr: errb.String(), Code: code}
	}
	mustRefuse := func(what string, r Result, want ...string) {
		t.Helper()
		if r.Code != 1 {
			t.Errorf("%s: exit %d, want 1\nstdout: %s\nstderr: %s", what, r.Code, r.Stdout, r.Stderr)
		}
		for _, w := range want {
			if !strings.Contains(r.Stderr, w) {
				t.Errorf("%s: stderr does not say %q:\n%s", what, w, r.Stderr)
			}
		}
		if got := sealedUnder(t, storeURL, keyA); got != all {
			t.Fatalf("%s changed the store: %d of %d secrets open with key A", what, got, all)
		}
	}

	// While the server runs, the store is in use: refused, naming who holds it.
	held := "is held, by pid"
	if pg {
		held = "held by 1 agentrun process, connected from"
	}
	mustRefuse("a reseal while the server runs", reseal("", []string{withB}, "--from-key", fileA), "in use by a running agentrun process", held, "nothing was changed")
	e.Kill() // SIGKILL: the system lets go of what it held
	waitLetGo(t, storeURL)

	// A runner alone holds it too.
	runnerData := t.TempDir()
	rcmd := exec.Command(BinPath, "runner", "--name", "r1", "--data", runnerData)
	rcmd.Env = append(e.BaseEnv(), withA, "AGENTRUN_STORE_URL="+storeURL)
	rout := &SyncBuffer{}
	rcmd.Stdout, rcmd.Stderr = rout, rout
	if err := rcmd.Start(); err != nil {
		t.Fatal(err)
	}
	rdone := make(chan struct{})
	go func() { rcmd.Wait(); close(rdone) }()
	waitOutput(t, rout, rdone, "agentrun runner r1")
	mustRefuse("a reseal while a runner runs", reseal("", []string{withB}, "--from-key", fileA), "in use by a running agentrun process", "nothing was changed")
	rcmd.Process.Signal(syscall.SIGTERM)
	<-rdone
	waitLetGo(t, storeURL)

	// Bad input, refused before anything is written.
	mustRefuse("a wrong old key", reseal("", []string{withB}, "--from-key", fileC), "does not open with the old key", "nothing was changed")
	mustRefuse("the old key on the command line", reseal("", []string{withB}, "--from-key", keyA), "never the key itself")
	mustRefuse("no --from-key", reseal("", []string{withB}), "--from-key is required")
	mustRefuse("the old key as the new one", reseal("", []string{withA}, "--from-key", fileA), "is the new key")
	mustRefuse("an old key that is not a key", reseal("not a key", []string{withB}, "--from-key", "-"), "32 bytes")

	// Killed in the middle of its writes (inside its transaction): the store is still all on A.
	cmd := exec.Command(BinPath, "secrets", "reseal", "--from-key", fileA)
	cmd.Env = append(e.BaseEnv(), withB, "AGENTRUN_DEV_RESEAL_PAUSE_AFTER=5")
	out := &SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	waitOutput(t, out, done, "paused after 5 values")
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
	waitLetGo(t, storeURL)
	if got := sealedUnder(t, storeURL, keyA); got != all {
		t.Fatalf("a reseal killed after 5 writes left %d of %d secrets on key A (and %d on B)", got, all, sealedUnder(t, storeURL, keyB))
	}

	// The rotation, the old key from an environment variable this time.
	r := reseal("", []string{withB, "OLD_SEAL_KEY=" + keyA}, "--from-key", "env:OLD_SEAL_KEY")
	if r.Code != 0 || !strings.Contains(r.Stdout, fmt.Sprintf("resealed %d secrets", all)) {
		t.Fatalf("reseal: exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stdout+r.Stderr, keyA) || strings.Contains(r.Stdout+r.Stderr, keyB) {
		t.Error("reseal printed a key")
	}
	if got := sealedUnder(t, storeURL, keyB); got != all {
		t.Fatalf("after the reseal %d of %d secrets open with key B", got, all)
	}

	// A server with the old key refuses to start, saying why.
	srv := exec.Command(BinPath, "serve", "--listen", "127.0.0.1:0")
	srv.Env = append(e.BaseEnv(), withA)
	b, err := srv.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(b), "opens none of the store's 14 secrets") {
		t.Fatalf("a server with the old key: %v\n%s", err, b)
	}

	// A server with the new key opens every secret: a BYOK run, a signed delivery.
	e.Start(withB, "ANTHROPIC_API_KEY=")
	if strings.Contains(e.Stderr.String(), "do not open") {
		t.Errorf("the server with key B warned of secrets it cannot open:\n%s", e.Stderr.String())
	}
	byokRun(t, e)
	now := time.Now().Unix()
	body := []byte(`{"email": "ada@example.com"}`)
	st, fb := e.Hook("inbound-lead", StandardHeaders("msg_1", now, trigger.SignStandard(VecSecret, "msg_1", now, body)), body)
	var fa FireAnswer
	json.Unmarshal(fb, &fa)
	if st != 201 || fa.Fire.Outcome != api.FireStarted {
		t.Fatalf("a delivery signed with the resealed signing secret: HTTP %d %s", st, fb)
	}
	if run := e.WaitPhase(fa.Fire.Run, 30*time.Second, api.PhaseSucceeded, api.PhaseFailed); run.Status.Phase != api.PhaseSucceeded {
		t.Errorf("the delivery's run: %s %s", run.Status.Phase, run.Status.Message)
	}
	var list api.List[store.SecretInfo]
	if st := e.Do("GET", "/v2/secrets", nil, &list); st != 200 || len(list.Items) != all {
		t.Errorf("GET /v2/secrets: HTTP %d, %d items, want %d", st, len(list.Items), all)
	}
}

// byokRun runs the BYOK agent to its end: its model key is the sealed secret.
func byokRun(t *testing.T, e *Env) {
	t.Helper()
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/mine/runs", `{"input":{"content":"Own key"}}`, &run); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	if r := e.WaitPhase(run.Metadata.Name, 30*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseWaiting); r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("BYOK run: %s %s %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
}

// sealedUnder opens the store (no process running on it) and counts the secrets that open with
// key (base64).
func sealedUnder(t *testing.T, storeURL, key string) int {
	t.Helper()
	k, err := secret.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	box, err := secret.New(k)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var st store.Store
	if p, ok := strings.CutPrefix(storeURL, "sqlite:"); ok {
		st, err = sqlite.Open(p)
	} else {
		st, err = postgres.Open(ctx, storeURL)
	}
	if err != nil {
		t.Fatalf("open the store: %v", err)
	}
	defer st.Close()
	list, err := st.ListSecrets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range list {
		sealed, err := st.GetSecret(ctx, s.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := box.Open(s.Name, sealed); err == nil {
			n++
		}
	}
	return n
}

// waitLetGo waits until PostgreSQL has ended the sessions of the processes just stopped or killed
// and so let go of their locks on the store (at once for SQLite: the kernel drops a dead process's
// flock as it exits). A session of a killed client ends when the server notices the closed
// connection, which is soon but not at once.
func waitLetGo(t *testing.T, storeURL string) {
	t.Helper()
	if strings.HasPrefix(storeURL, "sqlite:") {
		return
	}
	ctx := context.Background()
	conn, err := pgxpool.New(ctx, storeURL) // a pool: the URL has pool settings
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		// Any advisory lock on this store's schema: the in-use lock, or a reseal's.
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = hashtext(current_schema())::oid AND objsubid = 2 AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for PostgreSQL to end the stopped processes' sessions: %d locks held", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitOutput waits for s in a process's output, failing if the process ends first.
func waitOutput(t *testing.T, out *SyncBuffer, done chan struct{}, s string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(out.String(), s) {
		select {
		case <-done:
			t.Fatalf("the process ended before printing %q:\n%s", s, out.String())
		case <-deadline:
			t.Fatalf("waited 30 s for %q:\n%s", s, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
