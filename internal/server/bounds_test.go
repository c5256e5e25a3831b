package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/auth"
	"agentrun.dev/agentrun/internal/store/sqlite"
)

// TestDeepJSONBodyRefused: a body of 100 KB of "[" once made the duplicate-key scan allocate a
// path string per level (20,000 "[" took the server from 38 MB to 650 MB; 100 KB killed it),
// before any sign-in check. Every body reader now refuses it at once, allocating next to nothing.
func TestDeepJSONBodyRefused(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "agentrun.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	accounts, err := auth.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Store: st, Token: testToken, BaseURL: "http://agentrun.test", DataDir: t.TempDir(), Accounts: accounts,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)

	body := []byte(strings.Repeat("[", 100<<10))
	for _, c := range []struct{ path, token string }{
		{"/v2/login", ""}, // no credentials needed to reach it
		{"/v2/agents", testToken},
		{"/v2/agentruns", testToken},
		{"/v2/skills", testToken},
		{"/v2/hooks/nosuch", ""},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r := do(t, ts, "POST", c.path, c.token, body)
		runtime.ReadMemStats(&after)
		// The body itself is 100 KB, read once by the server and sent once by the client.
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
			t.Errorf("POST %s with 100 KB of '[' allocated %d MB; want under 8", c.path, grew>>20)
		}
		if r.status != http.StatusRequestEntityTooLarge {
			t.Errorf("POST %s with 100 KB of '[': HTTP %d %s, want 413", c.path, r.status, r.body)
			continue
		}
		e := r.errBody(t)
		if e.Code != api.CodeTooLarge || !strings.Contains(e.Message, "deeper than 128 levels") {
			t.Errorf("POST %s: %+v, want PayloadTooLarge naming the 128 levels", c.path, e)
		}
	}
}
