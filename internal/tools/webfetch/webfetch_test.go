package webfetch

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/catalog"
)

func allowServer(t *testing.T, srv *httptest.Server) Allow {
	t.Helper()
	a, err := ParseAllow(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func fetch(t *testing.T, f *Fetcher, in catalog.WebFetch) Result {
	t.Helper()
	r, err := f.Fetch(context.Background(), &in, nil)
	if err != nil {
		t.Fatalf("fetch %s: %v", in.URL, err)
	}
	return r
}

func TestFetch(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<html><head><title>T</title><script>alert(1)</script></head><body><h1>Hello</h1><p>See <a href="/docs/a">the docs</a>.</p></body></html>`)
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"a": 1}`)
	})
	mux.HandleFunc("/bin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write([]byte{0, 1, 2, 3})
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("é", 100))
	})
	mux.HandleFunc("/loop/", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/loop/"), "%d", &n)
		http.Redirect(w, r, fmt.Sprintf("/loop/%d", n+1), http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// Not allowed: the test server is on loopback.
	r := fetch(t, &Fetcher{}, catalog.WebFetch{URL: srv.URL + "/page"})
	addr := strings.TrimPrefix(srv.URL, "http://")
	if !r.IsError || !strings.Contains(r.Content, addr+" is a loopback address") {
		t.Fatalf("loopback fetched without --fetch-allow: %+v", r)
	}
	wantCode(t, r, api.CodeFetchBlocked, addr)

	f := &Fetcher{Allow: []Allow{allowServer(t, srv)}}
	r = fetch(t, f, catalog.WebFetch{URL: srv.URL + "/page"})
	if r.IsError || !strings.Contains(r.Content, "# Hello") || !strings.Contains(r.Content, "[the docs]("+srv.URL+"/docs/a)") || strings.Contains(r.Content, "alert") {
		t.Errorf("page as markdown: %s", r.Content)
	}
	if r := fetch(t, f, catalog.WebFetch{URL: srv.URL + "/json"}); !strings.HasSuffix(r.Content, "\n\n"+`{"a": 1}`) {
		t.Errorf("json: %q", r.Content)
	}
	if r := fetch(t, f, catalog.WebFetch{URL: srv.URL + "/bin"}); !strings.Contains(r.Content, "application/octet-stream content, 4 bytes read, not shown") {
		t.Errorf("binary: %q", r.Content)
	}
	max := int64(11) // 5 characters and one byte of the sixth
	r = fetch(t, f, catalog.WebFetch{URL: srv.URL + "/big", MaxBytes: &max})
	if !strings.Contains(r.Content, "\n\n"+strings.Repeat("é", 5)+"\n\n[cut (code FetchCut): only the first 11 bytes") || r.IsError {
		t.Errorf("cut: %q", r.Content)
	}
	if r.Code != api.CodeFetchCut || r.Address != srv.URL+"/big" {
		t.Errorf("cut: code %q address %q", r.Code, r.Address)
	}
	r = fetch(t, f, catalog.WebFetch{URL: srv.URL + "/loop/0"})
	if !r.IsError || !strings.Contains(r.Content, "stopped after 5 redirects") {
		t.Errorf("redirect loop: %q", r.Content)
	}
	wantCode(t, r, api.CodeFetchTooManyRedirects, srv.URL+"/loop/6")
	for _, u := range []string{"file:///etc/passwd", "ftp://example.com/", "http://user:pw@example.com/", "http:///x"} {
		r := fetch(t, f, catalog.WebFetch{URL: u})
		if !r.IsError || !strings.Contains(r.Content, "nothing was fetched") {
			t.Errorf("%s: %q", u, r.Content)
		}
		wantCode(t, r, api.CodeFetchBadURL, u)
	}
	// A redirect to a blocked address names the address dialled; one to a file:// URL names it.
	mux.HandleFunc("/to-metadata", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	mux.HandleFunc("/to-file", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	wantCode(t, fetch(t, f, catalog.WebFetch{URL: srv.URL + "/to-metadata"}), api.CodeFetchBlocked, "169.254.169.254:80")
	wantCode(t, fetch(t, f, catalog.WebFetch{URL: srv.URL + "/to-file"}), api.CodeFetchBadURL, "file:///etc/passwd")
	// A page that does not answer in time.
	slow := make(chan struct{})
	defer close(slow)
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-slow:
		case <-r.Context().Done():
		}
	})
	wantCode(t, fetch(t, &Fetcher{Allow: f.Allow, Timeout: 200 * time.Millisecond}, catalog.WebFetch{URL: srv.URL + "/slow"}), api.CodeFetchTimeout, srv.URL+"/slow")
	// Nothing listens: the connection fails.
	dead := httptest.NewServer(mux)
	deadURL := dead.URL
	dead.Close()
	deadAllow, _ := ParseAllow(strings.TrimPrefix(deadURL, "http://"))
	wantCode(t, fetch(t, &Fetcher{Allow: []Allow{deadAllow}}, catalog.WebFetch{URL: deadURL + "/"}), api.CodeFetchFailed, deadURL+"/")
	head := "HEAD"
	if r := fetch(t, f, catalog.WebFetch{URL: srv.URL + "/json", Method: &head}); strings.Contains(r.Content, `{"a"`) || !strings.Contains(r.Content, "Status: 200") {
		t.Errorf("HEAD: %q", r.Content)
	}
	// The allow list is per port: another port on loopback stays refused.
	other := httptest.NewServer(mux)
	defer other.Close()
	if r := fetch(t, f, catalog.WebFetch{URL: other.URL + "/page"}); !r.IsError || !strings.Contains(r.Content, strings.TrimPrefix(other.URL, "http://")+" is a loopback address") {
		t.Errorf("other port: %q", r.Content)
	}
}

// wantCode checks a refusal's code and the address it names, in the result and in the text the
// model reads.
func wantCode(t *testing.T, r Result, code api.Code, address string) {
	t.Helper()
	if r.Code != code || r.Address != address || !r.IsError {
		t.Errorf("want a refusal %s of %s, got code %q address %q error %v: %q", code, address, r.Code, r.Address, r.IsError, r.Content)
	}
	if want := "web_fetch refused " + address + " (code " + string(code) + "): "; !strings.HasPrefix(r.Content, want) {
		t.Errorf("the model reads %q, want it to start %q", r.Content, want)
	}
}

// A name that resolves to a private address is refused on the address dialled: "localhost" is
// not a literal, so only the Control check can catch it.
func TestFetchNameResolvingToLoopback(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secret") }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	r := fetch(t, &Fetcher{}, catalog.WebFetch{URL: "http://localhost:" + port + "/"})
	if !r.IsError || strings.Contains(r.Content, "secret") || !strings.Contains(r.Content, "loopback") {
		t.Errorf("localhost: %q", r.Content)
	}
	// The refusal names the address dialled, not the name.
	if r.Code != api.CodeFetchBlocked || (r.Address != "127.0.0.1:"+port && r.Address != "[::1]:"+port) {
		t.Errorf("localhost: code %q address %q", r.Code, r.Address)
	}
}

// Through a proxy the address dialled is the proxy's, so the proxy must be allowed.
func TestFetchProxy(t *testing.T) {
	t.Parallel()
	var seen []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.String())
		fmt.Fprint(w, "via proxy")
	}))
	defer proxy.Close()
	pu, _ := CheckURL(proxy.URL)
	f := &Fetcher{Proxy: http.ProxyURL(pu)}
	if r := fetch(t, f, catalog.WebFetch{URL: "http://example.invalid/x"}); !r.IsError || !strings.Contains(r.Content, "loopback") {
		t.Errorf("proxy not allowed, yet: %q", r.Content)
	}
	f.Allow = []Allow{allowServer(t, proxy)}
	if r := fetch(t, f, catalog.WebFetch{URL: "http://example.invalid/x"}); r.IsError || !strings.Contains(r.Content, "via proxy") {
		t.Errorf("allowed proxy: %q", r.Content)
	}
	// A blocked address literal is refused before the proxy is asked to reach it.
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://[::ffff:10.0.0.1]:8080/", "https://192.168.1.1/"} {
		if r := fetch(t, f, catalog.WebFetch{URL: u}); !r.IsError || !strings.Contains(r.Content, "refused") {
			t.Errorf("%s through the proxy: %q", u, r.Content)
		}
	}
	if len(seen) != 1 || seen[0] != "http://example.invalid/x" {
		t.Errorf("proxy saw %v", seen)
	}
}

func TestBlocked(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "100.64.0.1", "169.254.169.254", "169.254.1.1",
		"::1", "fe80::1", "fd00::1", "fd00:ec2::254", "::ffff:127.0.0.1", "0.0.0.0", "224.0.0.1", "64:ff9b::a00:1"} {
		if Blocked(netip.MustParseAddr(s)) == "" {
			t.Errorf("%s not blocked", s)
		}
	}
	for _, s := range []string{"93.184.216.34", "2606:4700::1", "8.8.8.8"} {
		if why := Blocked(netip.MustParseAddr(s)); why != "" {
			t.Errorf("%s blocked: %s", s, why)
		}
	}
	for _, bad := range []string{"localhost", "1.2.3.4:x", ""} {
		if _, err := ParseAllow(bad); err == nil {
			t.Errorf("ParseAllow(%q) accepted", bad)
		}
	}
}
