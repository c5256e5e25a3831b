package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
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

// The claude-agent harness against the real `claude` CLI at the pinned version, installed from npm
// once into a shared cache (AGENTRUN_HARNESS_CACHE when set, as .ci/run sets it), and the scripted
// model server. Claude Code sees our tools as mcp__agentrun__NAME, so the scripts name them so.

// claudeHarness returns the harness cache folder holding the pinned claude-code (see
// installedHarness).
func claudeHarness(t *testing.T) string { return installedHarness(t, "claude-agent") }

// newClaudeEnv is newEnv with the harness cache given to the server.
func newClaudeEnv(t *testing.T, script string) *env {
	cache := claudeHarness(t)
	e := newEnv(t, script)
	e.extra = append(e.extra, harness.CacheEnv+"="+cache)
	return e
}

// harnessProcs lists the processes still running whose command line names the data folder (the
// harness gets its MCP config from DATA/harness-home/RUN).
func harnessProcs(dir string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, en := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", en.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(filepath.Join(dir, "harness-home"))) {
			continue
		}
		out = append(out, en.Name()+": "+string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
	}
	return out
}

// noHarnessLeft waits until no harness process of the data folder is left.
func noHarnessLeft(t *testing.T, dir string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		p := harnessProcs(dir)
		if len(p) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("harness processes still running: %v", p)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const claudeScript = `
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
      - tool_calls:
          - name: mcp__agentrun__write
            input: {path: "secret.txt", content: "leak"}
      - text: "I need to count this once."
        tool_calls:
          - name: mcp__agentrun__dev_count
            input: {label: "careful"}
      - text: "counted"
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
  - name: hello
    match: "Say hello"
    turns:
      - text: "hello from the scripted model"
  - name: keep
    match: "Keep talking"
    turns:
      - text: "first answer"
      - text: "second answer: {{last_user}}"
  - name: slow
    match: "Be slow"
    turns:
      - text: "too late"
        latency: 60s
`

// The seed's quickstart, unchanged but for "harness": "claude-agent" in the agent: exit 8 while it
// asks which region, runs message, exit 0, runs read-file region.md. Each scripted model turn
// reaches the scripted server once, though the harness was started twice (the run parked on the
// question and the second start replayed the first call from the journal).
func TestClaudeQuickstart(t *testing.T) {
	t.Parallel()
	needBwrap(t) // the seed's agent has a sandbox: its computer is the first step
	e := newClaudeEnv(t, claudeScript)
	e.start()
	work := t.TempDir()
	script := strings.Replace(seedQuickstart, `{"definition": {"id": "notes",`, `{"definition": {"id": "notes", "harness": "claude-agent",`, 1)
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
	// Claude Code appends a <system-reminder> to each tool result, which the script's template
	// copies along: the region is what the person answered.
	if !strings.Contains(string(out), "# Europe") || !strings.Contains(string(out), "Notes about Europe") {
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
		if s.Kind == "model" && !strings.Contains(s.Title, "via claude-agent") {
			t.Errorf("model step %s does not name the harness: %q", s.Key, s.Title)
		}
	}
	// The seed's agent has a sandbox (its default computer), which the harness runs in: the
	// computer is made before the harness starts.
	if want := "computer t0/route t0/model t0/tool/0 t1/model t1/tool/0 t2/model"; strings.Join(keys, " ") != want {
		t.Errorf("steps = %v, want %s", keys, want)
	}
	// status.turns and status.cost read as for builtin: one routed turn, three calls, priced.
	if tr := final.Status.Turns; len(tr) != 1 || tr[0].ModelCalls != 3 || tr[0].Family != "sonnet" || tr[0].ChosenBy != "jev" || tr[0].InputTokens == 0 {
		t.Errorf("turns = %+v", tr)
	}
	if c := final.Status.Cost; c == nil || c.TotalUSD == "" || c.TotalUSD == "0.00" || strings.Contains(c.TotalUSD, "unknown") {
		t.Errorf("cost = %+v", c)
	}
	noHarnessLeft(t, e.dir, 10*time.Second)
	// Removed once the drive has stopped the harness, just after the run's last write.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := os.Stat(filepath.Join(e.dir, "harness-home", run))
		if os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the finished run's harness home is still there (%v)", err)
			break
		}
	}
}

// listRuns names the runs in the store.
func (e *env) listRuns() []string {
	var out struct{ Items []api.AgentRun }
	e.do("GET", "/v2/agentruns", nil, &out)
	var names []string
	for _, r := range out.Items {
		names = append(names, r.Metadata.Name)
	}
	return names
}

// A tool call the server's deny set refuses is answered to the harness without running; one that
// asks parks the run in Waiting/Approval with its arguments until a person approves, then runs once.
func TestClaudeApprovalAndDeny(t *testing.T) {
	t.Parallel()
	e := newClaudeEnv(t, claudeScript)
	e.startWith([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug", "--deny", "write(secret*)"})
	agent := `{"metadata":{"name":"careful"},"spec":{"harness":"claude-agent","tools":["write","dev_count"],
  "approvals":{"default":"allow","rules":[{"match":"dev_count","action":"ask"}]}}}`
	if st := e.do("PUT", "/v2/agents/careful", agent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"c1"},"spec":{"agent":"careful","input":"Count carefully: one"}}`, nil)
	r := e.waitPhase("c1", 60*time.Second, api.PhaseWaiting, api.PhaseFailed)
	if r.Status.Reason != api.ReasonApproval || r.Status.WaitingOn == nil || !strings.Contains(r.Status.WaitingOn.Detail, `"label":"careful"`) {
		t.Fatalf("run is %s %s (%s) waiting on %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.WaitingOn)
	}
	e.mustCLI(8, "runs", "wait", "c1")
	if _, err := os.Stat(filepath.Join(e.dir, "runs", "c1", "secret.txt")); err == nil {
		t.Errorf("the denied write ran")
	}
	if res := e.toolResults("c1")["t0/tool/0"]; res.Content != "" {
		t.Errorf("the denied write has a tool result %q", res.Content)
	}
	if n := len(e.counted()); n != 0 {
		t.Fatalf("dev_count ran %d times before approval", n)
	}
	var list struct {
		Items []struct {
			ID     int64
			Tool   string
			State  string
			Reason string
		}
	}
	res := e.mustCLI(0, "runs", "approvals", "c1", "-o", "json")
	if err := jsonUnmarshal(res.stdout, &list); err != nil || len(list.Items) != 2 || list.Items[0].State != "denied" || list.Items[1].State != "pending" {
		t.Fatalf("approvals = %s (%v)", res.stdout, err)
	}
	// The approval shows what the model said with the call, as for builtin.
	if list.Items[1].Reason != "I need to count this once." {
		t.Errorf("approval reason %q", list.Items[1].Reason)
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
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// A cap too small for the first call's worst case parks the run MaxCostReached with neededUSD;
// raising the cap to it lets it finish.
func TestClaudeCapPause(t *testing.T) {
	t.Parallel()
	e := newClaudeEnv(t, claudeScript)
	e.start()
	if st := e.do("PUT", "/v2/agents/hi", `{"metadata":{"name":"hi"},"spec":{"harness":"claude-agent","tools":["write"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
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
// after its intent parks NeedsResolution naming it; retry runs it once. No harness outlives its
// runner.
func TestClaudeCrashReplay(t *testing.T) {
	t.Parallel()
	e := newClaudeEnv(t, claudeScript)
	e.start("AGENTRUN_DEV_PAUSE_AT=after-intent:t1/model")
	if st := e.do("PUT", "/v2/agents/crasher", `{"metadata":{"name":"crasher"},"spec":{"harness":"claude-agent","tools":["write","dev_count"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
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

// Cancelling a run whose harness waits on a model call ends the run and kills the harness at once.
func TestClaudeCancel(t *testing.T) {
	t.Parallel()
	e := newClaudeEnv(t, claudeScript)
	e.start()
	if st := e.do("PUT", "/v2/agents/slow", `{"metadata":{"name":"slow"},"spec":{"harness":"claude-agent","tools":["write"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"s1"},"spec":{"agent":"slow","input":"Be slow"}}`, nil)
	deadline := time.Now().Add(60 * time.Second)
	for e.model.CountTurn("slow", 0) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the harness never called the model: %+v", e.getRun("s1").Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(harnessProcs(e.dir)) == 0 {
		t.Fatalf("no harness process while the run works")
	}
	e.mustCLI(0, "cancel", "agentrun/s1")
	r := e.waitPhase("s1", 20*time.Second, api.PhaseCancelled)
	if r.Status.Reason != api.ReasonUserCancelled {
		t.Errorf("cancelled with %s", r.Status.Reason)
	}
	noHarnessLeft(t, e.dir, 10*time.Second)
}

// An unknown harness is refused naming the ones this server runs.
func TestUnknownHarnessRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, claudeScript)
	e.start()
	var perr api.Error
	st := e.do("PUT", "/v2/agents/x", `{"metadata":{"name":"x"},"spec":{"harness":"nope"}}`, &perr)
	if st != 422 || perr.Field != "spec.harness" || !strings.Contains(perr.Message, `harness "nope" is not available on this server (available: builtin, claude-agent`) {
		t.Fatalf("HTTP %d %+v", st, perr)
	}
	res := e.mustCLI(0, "server", "capabilities")
	if !strings.Contains(res.stdout, `"claude-agent"`) || !strings.Contains(res.stdout, harness.ClaudeVersion) {
		t.Errorf("capabilities do not list claude-agent %s:\n%s", harness.ClaudeVersion, res.stdout)
	}
}

// A keep-alive run's message is the harness's next user turn: the harness, stopped while the run
// waited, is started again, replays the first turn from the journal and answers the second.
func TestClaudeKeepAlive(t *testing.T) {
	t.Parallel()
	e := newClaudeEnv(t, claudeScript)
	e.start()
	if st := e.do("PUT", "/v2/agents/talker", `{"metadata":{"name":"talker"},"spec":{"harness":"claude-agent","tools":["write"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"ka"},"spec":{"agent":"talker","input":"Keep talking","keepAlive":true}}`, nil)
	r := e.waitPhase("ka", 60*time.Second, api.PhaseWaiting, api.PhaseFailed)
	if r.Status.Reason != api.ReasonMessage || r.Status.Answer == nil || r.Status.Answer.Preview != "first answer" {
		t.Fatalf("after the first turn: %s %s %s %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer)
	}
	e.mustCLI(0, "agentrun", "send", "ka", "and more", "--key", "k1")
	deadline := time.Now().Add(60 * time.Second)
	for {
		r = e.getRun("ka")
		// Claude Code puts a <system-reminder> before the message's text, which {{last_user}} copies.
		if a := r.Status.Answer; a != nil && strings.HasPrefix(a.Preview, "second answer: ") && strings.HasSuffix(a.Preview, "and more") && r.Status.Phase == api.PhaseWaiting {
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
	noHarnessLeft(t, e.dir, 10*time.Second)
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
	e := newEnv(t, claudeScript)
	e.extra = append(e.extra, harness.CacheEnv+"="+broken)
	e.start()
	if st := e.do("PUT", "/v2/agents/h", `{"metadata":{"name":"h"},"spec":{"harness":"claude-agent","tools":["write"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"x1"},"spec":{"agent":"h","input":"Say hello"}}`, nil)
	r := e.waitPhase("x1", 30*time.Second, api.PhaseFailed, api.PhaseSucceeded)
	if r.Status.Reason != api.ReasonHarnessError || !strings.Contains(r.Status.Message, "boom: no such config") || !strings.Contains(r.Status.Message, "exit status 3") {
		t.Errorf("x1: %s %s", r.Status.Reason, r.Status.Message)
	}
	found := false
	for _, ev := range e.events("x1") {
		found = found || (ev.Type == "harness.exited" && strings.Contains(string(ev.Data), "boom: no such config"))
	}
	if !found {
		t.Errorf("no harness.exited event with the stderr lines")
	}
	e.kill()

	// No npm on PATH and an empty cache: the install cannot happen.
	e.extra = append(e.extra, harness.CacheEnv+"="+t.TempDir(), "PATH="+t.TempDir())
	e.start()
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"x2"},"spec":{"agent":"h","input":"Say hello"}}`, nil)
	r = e.waitPhase("x2", 30*time.Second, api.PhaseFailed, api.PhaseSucceeded)
	if r.Status.Reason != api.ReasonHarnessUnavailable || !strings.Contains(r.Status.Message, "npm") {
		t.Errorf("x2: %s %s", r.Status.Reason, r.Status.Message)
	}
	res := e.mustCLI(0, "server", "capabilities")
	if !strings.Contains(res.stdout, "npm is not on PATH") {
		t.Errorf("capabilities do not say why claude-agent cannot run:\n%s", res.stdout)
	}
	e.kill()

	// First use installs with the machine's npm at the pinned version, saying so on the timeline.
	// This npm is a script that records its arguments and installs a claude that fails at once.
	npmDir := t.TempDir()
	argsFile := filepath.Join(npmDir, "args")
	os.WriteFile(filepath.Join(npmDir, "npm"), []byte("#!/bin/sh\necho \"$@\" > "+argsFile+"\nmkdir -p node_modules/.bin\nprintf '#!/bin/sh\\necho installed-claude-ran >&2\\nexit 1\\n' > node_modules/.bin/claude\nchmod +x node_modules/.bin/claude\n"), 0o755)
	e.extra = append(e.extra, harness.CacheEnv+"="+t.TempDir(), "PATH="+npmDir+":/usr/bin:/bin")
	e.start()
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"x3"},"spec":{"agent":"h","input":"Say hello"}}`, nil)
	r = e.waitPhase("x3", 30*time.Second, api.PhaseFailed, api.PhaseSucceeded)
	if r.Status.Reason != api.ReasonHarnessError || !strings.Contains(r.Status.Message, "installed-claude-ran") {
		t.Errorf("x3: %s %s", r.Status.Reason, r.Status.Message)
	}
	args, _ := os.ReadFile(argsFile)
	if want := "install --no-audit --no-fund --no-package-lock --save-exact @anthropic-ai/claude-code@" + harness.ClaudeVersion; strings.TrimSpace(string(args)) != want {
		t.Errorf("npm ran with %q, want %q", args, want)
	}
	var msgs []string
	for _, ev := range e.events("x3") {
		if ev.Type == "harness.install" {
			msgs = append(msgs, ev.Message)
		}
	}
	if len(msgs) < 2 || !strings.HasPrefix(msgs[0], "installing @anthropic-ai/claude-code@"+harness.ClaudeVersion+" with npm into "+filepath.Join(e.dir, "harnesses", "claude-agent@"+harness.ClaudeVersion)) || !strings.HasPrefix(msgs[len(msgs)-1], "installed ") {
		t.Errorf("install events %q", msgs)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "harnesses", "claude-agent@"+harness.ClaudeVersion, "node_modules", ".bin", "claude")); err != nil {
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
	e := newClaudeEnv(t, claudeScript)
	e.start()
	// No computer: the harness runs on the runner and is given the gateway's own loopback address,
	// which this test then calls (inside a computer it is given a port forwarded there).
	if st := e.do("PUT", "/v2/agents/slow", `{"metadata":{"name":"slow"},"spec":{"harness":"claude-agent","computer":{"kind":"none"},"tools":["write"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"g1"},"spec":{"agent":"slow","input":"Be slow"}}`, nil)
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"g2"},"spec":{"agent":"slow","input":"Be slow"}}`, nil)
	mcp1, tok1 := mcpConf(t, e.dir, "g1")
	mcp2, tok2 := mcpConf(t, e.dir, "g2")
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
	e.mustCLI(0, "cancel", "agentrun/g1")
	e.waitPhase("g1", 20*time.Second, api.PhaseCancelled)
	if st := gatewayPost(t, msgs, tok1, "", small); st != 401 {
		t.Errorf("g1's token after g1 ended: HTTP %d", st)
	}
	// The token never reaches the timeline or the server's log.
	for _, ev := range e.events("g1") {
		if strings.Contains(ev.Message, tok1) || strings.Contains(string(ev.Data), tok1) {
			t.Errorf("event %s carries the token", ev.Type)
		}
	}
	if strings.Contains(e.stderr.String(), tok1) {
		t.Errorf("the server's log carries the token")
	}
	e.mustCLI(0, "cancel", "agentrun/g2")
}

// A restarted harness that sends another request than the journal recorded (here the run folder
// became a git repository while the run waited, which Claude Code's prompt says) parks the run
// NeedsResolution, reason ReplayDiverged, naming the step; it never carries on.
func TestClaudeReplayDiverged(t *testing.T) {
	t.Parallel()
	e := newClaudeEnv(t, claudeScript)
	e.start()
	if st := e.do("PUT", "/v2/agents/notes", `{"metadata":{"name":"notes"},"spec":{"harness":"claude-agent","tools":["write","ask_person"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"d1"},"spec":{"agent":"notes","input":"Ask me which region to cover, then write region.md about it."}}`, nil)
	r := e.waitPhase("d1", 60*time.Second, api.PhaseWaiting, api.PhaseFailed)
	if r.Status.Reason != api.ReasonQuestion {
		t.Fatalf("d1: %s %s %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	e.kill()
	if err := os.MkdirAll(filepath.Join(e.dir, "runs", "d1", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.start()
	e.mustCLI(0, "runs", "message", "d1", "--content", "Europe")
	r = e.waitPhase("d1", 60*time.Second, api.PhaseNeedsResolution, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Reason != api.ReasonReplayDiverged || r.Status.WaitingOn == nil || r.Status.WaitingOn.StepKey != "t0/model" {
		t.Fatalf("d1: %s %s %s %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.WaitingOn)
	}
	if n := e.model.CountTurn("notes", 0); n != 1 {
		t.Errorf("the diverged call reached the model server: turn 0 called %d times", n)
	}
}

// A model the price table lacks, allowed by allowUnpricedModels, runs on claude-agent with its
// cost unknown, as on builtin. Claude Code sends a model it does not know a mid-conversation
// system message (its environment block), which the scripted server, as the vendor, takes.
func TestClaudeUnpricedModel(t *testing.T) {
	t.Parallel()
	e := newClaudeEnv(t, claudeScript)
	e.start()
	if st := e.do("PUT", "/v2/agents/newer", `{"metadata":{"name":"newer"},"spec":{"harness":"claude-agent",
  "model":{"name":"claude-mystery-9"},"allowUnpricedModels":true,"tools":["write"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"u1"},"spec":{"agent":"newer","input":"Say hello"}}`, nil)
	r := e.waitPhase("u1", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseWaiting)
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
