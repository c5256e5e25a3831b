package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/harness"
)

// The codex harness against the real `codex app-server` at the pinned version (from
// AGENTRUN_HARNESS_CACHE, or installed from npm once into it) and the scripted model server, in
// the Responses format. Codex lists our MCP tools inside a namespace and the scripted server calls
// them with it, so the scripts name them plainly.

// newCodexEnv is newEnv with the harness cache (holding codex) given to the server; the test
// skips, saying why, when codex cannot be installed.
func newCodexEnv(t *testing.T, script string) *env {
	t.Helper()
	codexCache := installedHarness(t, "codex")
	e := newEnv(t, script)
	// Codex speaks the OpenAI Responses API: the server's default provider is OpenAI's, pointed at
	// the scripted server (which speaks every format), with its default model (priced).
	e.extra = append(e.extra, harness.CacheEnv+"="+codexCache, "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL="+e.model.URL()+"/v1",
		"AGENTRUN_DEFAULT_PROVIDER=openai")
	return e
}

const codexHarnessScript = `
entries:
  - name: notes
    match: "Ask me which region"
    turns:
      - text: "I'll ask which region."
        tool_calls:
          - name: ask_person
            input: {question: "Which region should I cover?"}
      - tool_calls:
          - name: write
            input: {path: region.md, content: "# {{last_tool_result}}\n\nNotes about {{last_tool_result}}.\n"}
      - text: "I wrote region.md."
  - name: careful
    match: "Count carefully"
    turns:
      - text: "I need to count this once."
        tool_calls:
          - name: write
            input: {path: "secret.txt", content: "leak"}
      - tool_calls:
          - name: dev_count
            input: {label: "careful"}
      - text: "counted"
  - name: crash
    match: "Crash test"
    turns:
      - tool_calls:
          - name: dev_count
            input: {label: "crash"}
      - tool_calls:
          - name: write
            input: {path: "after.txt", content: "done"}
      - text: "finished"
  - name: keep
    match: "Keep talking"
    turns:
      - text: "first answer"
      - text: "second answer: {{last_user}}"
  - name: hello
    match: "Say hello"
    turns:
      - text: "hello from the scripted model"
  - name: slow
    match: "Be slow"
    turns:
      - text: "too late"
        latency: 60s
`

// codexAgent creates an agent running codex with tools and extra spec fields.
func (e *env) codexAgent(name, tools, extra string) {
	e.t.Helper()
	body := fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"harness":"codex","tools":%s%s}}`, name, tools, extra)
	if st := e.do("PUT", "/v2/agents/"+name, body, nil); st != 201 {
		e.t.Fatalf("create agent %s: HTTP %d", name, st)
	}
}

// The seed's quickstart, unchanged but for "harness": "codex" in the agent: exit 8 while it asks
// which region, runs message, exit 0, runs read-file region.md. Each scripted model turn reaches
// the scripted server once, though codex was started twice (the run parked on the question and the
// second start replayed the first call from the journal), and status.turns and status.cost read as
// for builtin.
func TestCodexQuickstart(t *testing.T) {
	t.Parallel()
	needBwrap(t) // the seed's agent has a sandbox: its computer is the first step
	e := newCodexEnv(t, codexHarnessScript)
	e.start()
	work := t.TempDir()
	script := strings.Replace(seedQuickstart, `{"definition": {"id": "notes",`, `{"definition": {"id": "notes", "harness": "codex",`, 1)
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = work
	cmd.Env = append(e.baseEnv(), "PATH="+filepath.Dir(binPath)+":"+os.Getenv("PATH"))
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
	for _, r := range e.listRuns() {
		run = r
	}
	final := e.getRun(run)
	if final.Status.Phase != api.PhaseSucceeded || final.Status.Answer == nil || final.Status.Answer.Preview != "I wrote region.md." {
		t.Fatalf("run %s: %s %s %+v", run, final.Status.Phase, final.Status.Message, final.Status.Answer)
	}
	for turn := 0; turn < 3; turn++ {
		if n := e.model.CountTurn("notes", turn); n != 1 {
			t.Errorf("scripted turn %d reached the model server %d times, want 1", turn, n)
		}
	}
	var keys []string
	for _, s := range e.steps(run) {
		keys = append(keys, s.Key)
		if s.Kind == "model" && !strings.Contains(s.Title, "via codex") {
			t.Errorf("model step %s does not name the harness: %q", s.Key, s.Title)
		}
	}
	// The seed's agent has a sandbox (its default computer), which the harness runs in: the
	// computer is made before the harness starts.
	if want := "computer t0/model t0/tool/0 t1/model t1/tool/0 t2/model"; strings.Join(keys, " ") != want {
		t.Errorf("steps = %v, want %s", keys, want)
	}
	// OpenAI's provider is not routed: the agent's model (the provider's default) answers.
	if tr := final.Status.Turns; len(tr) != 1 || tr[0].ModelCalls != 3 || tr[0].Model != "gpt-4.1" || tr[0].ChosenBy != "agent" || tr[0].InputTokens == 0 {
		t.Errorf("turns = %+v", tr)
	}
	if c := final.Status.Cost; c == nil || c.TotalUSD == "" || c.TotalUSD == "0.00" || strings.Contains(c.TotalUSD, "unknown") {
		t.Errorf("cost = %+v", c)
	}
	// Codex asks for no output limit of its own: the gateway sets the agent's and says so once.
	clamped := false
	for _, ev := range e.events(run) {
		clamped = clamped || ev.Type == "gateway.clamped"
	}
	if clamped {
		t.Errorf("a gateway.clamped event, though codex asked for no limit above the agent's")
	}
	noHarnessLeft(t, e.dir, 10*time.Second)
}

// A tool call the server's deny set refuses is answered to codex without running; one that asks
// parks the run in Waiting/Approval with its arguments until a person approves, then runs once.
func TestCodexApprovalAndDeny(t *testing.T) {
	t.Parallel()
	e := newCodexEnv(t, codexHarnessScript)
	e.startWith([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug", "--deny", "write(secret*)"})
	e.codexAgent("careful", `["write","dev_count"]`, `,"approvals":{"default":"allow","rules":[{"match":"dev_count","action":"ask"}]}`)
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"c1"},"spec":{"agent":"careful","input":"Count carefully: one"}}`, nil)
	r := e.waitPhase("c1", 60*time.Second, api.PhaseWaiting, api.PhaseFailed)
	if r.Status.Reason != api.ReasonApproval || r.Status.WaitingOn == nil || !strings.Contains(r.Status.WaitingOn.Detail, `"label":"careful"`) {
		t.Fatalf("run is %s %s (%s) waiting on %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.WaitingOn)
	}
	e.mustCLI(8, "runs", "wait", "c1")
	if _, err := os.Stat(filepath.Join(e.dir, "runs", "c1", "secret.txt")); err == nil {
		t.Errorf("the denied write ran")
	}
	if n := len(e.counted()); n != 0 {
		t.Fatalf("dev_count ran %d times before approval", n)
	}
	var list struct {
		Items []struct {
			ID    int64
			Tool  string
			State string
		}
	}
	res := e.mustCLI(0, "runs", "approvals", "c1", "-o", "json")
	if err := jsonUnmarshal(res.stdout, &list); err != nil || len(list.Items) != 2 || list.Items[0].State != "denied" || list.Items[1].State != "pending" {
		t.Fatalf("approvals = %s (%v)", res.stdout, err)
	}
	noHarnessLeft(t, e.dir, 10*time.Second) // a parked run keeps no harness running
	// CODEX_HOME is the run's harness home in the data folder (kept while the run waits), and the
	// gateway token is in no file there.
	conf, err := os.ReadFile(filepath.Join(e.dir, "harness-home", "c1", "codex", "config.toml"))
	if err != nil || !strings.Contains(string(conf), `wire_api = "responses"`) || strings.Contains(string(conf), "agr_") {
		t.Errorf("codex config.toml: %v\n%s", err, conf)
	}
	if r := e.cliIn(e.dir, "correct horse battery\n", "login", "--setup-code", e.setupCode(), "--password-stdin"); r.code != 0 {
		t.Fatalf("login: exit %d %q", r.code, r.stderr)
	}
	e.mustCLI(0, "runs", "approve", "c1", jsonNumber(list.Items[1].ID))
	e.mustCLI(0, "runs", "wait", "c1")
	if got := e.counted(); !slices.Equal(got, []string{"careful"}) {
		t.Errorf("dev_count ran %v, want once", got)
	}
	for turn := 0; turn < 3; turn++ {
		if n := e.model.CountTurn("careful", turn); n != 1 {
			t.Errorf("scripted turn %d reached the model server %d times, want 1", turn, n)
		}
	}
	if a := e.getRun("c1").Status.Answer; a == nil || a.Preview != "counted" {
		t.Errorf("answer = %+v", a)
	}
}

// A cap too small for the first call's worst case parks the run MaxCostReached with neededUSD;
// raising the cap to it lets it finish.
func TestCodexCapPause(t *testing.T) {
	t.Parallel()
	e := newCodexEnv(t, codexHarnessScript)
	e.start()
	e.codexAgent("hi", `["write"]`, "")
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"cap1"},"spec":{"agent":"hi","input":"Say hello","maxCostUSD":"0.02"}}`, nil)
	r := e.waitPhase("cap1", 60*time.Second, api.PhaseWaiting, api.PhaseFailed, api.PhaseSucceeded)
	if r.Status.Reason != api.ReasonMaxCostReached || r.Status.Cost == nil || r.Status.Cost.NeededUSD == "" {
		t.Fatalf("run is %s %s (%s), cost %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Cost)
	}
	if n := e.model.CountTurn("hello", 0); n != 0 {
		t.Fatalf("the capped call reached the model server %d times", n)
	}
	e.mustCLI(0, "runs", "raise-cap", "cap1", r.Status.Cost.NeededUSD)
	r = e.waitPhase("cap1", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "hello from the scripted model" {
		t.Fatalf("after raise-cap: %s %s %+v", r.Status.Phase, r.Status.Message, r.Status.Answer)
	}
}

// SIGKILL mid model call, then right after a tool call, then start again: the run finishes, no
// scripted turn reaches the model server twice and the counting tool ran once. A tool call cut off
// after its intent parks NeedsResolution naming it; retry runs it once. No codex outlives its
// runner.
func TestCodexCrashReplay(t *testing.T) {
	t.Parallel()
	e := newCodexEnv(t, codexHarnessScript)
	e.start("AGENTRUN_DEV_PAUSE_AT=after-intent:t1/model")
	e.codexAgent("crasher", `["write","dev_count"]`, "")
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"k1"},"spec":{"agent":"crasher","input":"Crash test one"}}`, nil)
	e.waitStderr("AGENTRUN_DEV_PAUSED after-intent t1/model", 60*time.Second)
	e.kill()
	noHarnessLeft(t, e.dir, 10*time.Second)
	e.start("AGENTRUN_DEV_PAUSE_AT=after-result:t1/tool/0")
	e.waitStderr("AGENTRUN_DEV_PAUSED after-result t1/tool/0", 60*time.Second)
	e.kill()
	noHarnessLeft(t, e.dir, 10*time.Second)
	e.start()
	r := e.waitPhase("k1", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "finished" {
		t.Fatalf("k1: %s %s %+v", r.Status.Phase, r.Status.Message, r.Status.Answer)
	}
	if got := e.counted(); !slices.Equal(got, []string{"crash"}) {
		t.Errorf("dev_count ran %v, want once", got)
	}
	for turn := 0; turn < 3; turn++ {
		if n := e.model.CountTurn("crash", turn); n != 1 {
			t.Errorf("scripted turn %d reached the model server %d times, want 1", turn, n)
		}
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, "runs", "k1", "after.txt")); err != nil || string(b) != "done" {
		t.Errorf("after.txt = %q, %v", b, err)
	}

	// Cut off after the tool call's intent: uncertain, so a person decides.
	e.kill()
	e.start("AGENTRUN_DEV_PAUSE_AT=after-intent:t0/tool/0")
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"k2"},"spec":{"agent":"crasher","input":"Crash test two"}}`, nil)
	e.waitStderr("AGENTRUN_DEV_PAUSED after-intent t0/tool/0", 60*time.Second)
	e.kill()
	noHarnessLeft(t, e.dir, 10*time.Second)
	e.start()
	r = e.waitPhase("k2", 60*time.Second, api.PhaseNeedsResolution, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseNeedsResolution || r.Status.WaitingOn == nil || r.Status.WaitingOn.StepKey != "t0/tool/0" {
		t.Fatalf("k2: %s %s %+v", r.Status.Phase, r.Status.Message, r.Status.WaitingOn)
	}
	e.mustCLI(0, "runs", "resolve", "k2", "--retry")
	r = e.waitPhase("k2", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("k2 after retry: %s %s", r.Status.Phase, r.Status.Message)
	}
	if got := e.counted(); !slices.Equal(got, []string{"crash", "crash"}) {
		t.Errorf("dev_count ran %v, want once per run", got)
	}
}

// A keep-alive run's message is codex's next user turn: codex, stopped while the run waited, is
// started again, replays the first turn from the journal and answers the second.
func TestCodexKeepAlive(t *testing.T) {
	t.Parallel()
	e := newCodexEnv(t, codexHarnessScript)
	e.start()
	e.codexAgent("talker", `["write"]`, "")
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"ka"},"spec":{"agent":"talker","input":"Keep talking","keepAlive":true}}`, nil)
	r := e.waitPhase("ka", 60*time.Second, api.PhaseWaiting, api.PhaseFailed)
	if r.Status.Reason != api.ReasonMessage || r.Status.Answer == nil || r.Status.Answer.Preview != "first answer" {
		t.Fatalf("after the first turn: %s %s %s %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer)
	}
	e.mustCLI(0, "agentrun", "send", "ka", "and more", "--key", "k1")
	deadline := time.Now().Add(60 * time.Second)
	for {
		r = e.getRun("ka")
		if a := r.Status.Answer; a != nil && a.Preview == "second answer: and more" && r.Status.Phase == api.PhaseWaiting {
			break
		}
		if time.Now().After(deadline) || r.Status.Phase == api.PhaseFailed {
			t.Fatalf("after the message: %s %s %+v", r.Status.Phase, r.Status.Message, r.Status.Answer)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for turn := 0; turn < 2; turn++ {
		if n := e.model.CountTurn("keep", turn); n != 1 {
			t.Errorf("scripted turn %d reached the model server %d times, want 1", turn, n)
		}
	}
	if len(r.Status.Turns) != 2 {
		t.Errorf("turns = %+v, want one per prompt", r.Status.Turns)
	}
}

// Cancelling a run whose codex waits on a model call ends the run and kills codex at once.
func TestCodexCancel(t *testing.T) {
	t.Parallel()
	e := newCodexEnv(t, codexHarnessScript)
	e.start()
	e.codexAgent("slow", `["write"]`, "")
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"s1"},"spec":{"agent":"slow","input":"Be slow"}}`, nil)
	deadline := time.Now().Add(60 * time.Second)
	for e.model.CountTurn("slow", 0) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("codex never called the model: %+v", e.getRun("s1").Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(harnessProcs(e.dir)) == 0 {
		t.Fatalf("no codex process while the run works")
	}
	e.mustCLI(0, "cancel", "agentrun/s1")
	r := e.waitPhase("s1", 20*time.Second, api.PhaseCancelled)
	if r.Status.Reason != api.ReasonUserCancelled {
		t.Errorf("cancelled with %s", r.Status.Reason)
	}
	noHarnessLeft(t, e.dir, 10*time.Second)
}
