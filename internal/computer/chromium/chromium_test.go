package chromium_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/chromium"
	"agentrun.dev/agentrun/internal/computer/computertest"
)

func TestConformance(t *testing.T) {
	computertest.RunBrowser(t, chromium.New())
}

// TestTools runs the browser tools through computer.Run on a real Chromium.
func TestTools(t *testing.T) {
	p := chromium.New()
	if a := p.Available(t.Context()); !a.Available {
		t.Skip(a.Reason)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<title>T</title><p>tool page</p><a href="/next">Next</a>`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	c, err := p.Create(t.Context(), computer.Spec{Run: "tools", Folder: dir, Kind: computer.KindBrowser, Network: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	call := func(name, input string) (string, bool) {
		t.Helper()
		content, isErr, err := computer.Run(t.Context(), c, name, json.RawMessage(input))
		if err != nil {
			t.Fatalf("%s %s: %v", name, input, err)
		}
		return content, isErr
	}
	if out, isErr := call("browser_open", `{"url":"`+srv.URL+`"}`); isErr || !strings.Contains(out, "tool page") || !strings.Contains(out, "- Next -> "+srv.URL+"/next") {
		t.Fatalf("open: %q", out)
	}
	if out, isErr := call("browser_click", `{"selector":"#nope"}`); !isErr || !strings.Contains(out, "#nope") {
		t.Fatalf("click missing: %q %v", out, isErr)
	}
	if out, isErr := call("browser_click", `{}`); !isErr {
		t.Fatalf("click nothing: %q", out)
	}
	if out, _ := call("browser_screenshot", `{}`); !strings.Contains(out, "screenshots/1.png") {
		t.Fatalf("screenshot: %q", out)
	}
}
