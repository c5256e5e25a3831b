package e2e

import (
	"net/http"
	"strings"
	"testing"
)

// TestServeTakesAGENTRUN_TOKEN: a platform-generated AGENTRUN_TOKEN (Render's) is the server's API
// token, is written to the token file for the CLI, sets the console's first password as the setup
// code does (and only the first), and is never printed; a token the server makes itself is
// printed once, on the first start only.
func TestServeTakesAGENTRUN_TOKEN(t *testing.T) {
	t.Parallel()
	e := newEnv(t, quickstartScript)
	// A first start that fails after making the token (its store not there yet, as a compose
	// server before its PostgreSQL) leaves printing it to the next start.
	if code, out := runToExit(t, e, []string{"serve", "--listen", "127.0.0.1:0"}, "AGENTRUN_STORE_URL=mysql://nowhere"); code == 0 || strings.Contains(out, "token:     ") {
		t.Fatalf("a start on an unusable store: exit %d, printed:\n%s", code, out)
	}
	e.start()
	if !strings.Contains(e.stderr.String(), "token:     "+e.token) {
		t.Errorf("first start did not print the token it made:\n%s", e.stderr.String())
	}
	e.kill()
	e.start()
	if strings.Contains(e.stderr.String(), e.token) {
		t.Errorf("a later start printed the token again:\n%s", e.stderr.String())
	}
	e.kill()

	const tok = "render-generated-0123456789abcdef"
	e.start("AGENTRUN_TOKEN=" + tok)
	if e.token != tok {
		t.Fatalf("token file = %q, want AGENTRUN_TOKEN", e.token)
	}
	if strings.Contains(e.stderr.String(), tok) {
		t.Errorf("the server printed AGENTRUN_TOKEN:\n%s", e.stderr.String())
	}
	if st := e.doAs(tok, "GET", "/v2/agentruns", nil, nil); st != 200 {
		t.Errorf("API with AGENTRUN_TOKEN: HTTP %d", st)
	}
	if st := e.doAs("art_wrong", "GET", "/v2/agentruns", nil, nil); st != http.StatusUnauthorized {
		t.Errorf("API with another token: HTTP %d, want 401", st)
	}
	if st := e.doAs("", "POST", "/v2/login", `{"user":"admin","password":"longenough-pw","setupCode":"wrong"}`, nil); st != http.StatusUnauthorized {
		t.Errorf("setup with a wrong code: HTTP %d, want 401", st)
	}
	if st := e.doAs("", "POST", "/v2/login", `{"user":"admin","password":"longenough-pw","setupCode":"`+tok+`"}`, nil); st != 200 {
		t.Fatalf("setting the first password with AGENTRUN_TOKEN: HTTP %d, want 200", st)
	}
	if st := e.doAs("", "POST", "/v2/login", `{"user":"admin2","password":"longenough-pw","setupCode":"`+tok+`"}`, nil); st == 200 {
		t.Errorf("AGENTRUN_TOKEN set a password a second time")
	}
	if st := e.doAs("", "POST", "/v2/login", `{"user":"admin","password":"longenough-pw"}`, nil); st != 200 {
		t.Errorf("sign in with the password set: HTTP %d", st)
	}
}
