package harness

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/harness"
)

// The claude-agent harness against the real `claude` CLI at the pinned version, installed from npm
// once into a shared cache (AGENTRUN_HARNESS_CACHE when set, as .ci/run sets it), and the scripted
// model server. Claude Code sees our tools as mcp__agentrun__NAME, so the scripts name them so.

// claudeCase is Claude Code for the scenarios every harness runs (e2etest.HarnessQuickstart, ...).
// Claude Code appends a <system-reminder> to each tool result and puts one before a message's text,
// which the script's templates copy along: the region and the second answer are what the person and
// the message said, with Claude Code's text around them.
var claudeCase = HarnessCase{
	Name:   "claude-agent",
	Prefix: "mcp__agentrun__",
	Procs:  HarnessProcs,
	PrintedRegion: func(out string) bool {
		return strings.Contains(out, "# Europe") && strings.Contains(out, "Notes about Europe")
	},
	SecondAnswer: func(preview string) bool {
		return strings.HasPrefix(preview, "second answer: ") && strings.HasSuffix(preview, "and more")
	},
	WhileParked: func(t *testing.T, e *Env) {
		if res := e.ToolResults("c1")["t0/tool/0"]; res.Content != "" {
			t.Errorf("the denied write has a tool result %q", res.Content)
		}
	},
}

// The seed's quickstart, unchanged but for "harness": "claude-agent" in the agent: exit 8 while it
// asks which region, runs message, exit 0, runs read-file region.md. Each scripted model turn
// reaches the scripted server once, though the harness was started twice (the run parked on the
// question and the second start replayed the first call from the journal).
func TestClaudeQuickstart(t *testing.T) {
	t.Parallel()
	NeedBwrap(t) // the seed's agent has a sandbox: its computer is the first step
	e := NewClaudeEnv(t, ClaudeScript)
	run := HarnessQuickstart(t, e, claudeCase)
	// Removed once the drive has stopped the harness, just after the run's last write.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := os.Stat(filepath.Join(e.Dir, "harness-home", run))
		if os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the finished run's harness home is still there (%v)", err)
			break
		}
	}
}

// A tool call the server's deny set refuses is answered to the harness without running; one that
// asks parks the run in Waiting/Approval with its arguments until a person approves, then runs once.
func TestClaudeApprovalAndDeny(t *testing.T) {
	t.Parallel()
	approvals := HarnessApprovalAndDeny(t, NewClaudeEnv(t, ClaudeScript), claudeCase)
	// The approval shows what the model said with the call, as for builtin.
	if approvals[1].Reason != "I need to count this once." {
		t.Errorf("approval reason %q", approvals[1].Reason)
	}
}

// A cap too small for the first call's worst case parks the run MaxCostReached with neededUSD;
// raising the cap to it lets it finish.
func TestClaudeCapPause(t *testing.T) {
	t.Parallel()
	HarnessCapPause(t, NewClaudeEnv(t, ClaudeScript), claudeCase)
}

// SIGKILL mid model call, then right after a tool call, then start again: the run finishes, no
// scripted turn reaches the model server twice and the counting tool ran once. A tool call cut off
// after its intent parks NeedsResolution naming it; retry runs it once. No harness outlives its
// runner.
func TestClaudeCrashReplay(t *testing.T) {
	t.Parallel()
	HarnessCrashReplay(t, NewClaudeEnv(t, ClaudeScript), claudeCase)
}

// Cancelling a run whose harness waits on a model call ends the run and kills the harness at once.
func TestClaudeCancel(t *testing.T) {
	t.Parallel()
	HarnessCancel(t, NewClaudeEnv(t, ClaudeScript), claudeCase)
}

// An unknown harness is refused naming the ones this server runs.
func TestUnknownHarnessRefused(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, ClaudeScript)
	e.Start()
	var perr api.Error
	st := e.Do("PUT", "/v2/agents/x", `{"metadata":{"name":"x"},"spec":{"harness":"nope"}}`, &perr)
	if st != 422 || perr.Field != "spec.harness" || !strings.Contains(perr.Message, `harness "nope" is not available on this server (available: builtin, claude-agent`) {
		t.Fatalf("HTTP %d %+v", st, perr)
	}
	res := e.MustCLI(0, "server", "capabilities")
	if !strings.Contains(res.Stdout, `"claude-agent"`) || !strings.Contains(res.Stdout, harness.ClaudeVersion) {
		t.Errorf("capabilities do not list claude-agent %s:\n%s", harness.ClaudeVersion, res.Stdout)
	}
}

// A keep-alive run's message is the harness's next user turn: the harness, stopped while the run
// waited, is started again, replays the first turn from the journal and answers the second.
func TestClaudeKeepAlive(t *testing.T) {
	t.Parallel()
	r := HarnessKeepAlive(t, NewClaudeEnv(t, ClaudeScript), claudeCase)
	if len(r.Status.Turns) != 2 {
		t.Errorf("turns = %+v, want one per prompt", r.Status.Turns)
	}
}

// A harness that exits with an error fails the run HarnessError with its last stderr lines; one
// that cannot be installed (no npm, nothing in the cache) fails it HarnessUnavailable, at once; the
// first use installs it with npm at the pinned version into the data folder, on the timeline.
func TestHarnessExitAndUnavailable(t *testing.T) {
	t.Parallel()
	broken := t.TempDir()
	bin := filepath.Join(broken, "claude-agent@"+harness.ClaudeVersion, "node_modules", ".bin", "claude")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	os.WriteFile(bin, []byte("#!/bin/sh\necho 'starting' >&2\necho 'boom: no such config' >&2\nexit 3\n"), 0o755)
	e := NewEnv(t, ClaudeScript)
	e.Extra = append(e.Extra, harness.CacheEnv+"="+broken)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/h", `{"metadata":{"name":"h"},"spec":{"harness":"claude-agent","tools":["write"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"x1"},"spec":{"agent":"h","input":"Say hello"}}`, nil)
	r := e.WaitPhase("x1", 30*time.Second, api.PhaseFailed, api.PhaseSucceeded)
	if r.Status.Reason != api.ReasonHarnessError || !strings.Contains(r.Status.Message, "boom: no such config") || !strings.Contains(r.Status.Message, "exit status 3") {
		t.Errorf("x1: %s %s", r.Status.Reason, r.Status.Message)
	}
	found := false
	for _, ev := range e.Events("x1") {
		found = found || (ev.Type == "harness.exited" && strings.Contains(string(ev.Data), "boom: no such config"))
	}
	if !found {
		t.Errorf("no harness.exited event with the stderr lines")
	}
	e.Kill()

	// No npm on PATH and an empty cache: the install cannot happen.
	e.Extra = append(e.Extra, harness.CacheEnv+"="+t.TempDir(), "PATH="+t.TempDir())
	e.Start()
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"x2"},"spec":{"agent":"h","input":"Say hello"}}`, nil)
	r = e.WaitPhase("x2", 30*time.Second, api.PhaseFailed, api.PhaseSucceeded)
	if r.Status.Reason != api.ReasonHarnessUnavailable || !strings.Contains(r.Status.Message, "npm") {
		t.Errorf("x2: %s %s", r.Status.Reason, r.Status.Message)
	}
	res := e.MustCLI(0, "server", "capabilities")
	if !strings.Contains(res.Stdout, "npm is not on PATH") {
		t.Errorf("capabilities do not say why claude-agent cannot run:\n%s", res.Stdout)
	}
	e.Kill()

	// First use installs with the machine's npm at the pinned version, saying so on the timeline.
	// This npm is a script that records its arguments and installs a claude that fails at once.
	npmDir := t.TempDir()
	argsFile := filepath.Join(npmDir, "args")
	os.WriteFile(filepath.Join(npmDir, "npm"), []byte("#!/bin/sh\necho \"$@\" > "+argsFile+"\nmkdir -p node_modules/.bin\nprintf '#!/bin/sh\\necho installed-claude-ran >&2\\nexit 1\\n' > node_modules/.bin/claude\nchmod +x node_modules/.bin/claude\n"), 0o755)
	e.Extra = append(e.Extra, harness.CacheEnv+"="+t.TempDir(), "PATH="+npmDir+":/usr/bin:/bin")
	e.Start()
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"x3"},"spec":{"agent":"h","input":"Say hello"}}`, nil)
	r = e.WaitPhase("x3", 30*time.Second, api.PhaseFailed, api.PhaseSucceeded)
	if r.Status.Reason != api.ReasonHarnessError || !strings.Contains(r.Status.Message, "installed-claude-ran") {
		t.Errorf("x3: %s %s", r.Status.Reason, r.Status.Message)
	}
	args, _ := os.ReadFile(argsFile)
	if want := "install --no-audit --no-fund --no-package-lock --save-exact @anthropic-ai/claude-code@" + harness.ClaudeVersion; strings.TrimSpace(string(args)) != want {
		t.Errorf("npm ran with %q, want %q", args, want)
	}
	var msgs []string
	for _, ev := range e.Events("x3") {
		if ev.Type == "harness.install" {
			msgs = append(msgs, ev.Message)
		}
	}
	if len(msgs) < 2 || !strings.HasPrefix(msgs[0], "installing @anthropic-ai/claude-code@"+harness.ClaudeVersion+" with npm into "+filepath.Join(e.Dir, "harnesses", "claude-agent@"+harness.ClaudeVersion)) || !strings.HasPrefix(msgs[len(msgs)-1], "installed ") {
		t.Errorf("install events %q", msgs)
	}
	if _, err := os.Stat(filepath.Join(e.Dir, "harnesses", "claude-agent@"+harness.ClaudeVersion, "node_modules", ".bin", "claude")); err != nil {
		t.Errorf("not installed into the data folder: %v", err)
	}
}

// mcpConf is what the claude-agent driver wrote for its harness: the run's MCP endpoint and token.
func mcpConf(t *testing.T, dir, run string) (url, token string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "harness-home", run, "mcp.json"))
		var c struct {
			MCPServers map[string]struct {
				URL     string            `json:"url"`
				Headers map[string]string `json:"headers"`
			} `json:"mcpServers"`
		}
		if err == nil && json.Unmarshal(b, &c) == nil {
			s := c.MCPServers["agentrun"]
			return s.URL, strings.TrimPrefix(s.Headers["Authorization"], "Bearer ")
		}
		if time.Now().After(deadline) {
			t.Fatalf("no mcp.json for %s: %v", run, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func gatewayPost(t *testing.T, url, token, run string, body []byte) int {
	t.Helper()
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("x-api-key", token)
	}
	if run != "" {
		req.Header.Set("X-Agentrun-Run", run)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The real runner's gateway, with the tokens its harnesses were given: another run's token is 403,
// none is 401, a body over the limit is 413, and a run's token is dead once the run has ended.
func TestClaudeGatewayTokens(t *testing.T) {
	t.Parallel()
	e := NewClaudeEnv(t, ClaudeScript)
	e.Start()
	// No computer: the harness runs on the runner and is given the gateway's own loopback address,
	// which this test then calls (inside a computer it is given a port forwarded there).
	if st := e.Do("PUT", "/v2/agents/slow", `{"metadata":{"name":"slow"},"spec":{"harness":"claude-agent","computer":{"kind":"none"},"tools":["write"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"g1"},"spec":{"agent":"slow","input":"Be slow"}}`, nil)
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"g2"},"spec":{"agent":"slow","input":"Be slow"}}`, nil)
	mcp1, tok1 := mcpConf(t, e.Dir, "g1")
	mcp2, tok2 := mcpConf(t, e.Dir, "g2")
	base, _, _ := strings.Cut(mcp1, "/v2/gateway/")
	msgs := base + "/v2/gateway/anthropic/v1/messages"
	if !strings.HasPrefix(base, "http://127.0.0.1:") || tok1 == "" || tok1 == tok2 {
		t.Fatalf("gateway %q, tokens %q %q", base, tok1, tok2)
	}
	small := []byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"Say hello"}]}`)
	if st := gatewayPost(t, msgs, "", "", small); st != 401 {
		t.Errorf("no token: HTTP %d", st)
	}
	if st := gatewayPost(t, msgs, tok1, "g2", small); st != 403 {
		t.Errorf("g1's token for g2: HTTP %d", st)
	}
	if st := gatewayPost(t, mcp2, tok1, "", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)); st != 403 {
		t.Errorf("g1's token on g2's MCP endpoint: HTTP %d", st)
	}
	if st := gatewayPost(t, base+"/v2/gateway/openai/v1/responses", tok1, "", small); st != 403 {
		t.Errorf("g1's token on another wire's endpoint: HTTP %d", st)
	}
	if st := gatewayPost(t, msgs, tok1, "g1", bytes.Repeat([]byte(" "), 33<<20)); st != 413 {
		t.Errorf("a body over the limit: HTTP %d", st)
	}
	e.MustCLI(0, "cancel", "agentrun/g1")
	e.WaitPhase("g1", 20*time.Second, api.PhaseCancelled)
	if st := gatewayPost(t, msgs, tok1, "", small); st != 401 {
		t.Errorf("g1's token after g1 ended: HTTP %d", st)
	}
	// The token never reaches the timeline or the server's log.
	for _, ev := range e.Events("g1") {
		if strings.Contains(ev.Message, tok1) || strings.Contains(string(ev.Data), tok1) {
			t.Errorf("event %s carries the token", ev.Type)
		}
	}
	if strings.Contains(e.Stderr.String(), tok1) {
		t.Errorf("the server's log carries the token")
	}
	e.MustCLI(0, "cancel", "agentrun/g2")
}

// A restarted harness that sends another request than the journal recorded (here the run folder
// became a git repository while the run waited, which Claude Code's prompt says) parks the run
// NeedsResolution, reason ReplayDiverged, naming the step; it never carries on.
func TestClaudeReplayDiverged(t *testing.T) {
	t.Parallel()
	e := NewClaudeEnv(t, ClaudeScript)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/notes", `{"metadata":{"name":"notes"},"spec":{"harness":"claude-agent","tools":["write","ask_person"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"d1"},"spec":{"agent":"notes","input":"Ask me which region to cover, then write region.md about it."}}`, nil)
	r := e.WaitPhase("d1", 60*time.Second, api.PhaseWaiting, api.PhaseFailed)
	if r.Status.Reason != api.ReasonQuestion {
		t.Fatalf("d1: %s %s %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	e.Kill()
	if err := os.MkdirAll(filepath.Join(e.Dir, "runs", "d1", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.Start()
	e.MustCLI(0, "runs", "message", "d1", "--content", "Europe")
	r = e.WaitPhase("d1", 60*time.Second, api.PhaseNeedsResolution, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Reason != api.ReasonReplayDiverged || r.Status.WaitingOn == nil || r.Status.WaitingOn.StepKey != "t0/model" {
		t.Fatalf("d1: %s %s %s %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.WaitingOn)
	}
	if n := e.Model.CountTurn("notes", 0); n != 1 {
		t.Errorf("the diverged call reached the model server: turn 0 called %d times", n)
	}
}

// A model the price table lacks, allowed by allowUnpricedModels, runs on claude-agent with its
// cost unknown, as on builtin. Claude Code sends a model it does not know a mid-conversation
// system message (its environment block), which the scripted server, as the vendor, takes.
func TestClaudeUnpricedModel(t *testing.T) {
	t.Parallel()
	e := NewClaudeEnv(t, ClaudeScript)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/newer", `{"metadata":{"name":"newer"},"spec":{"harness":"claude-agent",
  "model":{"name":"claude-mystery-9"},"allowUnpricedModels":true,"tools":["write"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"u1"},"spec":{"agent":"newer","input":"Say hello"}}`, nil)
	r := e.WaitPhase("u1", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseWaiting)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "hello from the scripted model" {
		t.Fatalf("run is %s %s (%s), answer %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer)
	}
	if c := r.Status.Cost; c == nil || c.TotalUSD != "unknown" {
		t.Errorf("cost = %+v, want unknown", c)
	}
	if tr := r.Status.Turns; len(tr) != 1 || tr[0].CostUSD != "unknown" || tr[0].Model != "claude-mystery-9" {
		t.Errorf("turns = %+v", tr)
	}
}
