package api

import (
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// TestServeWildcardLinks: a server listening on every interface (--host 0.0.0.0, as in the
// compose file's and the chart's containers) prints a console link a person can open
// (loopback, not http://[::]:PORT) and gives runs console URLs on it.
func TestServeWildcardLinks(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, "entries:\n  - name: any\n    match: \"*\"\n    turns:\n      - text: done\n")
	e.StartWith([]string{"serve", "--listen", "0.0.0.0:0", "--router", "rules"})
	if !strings.HasPrefix(e.URL, "http://127.0.0.1:") {
		t.Fatalf("server.json's url is %q, want a loopback link", e.URL)
	}
	if !strings.Contains(e.Stderr.String(), "console:   "+e.URL+"/") {
		t.Errorf("the server's log does not give the console link %s/:\n%s", e.URL, e.Stderr.String())
	}
	e.Do("PUT", "/v2/agents/plain", `{"metadata":{"name":"plain"},"spec":{"computer":{"kind":"none"}}}`, nil)
	e.StartRun("plain", "p1", "hello")
	r := e.WaitPhase("p1", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.ConsoleURL != e.URL+"/runs/p1" {
		t.Errorf("the run's console URL is %q, want %s/runs/p1", r.Status.ConsoleURL, e.URL)
	}
}

// TestServePublicURL: behind a proxy or on Render the links the server gives people are on the
// URL they reach it at (--public-url, $AGENTRUN_PUBLIC_URL, or Render's $RENDER_EXTERNAL_URL),
// while server.json keeps the local address the CLI on this machine uses.
func TestServePublicURL(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, "entries:\n  - name: any\n    match: \"*\"\n    turns:\n      - text: done\n")
	e.StartWith([]string{"serve", "--listen", "0.0.0.0:0", "--router", "rules"}, "RENDER_EXTERNAL_URL=https://agentrun-x.onrender.com/")
	if !strings.HasPrefix(e.URL, "http://127.0.0.1:") {
		t.Fatalf("server.json's url is %q, want the local address", e.URL)
	}
	if !strings.Contains(e.Stderr.String(), "console:   https://agentrun-x.onrender.com/\n") {
		t.Errorf("the server's log does not give the public console link:\n%s", e.Stderr.String())
	}
	e.Do("PUT", "/v2/agents/plain", `{"metadata":{"name":"plain"},"spec":{"computer":{"kind":"none"}}}`, nil)
	e.StartRun("plain", "p1", "hello")
	r := e.WaitPhase("p1", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.ConsoleURL != "https://agentrun-x.onrender.com/runs/p1" {
		t.Errorf("the run's console URL is %q, want it on the public URL", r.Status.ConsoleURL)
	}
	bad := NewEnv(t, "entries:\n  - name: any\n    match: \"*\"\n    turns:\n      - text: done\n")
	if r := bad.CLI(bad.Dir, "serve", "--data", bad.Dir, "--listen", "127.0.0.1:0", "--public-url", "ftp://x"); r.Code == 0 || !strings.Contains(r.Stderr, "--public-url \"ftp://x\"") {
		t.Errorf("serve --public-url ftp://x: exit %d %s", r.Code, r.Stderr)
	}
}
