package webfetch

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/catalog"
)

// The IPv4-compatible (::a.b.c.d) and IPv4-translated (::ffff:0:a.b.c.d) forms of a loopback
// address, and this host's own interface address, are refused like 127.0.0.1, at the address
// dialled (a real listener holds a secret on each); web_fetch dialled them before.
func TestFetchLoopbackForms(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secret") })}}
	srv.Start()
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	for _, host := range []string{"[::127.0.0.1]", "[::ffff:0:7f00:1]", "[::ffff:127.0.0.1]"} {
		r := fetch(t, &Fetcher{}, catalog.WebFetch{URL: fmt.Sprintf("http://%s:%d/", host, port)})
		if r.Code != api.CodeFetchBlocked || !strings.Contains(r.Content, "loopback") || r.Address != fmt.Sprintf("127.0.0.1:%d", port) {
			t.Errorf("%s: code %q address %q: %q", host, r.Code, r.Address, r.Content)
		}
	}
	for s, want := range map[string]string{"::7f00:1": "127.0.0.1", "::ffff:0:a00:1": "10.0.0.1", "::1": "::1", "::": "::", "2001:db8::1": "2001:db8::1"} {
		if got := canonical(netip.MustParseAddr(s)); got != netip.MustParseAddr(want) {
			t.Errorf("canonical(%s) = %s, want %s", s, got, want)
		}
	}

	// This host's own address, whatever range it is in (here often one netip calls public).
	var own netip.Addr
	addrs, _ := net.InterfaceAddrs()
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(n.IP); ok && a.Unmap().Is4() && !a.IsLoopback() && !a.IsLinkLocalUnicast() {
				own = a.Unmap()
				break
			}
		}
	}
	if !own.IsValid() {
		t.Skip("this host has no IPv4 address besides loopback to listen on")
	}
	oln, err := net.Listen("tcp", netip.AddrPortFrom(own, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	osrv := &httptest.Server{Listener: oln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secret") })}}
	osrv.Start()
	defer osrv.Close()
	r := fetch(t, &Fetcher{}, catalog.WebFetch{URL: osrv.URL + "/"})
	if r.Code != api.CodeFetchBlocked || strings.Contains(r.Content, "secret") {
		t.Errorf("this host's own address %s: code %q: %q", own, r.Code, r.Content)
	}
	// The server's allow list opens it, as it opens loopback.
	if r := fetch(t, &Fetcher{Allow: []Allow{allowServer(t, osrv)}}, catalog.WebFetch{URL: osrv.URL + "/"}); r.IsError || !strings.Contains(r.Content, "secret") {
		t.Errorf("this host's own address, allowed: %q", r.Content)
	}
}

// A gzip bomb (64 MiB of zeros, served compressed as text/plain) comes back as a short line
// saying it is binary: no NUL reaches the model, and the result stays bounded; it was a mebibyte
// of NULs before.
func TestFetchGzipBomb(t *testing.T) {
	t.Parallel()
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zero := make([]byte, 1<<20)
	for i := 0; i < 64; i++ {
		zw.Write(zero)
	}
	zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if r.URL.Path == "/ctl" {
			fmt.Fprint(w, "a\x01b\x1bc\x7fd\te\n")
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb.Bytes())
	}))
	defer srv.Close()
	f := &Fetcher{Allow: []Allow{allowServer(t, srv)}}
	max := int64(MaxMaxBytes)
	for _, in := range []catalog.WebFetch{{URL: srv.URL + "/"}, {URL: srv.URL + "/", MaxBytes: &max}} {
		r := fetch(t, f, in)
		if strings.Contains(r.Content, "\x00") || len(r.Content) > 4<<10 || !strings.Contains(r.Content, "NUL bytes") {
			t.Errorf("the gzip bomb: %d bytes back, NULs %d: %.300q", len(r.Content), strings.Count(r.Content, "\x00"), r.Content)
		}
	}
	if r := fetch(t, f, catalog.WebFetch{URL: srv.URL + "/ctl"}); !strings.HasSuffix(r.Content, "\nabcd\te\n") {
		t.Errorf("control characters: %q", r.Content)
	}
}
