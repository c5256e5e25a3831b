package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"agentrun.dev/agentrun/internal/store/postgres"
)

// pgProxy forwards TCP to PostgreSQL until stop, which closes the listener and every connection:
// the database going down, as the server sees it.
type pgProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startPGProxy(t *testing.T, target string) *pgProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pgProxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	t.Cleanup(p.stop)
	return p
}

func (p *pgProxy) stop() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// With PostgreSQL down, /healthz and /readyz said why in the driver's words, naming the database's
// user, database, host and port to anyone who can reach the port. Now they answer a generic
// reason and the server's log has the detail.
func TestHealthHidesStoreDetail(t *testing.T) {
	base := os.Getenv("AGENTRUN_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("PostgreSQL tests skipped: set AGENTRUN_TEST_POSTGRES_URL")
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var b [6]byte
	rand.Read(b[:])
	schema := "s_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	defer admin.Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startPGProxy(t, u.Host)
	_, proxyPort, _ := net.SplitHostPort(proxy.ln.Addr().String())
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("pool_max_conns", "2")
	u.RawQuery = q.Encode()
	u.Host = proxy.ln.Addr().String()
	st, err := postgres.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var logs bytes.Buffer
	var logMu sync.Mutex
	s := &Server{Store: st, Token: testToken, BaseURL: "http://agentrun.test", DataDir: t.TempDir(),
		Log: slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, nil))}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	if r := do(t, ts, "GET", "/healthz", "", nil); r.status != 200 {
		t.Fatalf("healthz with PostgreSQL up: %d %s", r.status, r.body)
	}

	proxy.stop()
	dbName := strings.TrimPrefix(u.Path, "/")
	for _, path := range []string{"/healthz", "/readyz"} {
		r := do(t, ts, "GET", path, "", nil)
		body := string(r.body)
		if r.status != http.StatusServiceUnavailable || !strings.Contains(body, "store: unreachable") {
			t.Errorf("%s with PostgreSQL down: %d %q, want 503 saying the store is unreachable", path, r.status, body)
		}
		for _, secret := range []string{u.User.Username(), dbName, proxyPort, "127.0.0.1", schema} {
			if strings.Contains(body, secret) {
				t.Errorf("%s with PostgreSQL down tells the caller %q: %q", path, secret, body)
			}
		}
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logs.String(), proxyPort) {
		t.Errorf("the server's log lacks the store's error (naming port %s):\n%s", proxyPort, logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// GET /metrics takes the API's credentials unless the server was started with --metrics-public.
func TestMetricsNeedCredentials(t *testing.T) {
	ts, s := newTestServer(t)
	if r := do(t, ts, "GET", "/metrics", "", nil); r.status != http.StatusUnauthorized || r.errBody(t).Code != "Unauthorized" {
		t.Errorf("GET /metrics without credentials: %d %s, want 401 Unauthorized", r.status, r.body)
	}
	if r := do(t, ts, "GET", "/metrics", "wrong-token", nil); r.status != http.StatusUnauthorized {
		t.Errorf("GET /metrics with a wrong token: %d", r.status)
	}
	r := do(t, ts, "GET", "/metrics", testToken, nil)
	if r.status != 200 || !strings.Contains(string(r.body), "agentrun_runs") {
		t.Errorf("GET /metrics with the API token: %d %.200s", r.status, r.body)
	}
	s.MetricsPublic = true
	pub := httptest.NewServer(s.Handler())
	defer pub.Close()
	if r := do(t, pub, "GET", "/metrics", "", nil); r.status != 200 || !strings.Contains(string(r.body), "agentrun_runs") {
		t.Errorf("GET /metrics under --metrics-public: %d %.200s", r.status, r.body)
	}
}
