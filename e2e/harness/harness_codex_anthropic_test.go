package harness

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/harness"
	"agentrun.dev/agentrun/internal/model/fake"
)

// Codex on a server whose only model access is Anthropic's (the seed's quickstart setup:
// ANTHROPIC_API_KEY, here pointed at the scripted model server): the gateway translates each of
// Codex's Responses calls to the Messages API and each Anthropic answer back. The scripted server
// sees Anthropic calls only, with our MCP tools named mcp__agentrun__TOOL (Codex's namespace
// flattened), so the scripts name them so.

// newCodexAnthropicEnv is NewEnv (ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL only) with codex in the
// harness cache; it skips, saying why, when codex cannot be installed.
func newCodexAnthropicEnv(t *testing.T, script string) *Env {
	t.Helper()
	cache := InstalledHarness(t, "codex")
	e := NewEnv(t, script)
	e.Extra = append(e.Extra, harness.CacheEnv+"="+cache)
	return e
}

const codexAnthropicScript = `
entries:
  - name: router
    match: "Route this request"
    turns:
      - text: '{"family": "sonnet", "confidence": 0.9}'
  - name: notes
    match: "Ask me which region"
    turns:
      - text: "I'll ask which region."
        tool_calls:
          - name: mcp__agentrun__ask_person
            input: {question: "Which region should I cover?"}
      - tool_calls:
          - name: mcp__agentrun__write
            input: {path: region.md, content: "# {{last_tool_result}}\n\nNotes about {{last_tool_result}}.\n"}
      - text: "I wrote region.md."
  - name: careful
    match: "Count carefully"
    turns:
      - text: "I need to count this once."
        tool_calls:
          - name: mcp__agentrun__write
            input: {path: "secret.txt", content: "leak"}
      - tool_calls:
          - name: mcp__agentrun__dev_count
            input: {label: "careful"}
      - text: "counted"
  - name: keep
    match: "Keep talking"
    turns:
      - text: "first answer"
      - text: "second answer: {{last_user}}"
  - name: hello
    match: "Say hello"
    turns:
      - text: "hello from the scripted model"
  - name: crash
    match: "Crash test"
    turns:
      - tool_calls:
          - name: mcp__agentrun__dev_count
            input: {label: "crash"}
      - tool_calls:
          - name: mcp__agentrun__write
            input: {path: "after.txt", content: "done"}
      - text: "finished"
`

// anthropicOnly checks the scripted server got only Anthropic Messages calls, codex's streamed
// (the router's question is the server's own call).
func anthropicOnly(t *testing.T, calls []fake.Call) {
	t.Helper()
	for _, c := range calls {
		if c.Entry == "router" {
			continue
		}
		if c.Format != fake.FormatAnthropic || !c.Stream || c.Status != 200 {
			t.Errorf("call %+v: want a streamed Anthropic call answered 200", c)
		}
	}
}

// The seed's quickstart, unchanged but for "harness": "codex", on an Anthropic-only server: exit 8
// while it asks which region, runs message, exit 0, runs read-file region.md. Every scripted turn
// reaches the server once (the second codex start is answered from the journal, translated again),
// the turns are priced from Anthropic's usage on the routed Sonnet model, and the timeline says
// once that the calls are translated.
func TestCodexAnthropicQuickstart(t *testing.T) {
	t.Parallel()
	e := newCodexAnthropicEnv(t, codexAnthropicScript)
	e.Start()
	work := t.TempDir()
	script := strings.Replace(SeedQuickstart, `{"definition": {"id": "notes",`, `{"definition": {"id": "notes", "harness": "codex",`, 1)
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = work
	cmd.Env = append(e.BaseEnv(), "PATH="+filepath.Dir(BinPath)+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("quickstart failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "start-exit=8") {
		t.Errorf("runs start --wait should exit 8 while the agent asks; output:\n%s", out)
	}
	// Codex gives the model an MCP tool's result after a "Wall time: ... Output:" header, which the
	// script's template copies along: the region is what the person answered.
	if !strings.Contains(string(out), "Output:\nEurope\n\nNotes about ") || !strings.HasSuffix(string(out), "Output:\nEurope.\n") {
		t.Errorf("read-file did not print region.md about Europe; output:\n%s", out)
	}
	var run string
	for _, r := range ListRuns(e) {
		run = r
	}
	final := e.GetRun(run)
	if final.Status.Phase != api.PhaseSucceeded || final.Status.Answer == nil || final.Status.Answer.Preview != "I wrote region.md." {
		t.Fatalf("run %s: %s %s %+v", run, final.Status.Phase, final.Status.Message, final.Status.Answer)
	}
	for turn := 0; turn < 3; turn++ {
		if n := e.Model.CountTurn("notes", turn); n != 1 {
			t.Errorf("scripted turn %d reached the model server %d times, want 1", turn, n)
		}
	}
	anthropicOnly(t, e.Model.Calls())
	var keys []string
	for _, s := range e.Steps(run) {
		if s.Key == "computer" {
			continue // the seed's agent has a sandbox (the harness runs in it): its making is a step
		}
		keys = append(keys, s.Key)
		if s.Kind == "model" && !strings.Contains(s.Title, "via codex") {
			t.Errorf("model step %s does not name the harness: %q", s.Key, s.Title)
		}
	}
	if want := "t0/route t0/model t0/tool/0 t1/model t1/tool/0 t2/model"; strings.Join(keys, " ") != want {
		t.Errorf("steps = %v, want %s", keys, want)
	}
	// status.turns and status.cost read as for builtin: one routed turn, three calls, priced.
	if tr := final.Status.Turns; len(tr) != 1 || tr[0].ModelCalls != 3 || tr[0].Family != "sonnet" || tr[0].ChosenBy != "jev" ||
		!strings.HasPrefix(tr[0].Model, "claude-") || tr[0].InputTokens == 0 || tr[0].OutputTokens == 0 {
		t.Errorf("turns = %+v", tr)
	}
	if c := final.Status.Cost; c == nil || c.TotalUSD == "" || c.TotalUSD == "0.00" || strings.Contains(c.TotalUSD, "unknown") {
		t.Errorf("cost = %+v", c)
	}
	said := 0
	for _, ev := range e.Events(run) {
		if ev.Type == api.EventGatewayTranslated {
			said++
			if !strings.Contains(ev.Message, "Responses") || !strings.Contains(ev.Message, "Messages") {
				t.Errorf("gateway.translated says %q", ev.Message)
			}
		}
	}
	if said != 1 {
		t.Errorf("gateway.translated %d times on the timeline, want once", said)
	}
	NoHarnessLeft(t, e.Dir, 10*time.Second)
}

// SIGKILL after a translated model call's intent (the call not yet sent), then right after a
// tool call, and start again: the run finishes, no scripted turn reaches the server twice, the
// counting tool ran once, and the restarted codex, answered from the journal's Anthropic bytes
// translated again, sends the same requests (no ReplayDiverged).
func TestCodexAnthropicCrashReplay(t *testing.T) {
	t.Parallel()
	e := newCodexAnthropicEnv(t, codexAnthropicScript)
	e.Start("AGENTRUN_DEV_PAUSE_AT=after-intent:t1/model")
	e.CodexAgent("crasher", `["write","dev_count"]`, "")
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"k1"},"spec":{"agent":"crasher","input":"Crash test one"}}`, nil)
	e.WaitStderr("AGENTRUN_DEV_PAUSED after-intent t1/model", 60*time.Second)
	e.Kill()
	NoHarnessLeft(t, e.Dir, 10*time.Second)
	e.Start("AGENTRUN_DEV_PAUSE_AT=after-result:t1/tool/0")
	e.WaitStderr("AGENTRUN_DEV_PAUSED after-result t1/tool/0", 60*time.Second)
	e.Kill()
	NoHarnessLeft(t, e.Dir, 10*time.Second)
	e.Start()
	r := e.WaitPhase("k1", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "finished" {
		t.Fatalf("k1: %s %s %s %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer)
	}
	if got := e.Counted(); !slices.Equal(got, []string{"crash"}) {
		t.Errorf("dev_count ran %v, want once", got)
	}
	for turn := 0; turn < 3; turn++ {
		if n := e.Model.CountTurn("crash", turn); n != 1 {
			t.Errorf("scripted turn %d reached the model server %d times, want 1", turn, n)
		}
	}
	anthropicOnly(t, e.Model.Calls())
	if b, err := os.ReadFile(filepath.Join(e.Dir, "runs", "k1", "after.txt")); err != nil || string(b) != "done" {
		t.Errorf("after.txt = %q, %v", b, err)
	}
	said := 0
	for _, ev := range e.Events("k1") {
		if ev.Type == api.EventGatewayTranslated {
			said++
		}
	}
	if said != 1 {
		t.Errorf("gateway.translated %d times over three drives, want once", said)
	}
}

// On the translated path as on OpenAI's: a tool call the server's deny set refuses is answered to
// codex without running, one that asks parks the run Waiting/Approval with its arguments (the
// model's text of the Anthropic answer as its reason) until approved, then runs once; a cap too
// small for codex's first call parks MaxCostReached with neededUSD, and raising the cap to it lets the
// run finish; a keep-alive run's message is codex's next turn, the first replayed from the journal.
func TestCodexAnthropicApprovalCapKeepAlive(t *testing.T) {
	t.Parallel()
	e := newCodexAnthropicEnv(t, codexAnthropicScript)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug", "--deny", "write(secret*)"})
	e.CodexAgent("careful", `["write","dev_count"]`, `,"approvals":{"default":"allow","rules":[{"match":"dev_count","action":"ask"}]}`)
	e.CodexAgent("plain", `["write"]`, "")
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"c1"},"spec":{"agent":"careful","input":"Count carefully: one"}}`, nil)
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"cap1"},"spec":{"agent":"plain","input":"Say hello","maxCostUSD":"0.01"}}`, nil)
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"ka"},"spec":{"agent":"plain","input":"Keep talking","keepAlive":true}}`, nil)

	r := e.WaitPhase("c1", 60*time.Second, api.PhaseWaiting, api.PhaseFailed)
	if r.Status.Reason != api.ReasonApproval || r.Status.WaitingOn == nil || !strings.Contains(r.Status.WaitingOn.Detail, `"label":"careful"`) {
		t.Fatalf("c1 is %s %s (%s) waiting on %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.WaitingOn)
	}
	if _, err := os.Stat(filepath.Join(e.Dir, "runs", "c1", "secret.txt")); err == nil {
		t.Errorf("the denied write ran")
	}
	var list struct {
		Items []struct {
			ID    int64
			State string
		}
	}
	res := e.MustCLI(0, "runs", "approvals", "c1", "-o", "json")
	if err := json.Unmarshal([]byte(res.Stdout), &list); err != nil || len(list.Items) != 2 || list.Items[0].State != "denied" || list.Items[1].State != "pending" {
		t.Fatalf("approvals = %s (%v)", res.Stdout, err)
	}
	if n := len(e.Counted()); n != 0 {
		t.Fatalf("dev_count ran %d times before approval", n)
	}
	// A person approves (the CLI signed in as the console's first user).
	if r := e.CLIIn(e.Dir, "correct horse battery\n", "login", "--setup-code", e.SetupCode(), "--password-stdin"); r.Code != 0 {
		t.Fatalf("login: exit %d %q", r.Code, r.Stderr)
	}
	e.MustCLI(0, "runs", "approve", "c1", JSONNumber(list.Items[1].ID))
	r = e.WaitPhase("c1", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "counted" {
		t.Errorf("c1 after approval: %s %s %+v", r.Status.Phase, r.Status.Message, r.Status.Answer)
	}
	if got := e.Counted(); !slices.Equal(got, []string{"careful"}) {
		t.Errorf("dev_count ran %v, want once", got)
	}
	for turn := 0; turn < 3; turn++ {
		if n := e.Model.CountTurn("careful", turn); n != 1 {
			t.Errorf("careful: scripted turn %d reached the model server %d times, want 1", turn, n)
		}
	}

	r = e.WaitPhase("cap1", 60*time.Second, api.PhaseWaiting, api.PhaseFailed, api.PhaseSucceeded)
	// The router's question fits the cap; codex's first call, translated, does not.
	if r.Status.Reason != api.ReasonMaxCostReached || r.Status.Cost == nil || r.Status.Cost.NeededUSD == "" || !strings.Contains(r.Status.Message, "t0/model") {
		t.Fatalf("cap1 is %s %s (%s), cost %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Cost)
	}
	if n := e.Model.CountTurn("hello", 0); n != 0 {
		t.Fatalf("the capped call reached the model server %d times", n)
	}
	e.MustCLI(0, "runs", "raise-cap", "cap1", r.Status.Cost.NeededUSD)
	r = e.WaitPhase("cap1", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "hello from the scripted model" {
		t.Fatalf("cap1 after raise-cap: %s %s %+v", r.Status.Phase, r.Status.Message, r.Status.Answer)
	}

	r = e.WaitPhase("ka", 60*time.Second, api.PhaseWaiting, api.PhaseFailed)
	if r.Status.Reason != api.ReasonMessage || r.Status.Answer == nil || r.Status.Answer.Preview != "first answer" {
		t.Fatalf("ka after the first turn: %s %s %s %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer)
	}
	e.MustCLI(0, "agentrun", "send", "ka", "and more", "--key", "k1")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r = e.GetRun("ka")
		if a := r.Status.Answer; a != nil && a.Preview == "second answer: and more" && r.Status.Phase == api.PhaseWaiting {
			break
		}
		if time.Now().After(deadline) || r.Status.Phase == api.PhaseFailed {
			t.Fatalf("ka after the message: %s %s %+v", r.Status.Phase, r.Status.Message, r.Status.Answer)
		}
	}
	for turn := 0; turn < 2; turn++ {
		if n := e.Model.CountTurn("keep", turn); n != 1 {
			t.Errorf("keep: scripted turn %d reached the model server %d times, want 1", turn, n)
		}
	}
	anthropicOnly(t, e.Model.Calls())
	e.MustCLI(0, "cancel", "agentrun/ka")
	e.WaitPhase("ka", 20*time.Second, api.PhaseCancelled)
	NoHarnessLeft(t, e.Dir, 10*time.Second)
}

// On PostgreSQL, SIGKILL of the runner right after a tool call of a translated codex run, and
// another runner with its own data folder takes the run over: it translates the journal's
// Anthropic answers again into the bytes codex read before, so the restarted codex sends the same
// requests and the run finishes, each scripted turn and the counting tool once.
func TestCodexAnthropicPGTakeover(t *testing.T) {
	t.Parallel()
	cache := InstalledHarness(t, "codex")
	c := NewCluster(t, codexAnthropicScript)
	c.Extra = append(c.Extra, harness.CacheEnv+"="+cache)
	CodexPGTakeover(t, c)
	anthropicOnly(t, c.Model.Calls())
}
