package console

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/auth"
)

func TestSafeNext(t *testing.T) {
	t.Parallel()
	for next, want := range map[string]string{
		"":                      "/",
		"/":                     "/",
		"/runs/r1":              "/runs/r1",
		"/runs?x=1":             "/runs?x=1",
		"/groups/g%20x":         "/groups/g%20x",
		"//evil.com":            "/",
		"/\\evil.com":           "/",
		"/%5Cevil.com":          "/",
		"/%5cevil.com":          "/",
		"/%2F%2Fevil.com":       "/",
		"/%2fevil.com":          "/", // decodes to //evil.com
		"https://evil.com":      "/",
		"http:evil.com":         "/",
		"javascript:alert(1)":   "/",
		"evil.com":              "/",
		"/\tevil.com":           "/",
		"/%09/evil.com":         "/",
		"/%0d%0aSet-Cookie:x=1": "/",
		"/%zz":                  "/",
		"///evil.com":           "/",
	} {
		if got := safeNext(next); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", next, got, want)
		}
	}
}

// Signing in over TLS (a real TLS server) marks the cookie Secure; over plain HTTP it is Secure
// only with a trusted X-Forwarded-Proto: https.
func TestSessionCookieSecure(t *testing.T) {
	t.Parallel()
	start := func(tls, trust bool) (*httptest.Server, *http.Client) {
		acc, err := auth.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := acc.Setup(acc.SetupCode(), "admin", "correct horse battery"); err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		(&Console{Accounts: acc, TrustProxy: trust}).Register(mux)
		var srv *httptest.Server
		if tls {
			srv = httptest.NewTLSServer(mux)
		} else {
			srv = httptest.NewServer(mux)
		}
		t.Cleanup(srv.Close)
		c := srv.Client()
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		return srv, c
	}
	signIn := func(srv *httptest.Server, c *http.Client, proto string) *http.Cookie {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+"/login", strings.NewReader(url.Values{"password": {"correct horse battery"}, "next": {"/runs"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if proto != "" {
			req.Header.Set("X-Forwarded-Proto", proto)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/runs" {
			t.Fatalf("sign-in: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		for _, ck := range resp.Cookies() {
			if ck.Name == cookieName {
				return ck
			}
		}
		t.Fatal("no session cookie")
		return nil
	}
	srv, c := start(true, false)
	if ck := signIn(srv, c, ""); !ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Errorf("over TLS: %+v", ck)
	}
	srv, c = start(false, false)
	if ck := signIn(srv, c, "https"); ck.Secure {
		t.Error("an untrusted X-Forwarded-Proto made the cookie Secure")
	}
	srv, c = start(false, true)
	if ck := signIn(srv, c, "https"); !ck.Secure {
		t.Error("a trusted X-Forwarded-Proto: https did not make the cookie Secure")
	}
	if ck := signIn(srv, c, ""); ck.Secure {
		t.Error("plain HTTP behind a trusted proxy made the cookie Secure")
	}
}
