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

// The Nodus seed's example run: an agent with a sandbox uses the shell to print the Python version.
// Then it writes a file in the sandbox and reads it on the host, runs a background server and
// queries it, and cannot reach the network it was not given.
func TestSandboxAgent(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	// A listener on the host the sandbox must not reach.
	hostLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hostLn.Close()
	go func() {
		for {
			c, err := hostLn.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("host secret\n"))
			c.Close()
		}
	}()
	port := strings.TrimPrefix(hostLn.Addr().String(), "127.0.0.1:")
	e := NewEnv(t, `
entries:
  - name: python
    match: "Python version"
    turns:
      - tool_calls:
          - name: bash
            input: {command: "python3 --version"}
      - text: "It is {{last_tool_result}}"
  - name: work
    match: "Do the sandbox work"
    turns:
      - tool_calls:
          - name: bash
            input: {command: "echo made-in-sandbox > made.txt && cat /workspace/made.txt"}
      - tool_calls:
          - name: bash
            input: {command: "python3 -m http.server 8765 --bind 127.0.0.1", background: true}
      - tool_calls:
          - name: bash
            input: {command: "for i in $(seq 50); do python3 -c 'import urllib.request;print(urllib.request.urlopen(\"http://127.0.0.1:8765/made.txt\").read().decode())' 2>/dev/null && break; sleep 0.1; done"}
      - tool_calls:
          - name: bash
            input: {command: "python3 -c 'import socket;s=socket.create_connection((\"127.0.0.1\", `+port+`),2);print(s.recv(100))' || echo NO-NETWORK"}
      - text: "done: {{last_tool_result}}"
`)
	e.Start()
	// No computer setting: the agent gets the best sandbox this server has.
	var a api.Agent
	if st := e.Do("PUT", "/v2/agents/hello-agent", `{"apiVersion":"nodus.dev/v1","kind":"Agent","metadata":{"name":"hello-agent"},"spec":{"system":"Run shell commands in your sandbox to check your work.","model":{"access":"Nodus"},"perRunMaxCostUSD":"0.50"}}`, &a); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	if a.Spec.Computer == nil || a.Spec.Computer.Kind != "sandbox" || a.Spec.Computer.Provider == "" {
		t.Fatalf("computer = %+v, want the server's best sandbox", a.Spec.Computer)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"hello-agent-run"},"spec":{"agent":"hello-agent","input":"Use the shell to print the Python version, then tell me which one it is."}}`, nil)
	r := e.WaitPhase("hello-agent-run", 30*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || !strings.Contains(r.Status.Answer.Preview, "Python 3.") {
		t.Fatalf("run ended %s (%s): %+v", r.Status.Phase, r.Status.Message, r.Status.Answer)
	}
	steps := e.MustCLI(0, "agentrun", "steps", "hello-agent-run").Stdout
	if !strings.Contains(steps, "computer") || !strings.Contains(steps, "bash python3 --version") {
		t.Errorf("steps do not show the sandbox and the command:\n%s", steps)
	}

	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"work"},"spec":{"agent":"hello-agent","input":"Do the sandbox work"}}`, nil)
	r = e.WaitPhase("work", 3*time.Minute, api.PhaseSucceeded, api.PhaseFailed) // a run a stalled machine made self-fence is taken again once its lease ends
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("work ended %s: %s", r.Status.Phase, r.Status.Message)
	}
	if got := e.MustCLI(0, "runs", "read-file", "work", "made.txt").Stdout; got != "made-in-sandbox\n" {
		t.Errorf("made.txt on the host = %q", got)
	}
	results := map[string]string{}
	for key, res := range e.ToolResults("work") {
		results[key] = res.Content
	}
	if !strings.Contains(results["t2/tool/0"], "made-in-sandbox") {
		t.Errorf("the background server was not reachable from a later command: %q", results["t2/tool/0"])
	}
	if !strings.Contains(results["t3/tool/0"], "NO-NETWORK") || strings.Contains(results["t3/tool/0"], "host secret") {
		t.Errorf("the sandbox reached the host's network: %q", results["t3/tool/0"])
	}
}

// An agent cannot name a computer this server cannot provide, nor list a tool its computer lacks.
func TestComputerValidation(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, QuickstartScript)
	e.Start()
	cases := []struct{ body, field string }{
		{`{"metadata":{"name":"a"},"spec":{"computer":{"kind":"phone"}}}`, "spec.computer.kind"},
		{`{"metadata":{"name":"a"},"spec":{"computer":{"kind":"sandbox","provider":"daytona"}}}`, "spec.computer.provider"},
		{`{"metadata":{"name":"a"},"spec":{"computer":{"kind":"none"},"tools":["bash"]}}`, "spec.tools[0]"},
		{`{"metadata":{"name":"a"},"spec":{"approvals":{"rules":[{"match":"bash(","action":"allow"}]}}}`, "spec.approvals.rules[0].match"},
	}
	for _, c := range cases {
		var got api.Error
		if st := e.Do("PUT", "/v2/agents/a", c.body, &got); st != 422 || got.Field != c.field {
			t.Errorf("%s: HTTP %d %+v, want 422 at %s", c.body, st, got, c.field)
		}
	}
	var caps map[string]any
	e.Do("GET", "/v2/capabilities", nil, &caps)
	if b, _ := json.Marshal(caps["computers"]); !strings.Contains(string(b), `"provider":"local"`) ||
		!strings.Contains(string(b), `{"available":false,"kind":"phone","why":"no provider built into this server makes phone computers`) {
		t.Errorf("capabilities.computers = %s", b)
	}
}

// An agent with a browser reads a page and saves a screenshot into its run folder.
func TestBrowserAgent(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("browser test skipped: chromium not installed (apt-get install chromium; .ci/run does)")
	}
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<html><head><title>Quarterly</title></head><body><h1>Revenue grew 12%</h1><a href="/more">more</a></body></html>`)
	}))
	defer page.Close()
	e := NewEnv(t, `
entries:
  - name: browse
    match: "Read the page"
    turns:
      - tool_calls:
          - name: browser_open
            input: {url: "`+page.URL+`"}
      - tool_calls:
          - name: browser_screenshot
            input: {path: "shots/page.png"}
      - text: "saw the page"
`)
	e.Start()
	var a api.Agent
	if st := e.Do("PUT", "/v2/agents/reader", `{"metadata":{"name":"reader"},"spec":{"computer":{"kind":"browser","network":true}}}`, &a); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	if a.Spec.Computer.Provider != "chromium" {
		t.Errorf("browser provider = %q", a.Spec.Computer.Provider)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"browse"},"spec":{"agent":"reader","input":"Read the page"}}`, nil)
	r := e.WaitPhase("browse", 3*time.Minute, api.PhaseSucceeded, api.PhaseFailed) // as above: a self-fenced run is taken again once its lease ends
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run ended %s: %s", r.Status.Phase, r.Status.Message)
	}
	var opened struct{ Content string }
	for _, s := range e.Steps("browse") {
		if s.Key == "t0/tool/0" {
			json.Unmarshal(s.Result, &opened)
		}
	}
	if !strings.Contains(opened.Content, "Revenue grew 12%") || !strings.Contains(opened.Content, "Quarterly") {
		t.Errorf("browser_open result = %q", opened.Content)
	}
	png := e.MustCLI(0, "runs", "read-file", "browse", "shots/page.png").Stdout
	if !strings.HasPrefix(png, "\x89PNG") {
		t.Errorf("shots/page.png is not a PNG (%d bytes)", len(png))
	}
}

// A keep-alive run keeps its sandbox while it waits for a message (a background server started in
// one turn answers in the next); cancelling the run deletes the sandbox.
func TestKeepAliveKeepsSandbox(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	e := NewEnv(t, `
entries:
  - name: keep
    match: "Keep a server"
    turns:
      - tool_calls:
          - name: bash
            input: {command: "echo kept > kept.txt; python3 -m http.server 8771 --bind 127.0.0.1 >/dev/null 2>&1", background: true}
      - text: "server started"
      - tool_calls:
          - name: bash
            input: {command: "python3 -c 'import urllib.request;print(urllib.request.urlopen(\"http://127.0.0.1:8771/kept.txt\").read().decode())' || echo GONE"}
      - text: "{{last_tool_result}}"
`)
	e.Start()
	e.Do("PUT", "/v2/agents/keeper", `{"metadata":{"name":"keeper"},"spec":{"computer":{"kind":"sandbox"}}}`, nil)
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"keeper-run"},"spec":{"agent":"keeper","input":"Keep a server","keepAlive":true}}`, nil)
	e.WaitPhase("keeper-run", 30*time.Second, api.PhaseWaiting)
	time.Sleep(500 * time.Millisecond) // the server in the sandbox is up by now
	e.MustCLI(0, "runs", "message", "keeper-run", "--content", "Is it still there?")
	deadline := time.Now().Add(30 * time.Second)
	var r api.AgentRun
	for time.Now().Before(deadline) {
		r = e.GetRun("keeper-run")
		if r.Status.Phase == api.PhaseWaiting && r.Status.Answer != nil && r.Status.Answer.Preview != "server started" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r.Status.Answer == nil || !strings.Contains(r.Status.Answer.Preview, "kept") {
		t.Fatalf("the background server did not survive the wait: %+v (%s)", r.Status.Answer, r.Status.Phase)
	}
	if out, _ := exec.Command("pgrep", "-f", "http.server 8771").Output(); len(out) == 0 {
		t.Fatal("no sandbox process while the run waits")
	}
	e.MustCLI(0, "cancel", "agentrun/keeper-run")
	e.WaitPhase("keeper-run", 15*time.Second, api.PhaseCancelled)
	deadline = time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if out, _ := exec.Command("pgrep", "-f", "http.server 8771").Output(); len(out) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Error("the sandbox's processes outlived the cancelled run")
}
