package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/httpserve"
)

// openFiles counts this process's open descriptors (the gateway's side of each connection
// included, since the test serves it in-process).
func openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd to count descriptors: %v", err)
	}
	return len(fds)
}

// Connections that never finish their request, with no token, once held a descriptor each for
// as long as they liked: 19,990 of them used the process's 20,000 and the API stopped answering.
// Now a listener holds at most HTTP.MaxConns of them (the rest wait in the kernel's queue, costing
// the process nothing), closes each when its headers or body are late, and a real call still gets
// its answer.
func TestGatewaySlowConnections(t *testing.T) {
	const maxConns, slow = 4, 40
	g := New(nil)
	g.HTTP = httpserve.Options{ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: time.Second,
		NoWriteTimeout: true, IdleTimeout: time.Second, MaxConns: maxConns}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	r := &recorder{}
	tok, release := g.Register("run-a", WireAnthropic, r, nil)
	defer release()
	addr := strings.TrimPrefix(g.URL(), "http://")

	before := openFiles(t)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range slow {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns = append(conns, c)
		if i%2 == 0 { // half never finish their headers
			fmt.Fprintf(c, "POST /v2/gateway/anthropic/v1/messages HTTP/1.1\r\nHost: gw\r\n")
		} else { // half send a token and headers, then a tenth of the body they promised
			fmt.Fprintf(c, "POST /v2/gateway/anthropic/v1/messages HTTP/1.1\r\nHost: gw\r\nx-api-key: %s\r\nContent-Length: 1000\r\n\r\n{\"model\":", tok)
		}
	}
	// Let the gateway accept what it will (a descriptor per connection without the cap).
	time.Sleep(200 * time.Millisecond)
	if held := openFiles(t) - before - slow; held > maxConns+4 {
		t.Errorf("%d slow connections hold %d of the gateway's descriptors; want at most %d (MaxConns) and a few", slow, held, maxConns)
	}

	// A real call is answered (once the slow ones ahead of it are closed).
	c := &http.Client{Timeout: 60 * time.Second}
	req, _ := http.NewRequest("POST", g.URL()+"/v2/gateway/anthropic/v1/messages", strings.NewReader(`{"model":"x","messages":[]}`))
	req.Header.Set("x-api-key", tok)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("a real call beside %d slow connections: %v", slow, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("a real call beside %d slow connections: HTTP %d", slow, resp.StatusCode)
	}

	// Every slow connection is closed by the gateway (within a generous bound; the deadlines in
	// this test are a second at most).
	deadline := time.Now().Add(60 * time.Second)
	for i, c := range conns {
		c.SetReadDeadline(deadline)
		_, err := io.Copy(io.Discard, bufio.NewReader(c))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("slow connection %d still open after 60 s", i)
		}
	}
}

// slowRun answers a model call only after wait, as a vendor thinking for minutes does.
type slowRun struct {
	recorder
	wait time.Duration
}

func (s *slowRun) ModelCall(ctx context.Context, c Call) (Reply, error) {
	select {
	case <-time.After(s.wait):
	case <-ctx.Done():
		return Reply{}, ctx.Err()
	}
	return s.recorder.ModelCall(ctx, c)
}

// The body's deadline bounds the body, not the call: a model call that takes longer than
// ReadTimeout is answered, not cancelled when the deadline passes.
func TestGatewayLongCallOutlivesReadTimeout(t *testing.T) {
	g := New(nil)
	g.HTTP.ReadHeaderTimeout, g.HTTP.ReadTimeout = 200*time.Millisecond, 500*time.Millisecond
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	run := &slowRun{wait: 2 * time.Second}
	tok, release := g.Register("run-a", WireAnthropic, run, nil)
	defer release()
	st, out := post(t, g.URL()+"/v2/gateway/anthropic/v1/messages", tok, nil, []byte(`{"model":"x","messages":[]}`))
	if st != 200 || !strings.HasPrefix(out, "event: echo") {
		t.Errorf("a call longer than the read deadline: %d %s", st, out)
	}
}
