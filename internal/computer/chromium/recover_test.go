package chromium_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/chromium"
)

// TestFailedLoadThenEveryAction: after a page that does not load (a closed localhost port),
// every browser action answers the agent (an agent error, or a result) rather than failing as
// the computer's fault, and the browser works again for the next page.
func TestFailedLoadThenEveryAction(t *testing.T) {
	p := chromium.New()
	if a := p.Available(t.Context()); !a.Available {
		t.Skip(a.Reason)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<title>T</title><p>back again</p><form><input id="q" name="q"></form><a href="/x">X</a>`)
	}))
	defer srv.Close()
	// A port nothing listens on: bind one, then close it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/"
	l.Close()

	c, err := p.Create(t.Context(), computer.Spec{Run: "recover", Folder: t.TempDir(), Kind: computer.KindBrowser, Network: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := c.(computer.Browser)
	agentErr := func(what string, err error) {
		t.Helper()
		var ae *computer.AgentError
		if err != nil && !errors.As(err, &ae) {
			t.Fatalf("%s after a failed load: %v (%T), want an error the agent sees or a result", what, err, err)
		}
	}
	for round := 0; round < 2; round++ {
		_, err := b.Open(t.Context(), closed)
		if err == nil {
			t.Fatalf("opening a closed port succeeded")
		}
		agentErr("open", err)
		_, err = b.Screenshot(t.Context(), "")
		agentErr("screenshot", err)
		_, err = b.Current(t.Context())
		agentErr("text", err)
		_, err = b.Click(t.Context(), computer.Target{Text: "X"})
		agentErr("click", err)
		_, err = b.Type(t.Context(), "#q", "hello", false)
		agentErr("type", err)
		pg, err := b.Open(t.Context(), srv.URL)
		if err != nil || !strings.Contains(pg.Text, "back again") {
			t.Fatalf("round %d: the next page after a failed load: %+v %v", round, pg, err)
		}
		if _, err := b.Screenshot(t.Context(), ""); err != nil {
			t.Fatalf("round %d: screenshot of a good page: %v", round, err)
		}
	}
}
