package computer

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// TestBrowserScreenshotAfterFailedLoad: the audit's case. The agent opens a closed localhost
// port, then takes a screenshot, then opens a good page: the failed load is a tool error the
// model reads, the screenshot does not fail the run (InternalError: Not attached to an active
// page), and the browser works again for the next page. The run completes.
func TestBrowserScreenshotAfterFailedLoad(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("browser test skipped: chromium not installed (apt-get install chromium; .ci/run does)")
	}
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<html><head><title>Fine</title></head><body><h1>back on track</h1></body></html>`)
	}))
	defer page.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/"
	l.Close() // nothing listens there now
	e := NewEnv(t, `
entries:
  - name: browse
    match: "Look at the pages"
    turns:
      - tool_calls:
          - name: browser_open
            input: {url: "`+closed+`"}
      - tool_calls:
          - name: browser_screenshot
            input: {}
      - tool_calls:
          - name: browser_open
            input: {url: "`+page.URL+`"}
      - text: "done"
`)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/reader", `{"metadata":{"name":"reader"},"spec":{"computer":{"kind":"browser","network":true}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"browse"},"spec":{"agent":"reader","input":"Look at the pages"}}`, nil)
	r := e.WaitPhase("browse", 90*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run ended %s/%s: %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	// The tool results in the order the model read them.
	var results []ToolResult
	for _, s := range e.Steps("browse") {
		if s.Kind != "tool" {
			continue
		}
		var res ToolResult
		json.Unmarshal(s.Result, &res)
		results = append(results, res)
	}
	if len(results) != 3 {
		t.Fatalf("tool results = %+v, want 3", results)
	}
	if !results[0].IsError || !strings.Contains(results[0].Content, "ERR_CONNECTION_REFUSED") {
		t.Errorf("the failed load as the model read it: %+v, want an error naming net::ERR_CONNECTION_REFUSED", results[0])
	}
	// The failed load left the page detached; the browser replaced it, so the screenshot works.
	if results[1].IsError || !strings.Contains(results[1].Content, ".png") {
		t.Errorf("screenshot after the failed load: %+v, want a saved PNG", results[1])
	}
	if results[2].IsError || !strings.Contains(results[2].Content, "back on track") {
		t.Errorf("the next page after the failed load: %+v", results[2])
	}
}
