package api

import (
	"net/http"
	"strings"
	"testing"

	. "agentrun.dev/agentrun/e2e/e2etest"
)

// TestServeTakesAGENTRUN_TOKEN: a platform-generated AGENTRUN_TOKEN (Render's) is the server's API
// token, is written to the token file for the CLI, sets the console's first password as the setup
// code does (and only the first), and is never printed; a token the server makes itself is
// printed once, on the first start only.
func TestServeTakesAGENTRUN_TOKEN(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, QuickstartScript)
	// A first start that fails after making the token (its store not there yet, as a compose
	// server before its PostgreSQL) leaves printing it to the next start.
	if code, out := RunToExit(t, e, []string{"serve", "--listen", "127.0.0.1:0"}, "AGENTRUN_STORE_URL=mysql://nowhere"); code == 0 || strings.Contains(out, "token:     ") {
		t.Fatalf("a start on an unusable store: exit %d, printed:\n%s", code, out)
	}
	e.Start()
	if !strings.Contains(e.Stderr.String(), "token:     "+e.Token) {
		t.Errorf("first start did not print the token it made:\n%s", e.Stderr.String())
	}
	e.Kill()
	e.Start()
	if strings.Contains(e.Stderr.String(), e.Token) {
		t.Errorf("a later start printed the token again:\n%s", e.Stderr.String())
	}
	e.Kill()

	const tok = "render-generated-0123456789abcdef"
	e.Start("AGENTRUN_TOKEN=" + tok)
	if e.Token != tok {
		t.Fatalf("token file = %q, want AGENTRUN_TOKEN", e.Token)
	}
	if strings.Contains(e.Stderr.String(), tok) {
		t.Errorf("the server printed AGENTRUN_TOKEN:\n%s", e.Stderr.String())
	}
	if st := e.DoAs(tok, "GET", "/v2/agentruns", nil, nil); st != 200 {
		t.Errorf("API with AGENTRUN_TOKEN: HTTP %d", st)
	}
	if st := e.DoAs("art_wrong", "GET", "/v2/agentruns", nil, nil); st != http.StatusUnauthorized {
		t.Errorf("API with another token: HTTP %d, want 401", st)
	}
	if st := e.DoAs("", "POST", "/v2/login", `{"user":"admin","password":"longenough-pw","setupCode":"wrong"}`, nil); st != http.StatusUnauthorized {
		t.Errorf("setup with a wrong code: HTTP %d, want 401", st)
	}
	if st := e.DoAs("", "POST", "/v2/login", `{"user":"admin","password":"longenough-pw","setupCode":"`+tok+`"}`, nil); st != 200 {
		t.Fatalf("setting the first password with AGENTRUN_TOKEN: HTTP %d, want 200", st)
	}
	if st := e.DoAs("", "POST", "/v2/login", `{"user":"admin2","password":"longenough-pw","setupCode":"`+tok+`"}`, nil); st == 200 {
		t.Errorf("AGENTRUN_TOKEN set a password a second time")
	}
	if st := e.DoAs("", "POST", "/v2/login", `{"user":"admin","password":"longenough-pw"}`, nil); st != 200 {
		t.Errorf("sign in with the password set: HTTP %d", st)
	}
}
