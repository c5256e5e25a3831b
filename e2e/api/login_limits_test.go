package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// The attacks of the audit on sign-in and on the HTTP server, as real clients on real TCP
// connections against the real binary. Different client addresses are real: the loopback net is
// 127.0.0.0/8, so a client binds 127.0.x.y as its source address.

// clientFrom is an HTTP client whose connections come from ip; it follows no redirect.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 2 * time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// loginFrom posts body to /v2/login from ip and returns the status, the headers and the error
// code (or the session).
func loginFrom(e *Env, ip, body string) (status int, h http.Header, code api.Code, session string) {
	e.T.Helper()
	resp, err := clientFrom(ip).Post(e.URL+"/v2/login", "application/json", strings.NewReader(body))
	if err != nil {
		e.T.Fatalf("login from %s: %v", ip, err)
	}
	defer resp.Body.Close()
	var out struct {
		Code    api.Code
		Session string
	}
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &out)
	return resp.StatusCode, resp.Header, out.Code, out.Session
}

// metric reads one series of the server's /metrics.
func metric(e *Env, name string) float64 {
	e.T.Helper()
	req, _ := http.NewRequest("GET", e.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+e.Token) // /metrics takes the API token
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				e.T.Fatalf("metric %s: %q", name, v)
			}
			return f
		}
	}
	e.T.Fatalf("no metric %s", name)
	return 0
}

func TestLoginBoundsAndLimits(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, ApprovalsScript)
	e.Start()
	code := e.SetupCode()

	// The setup code is rate-limited per address like a password; the right code from another
	// address still works.
	limited := false
	for i := 0; i < 40 && !limited; i++ {
		st, h, c, _ := loginFrom(e, "127.0.3.1", `{"setupCode":"0000000000","password":"correct horse battery"}`)
		switch {
		case st == http.StatusTooManyRequests:
			if c != api.CodeRateLimited || h.Get("Retry-After") == "" {
				t.Fatalf("setup code limited: code %q, Retry-After %q", c, h.Get("Retry-After"))
			}
			limited = true
		case st != http.StatusUnauthorized:
			t.Fatalf("wrong setup code: HTTP %d %s", st, c)
		}
	}
	if !limited {
		t.Fatal("40 wrong setup codes from one address were never rate-limited")
	}
	if st, _, c, _ := loginFrom(e, "127.0.3.2", `{"setupCode":"`+code+`","password":"correct horse battery"}`); st != 200 {
		t.Fatalf("the right setup code from another address: HTTP %d %s", st, c)
	}

	// A wrong user name costs an argon2id check like a wrong password (hash computations
	// counted, not timed).
	before := metric(e, "agentrun_password_hashes_total")
	if st, _, _, _ := loginFrom(e, "127.0.2.1", `{"user":"nobody","password":"wrong password"}`); st != 401 {
		t.Fatalf("unknown user: HTTP %d", st)
	}
	unknown := metric(e, "agentrun_password_hashes_total") - before
	if st, _, _, _ := loginFrom(e, "127.0.2.2", `{"user":"admin","password":"wrong password"}`); st != 401 {
		t.Fatalf("wrong password: HTTP %d", st)
	}
	known := metric(e, "agentrun_password_hashes_total") - before - unknown
	if unknown != 1 || known != 1 {
		t.Errorf("hashes: unknown user %v, known user %v; want 1 and 1", unknown, known)
	}

	// 16 concurrent wrong sign-ins (the audit's memory kill), each from its own address so that
	// no rate limit turns one away: every one is checked, never more than 2 at once.
	before = metric(e, "agentrun_password_hashes_total")
	var wg sync.WaitGroup
	statuses := make([]int, 16)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := clientFrom(fmt.Sprintf("127.0.1.%d", i+1)).Post(e.URL+"/v2/login", "application/json",
				strings.NewReader(`{"user":"admin","password":"wrong password `+strconv.Itoa(i)+`"}`))
			if err != nil {
				t.Errorf("login %d: %v", i, err)
				return
			}
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	for i, st := range statuses {
		if st != http.StatusUnauthorized {
			t.Errorf("concurrent wrong login %d: HTTP %d, want 401", i, st)
		}
	}
	if n := metric(e, "agentrun_password_hashes_total") - before; n != 16 {
		t.Errorf("%v hashes for 16 wrong sign-ins", n)
	}
	if m := metric(e, "agentrun_password_checks_in_flight_max"); m < 1 || m > 2 {
		t.Errorf("%v argon2id checks ran at once, want at most 2", m)
	}

	// An attacker at one address is locked out (429 RateLimited, Retry-After) ...
	limited = false
	for i := 0; i < 40 && !limited; i++ {
		st, h, c, _ := loginFrom(e, "127.0.3.1", `{"user":"admin","password":"guess `+strconv.Itoa(i)+`"}`)
		if st == http.StatusTooManyRequests {
			secs, err := strconv.Atoi(h.Get("Retry-After"))
			if c != api.CodeRateLimited || err != nil || secs < 1 {
				t.Fatalf("locked out: code %q, Retry-After %q", c, h.Get("Retry-After"))
			}
			limited = true
		}
	}
	if !limited {
		t.Fatal("40 wrong passwords from one address were never limited")
	}
	// ... and the owner, at another address, signs in.
	st, _, c, session := loginFrom(e, "127.0.3.3", `{"user":"admin","password":"correct horse battery"}`)
	if st != 200 || session == "" {
		t.Fatalf("the owner from another address during the attack: HTTP %d %s", st, c)
	}
	var who struct{ Kind, User string }
	if st := e.DoAs(session, "GET", "/v2/whoami", nil, &who); st != 200 || who.Kind != "person" {
		t.Fatalf("whoami with the session: %d %+v", st, who)
	}

	// Logout ends the session on the server: the same bearer no longer works. The API token
	// cannot sign out.
	if st := e.Do("POST", "/v2/logout", nil, nil); st != http.StatusForbidden {
		t.Errorf("logout with the API token: HTTP %d, want 403", st)
	}
	if st := e.DoAs(session, "POST", "/v2/logout", nil, nil); st != http.StatusNoContent {
		t.Fatalf("logout: HTTP %d", st)
	}
	if st := e.DoAs(session, "GET", "/v2/whoami", nil, nil); st != http.StatusUnauthorized {
		t.Errorf("whoami after logout: HTTP %d, want 401", st)
	}
}

// rawConn dials the server as a bare TCP client.
func rawConn(e *Env) net.Conn {
	e.T.Helper()
	u, _ := url.Parse(e.URL)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() { c.Close() })
	return c
}

// closedByServer reports whether the server closed c (EOF or reset) within d; false when it
// was still open at d.
func closedByServer(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

func TestSlowClientsAreCutOff(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, ApprovalsScript)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug",
		"--read-timeout", "2s", "--write-timeout", "2s", "--idle-timeout", "2s"})

	// A body trickled a byte at a time is cut off by ReadTimeout long before it is whole.
	c := rawConn(e)
	fmt.Fprintf(c, "POST /v2/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 600\r\n\r\n")
	sent := make(chan int, 1)
	go func() {
		n := 0
		for ; n < 600; n++ {
			if _, err := c.Write([]byte(" ")); err != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		sent <- n
	}()
	if !closedByServer(c, 45*time.Second) {
		t.Fatal("a trickled body held its connection for 45 s")
	}
	c.Close()
	if n := <-sent; n >= 600 {
		t.Errorf("the whole trickled body (%d bytes) was taken", n)
	}

	// An idle keep-alive connection is closed by IdleTimeout.
	c = rawConn(e)
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz on a raw connection: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	if !closedByServer(c, 30*time.Second) {
		t.Error("an idle keep-alive connection stayed open 30 s past a 2 s IdleTimeout")
	}

	// An event stream stays connected past WriteTimeout (and ReadTimeout): a run waiting on an
	// approval is followed for 3 s, then cancelled, and the stream delivers its end.
	if st := e.Do("PUT", "/v2/agents/careful", ApprovalsAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"s1"},"spec":{"agent":"careful","input":"Count carefully: one"}}`, nil)
	e.WaitPhase("s1", 20*time.Second, api.PhaseWaiting)
	follow := func() (*http.Response, error) {
		req, _ := http.NewRequest("GET", e.URL+"/v2/agentruns/s1/events", nil)
		req.Header.Set("Authorization", "Bearer "+e.Token)
		req.Header.Set("Accept", "text/event-stream")
		return (&http.Client{Transport: &http.Transport{}}).Do(req)
	}
	resp, err = follow()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("follow: %v", err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	time.Sleep(3 * time.Second) // past the 2 s WriteTimeout and ReadTimeout
	if st := e.Do("POST", "/v2/agentruns/s1/cancel", `{}`, nil); st >= 300 {
		t.Fatalf("cancel: HTTP %d", st)
	}
	ended := false
	for l := range lines {
		if l == "event: end" {
			ended = true
			break
		}
	}
	if !ended {
		t.Fatal("the event stream was cut before the run's end")
	}

	// One credential follows at most 32 streams at once; the 33rd gets 429 TooManyStreams.
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"s2"},"spec":{"agent":"careful","input":"Count carefully: two"}}`, nil)
	e.WaitPhase("s2", 20*time.Second, api.PhaseWaiting)
	var open []*http.Response
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	for i := 0; i < 32; i++ {
		req, _ := http.NewRequest("GET", e.URL+"/v2/agentruns/s2/events", nil)
		req.Header.Set("Authorization", "Bearer "+e.Token)
		req.Header.Set("Accept", "text/event-stream")
		r, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
		if err != nil || r.StatusCode != 200 {
			t.Fatalf("stream %d: %v %v", i, err, r)
		}
		open = append(open, r)
	}
	req, _ := http.NewRequest("GET", e.URL+"/v2/agentruns/s2/events", nil)
	req.Header.Set("Authorization", "Bearer "+e.Token)
	req.Header.Set("Accept", "text/event-stream")
	r, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ Code api.Code }
	json.NewDecoder(r.Body).Decode(&body)
	r.Body.Close()
	if r.StatusCode != http.StatusTooManyRequests || body.Code != api.CodeTooManyStreams {
		t.Errorf("the 33rd stream: HTTP %d %q, want 429 TooManyStreams", r.StatusCode, body.Code)
	}
}

// With --max-connections 8, the 9th client waits for a slot instead of failing, and idle
// keep-alive connections are closed to make room for it.
func TestConnectionLimitLeavesRoom(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, ApprovalsScript)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug",
		"--max-connections", "8", "--idle-timeout", "5m"})
	get := func() chan error {
		done := make(chan error, 1)
		go func() {
			resp, err := (&http.Client{Transport: &http.Transport{}, Timeout: time.Minute}).Get(e.URL + "/healthz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != 200 {
					err = fmt.Errorf("HTTP %d", resp.StatusCode)
				}
			}
			done <- err
		}()
		return done
	}

	// Eight connections that send nothing hold every slot (they are not idle: no request yet).
	var silent []net.Conn
	for i := 0; i < 8; i++ {
		silent = append(silent, rawConn(e))
	}
	// The kernel queues connections in order, so the 9th is accepted after those 8.
	ninth := get()
	select {
	case err := <-ninth:
		t.Fatalf("a 9th connection was served while 8 silent ones held every slot: %v", err)
	case <-time.After(time.Second):
	}
	silent[0].Close()
	if err := <-ninth; err != nil {
		t.Fatalf("the waiting 9th client, once a slot was free: %v", err)
	}
	for _, c := range silent {
		c.Close()
	}

	// Eight idle keep-alive connections (each served one request) and a 9th client: an idle
	// one is closed to make room (IdleTimeout is 5 min here, so it is not that).
	var idle []net.Conn
	for i := 0; i < 8; i++ {
		c := rawConn(e)
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
		resp.Body.Close()
		idle = append(idle, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	select {
	case err := <-get():
		if err != nil {
			t.Fatalf("a 9th client with 8 idle connections open: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("a 9th client waited a minute behind 8 idle connections")
	}
	closed := 0
	for _, c := range idle {
		if closedByServer(c, 100*time.Millisecond) {
			closed++
		}
	}
	if closed == 0 {
		t.Error("no idle connection was closed to make room")
	}
}

// The console's sign-in: next only to this origin, the Secure flag behind a trusted proxy's
// https, a server-side logout, and CSP and X-Frame-Options on its pages.
func TestConsoleLoginHardening(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, ApprovalsScript)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug", "--trust-proxy"})
	code := e.SetupCode()
	c := clientFrom("127.0.0.1")
	// Each sign-in comes from an address of its own: one address's attempts are rate-limited.
	addrs := 0
	post := func(path string, form url.Values, cookie string, hdr ...string) *http.Response {
		t.Helper()
		addrs++
		c := clientFrom(fmt.Sprintf("127.0.4.%d", addrs))
		req, _ := http.NewRequest("POST", e.URL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: "agentrun_session", Value: cookie})
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	get := func(path, cookie string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", e.URL+path, nil)
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: "agentrun_session", Value: cookie})
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	session := func(resp *http.Response) *http.Cookie {
		for _, ck := range resp.Cookies() {
			if ck.Name == "agentrun_session" {
				return ck
			}
		}
		return nil
	}

	resp, _ := get("/login?next=//evil.com", "")
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'self'") || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("/login: CSP %q, X-Frame-Options %q", csp, resp.Header.Get("X-Frame-Options"))
	}

	// The first sign-in sets the password; then each next is tried.
	resp = post("/login", url.Values{"setup_code": {code}, "password": {"correct horse battery"}, "next": {"/runs"}}, "")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/runs" {
		t.Fatalf("setup: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if ck := session(resp); ck == nil || ck.Secure {
		t.Errorf("plain HTTP without X-Forwarded-Proto: cookie %+v, want not Secure", ck)
	}
	for next, want := range map[string]string{
		"/runs/r1":         "/runs/r1",
		"/groups":          "/groups",
		"//evil.com":       "/",
		"/\\evil.com":      "/",
		"/%5Cevil.com":     "/",
		"/%2F%2Fevil.com":  "/",
		"https://evil.com": "/",
		"evil.com":         "/",
		"/\t/evil.com":     "/",
	} {
		resp := post("/login", url.Values{"password": {"correct horse battery"}, "next": {next}}, "")
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
			t.Errorf("next=%q: %d to %q, want %q", next, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}

	// Behind the trusted proxy's https the cookie is Secure.
	resp = post("/login", url.Values{"password": {"correct horse battery"}}, "", "X-Forwarded-Proto", "https")
	ck := session(resp)
	if ck == nil || !ck.Secure || !ck.HttpOnly {
		t.Fatalf("behind a trusted https proxy: cookie %+v, want Secure and HttpOnly", ck)
	}

	// Signed-in pages carry the CSP too.
	resp, _ = get("/", ck.Value)
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatalf("Mission Control: %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}

	// Logout needs the page's CSRF token, ends the session server-side: the old cookie no
	// longer opens a page.
	if resp := post("/logout", url.Values{}, ck.Value); resp.StatusCode != http.StatusForbidden {
		t.Errorf("logout without the CSRF token: %d, want 403", resp.StatusCode)
	}
	_, page := get("/logout", ck.Value)
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the logout page has no CSRF token:\n%s", page)
	}
	resp = post("/logout", url.Values{"csrf": {m[1]}}, ck.Value)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Fatalf("logout: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if cleared := session(resp); cleared == nil || cleared.MaxAge >= 0 {
		t.Errorf("logout did not clear the cookie: %+v", cleared)
	}
	resp, _ = get("/", ck.Value)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Errorf("the signed-out cookie still opens Mission Control: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}
