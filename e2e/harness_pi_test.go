package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/harness"
)

// The pi harness against the real `pi` CLI at the pinned version (from AGENTRUN_HARNESS_CACHE, or
// installed from npm once into it) and the scripted model server. pi sees our tools under their
// own names (its extension registers them), so the scripts name them plainly.

// harnessInstalls holds, per driver name, the one install of its pinned package for this test
// process.
var harnessInstalls sync.Map

type harnessInstall struct {
	once        sync.Once
	cache, skip string
}

// installedHarness returns the harness cache folder holding driver name's pinned package (the
// cache AGENTRUN_HARNESS_CACHE names, which .ci/run fills, or a shared temporary one), installing
// it with npm the first time this test process asks; the test skips, saying why, when it cannot
// be installed.
func installedHarness(t *testing.T, name string) string {
	t.Helper()
	v, _ := harnessInstalls.LoadOrStore(name, &harnessInstall{})
	h := v.(*harnessInstall)
	h.once.Do(func() { h.cache, h.skip = cachedHarness(t, name) })
	if h.skip != "" {
		t.Skip(h.skip)
	}
	return h.cache
}

// cachedHarness installs driver name's pinned package into the cache unless it is there; skip
// says why it cannot be.
func cachedHarness(t *testing.T, name string) (cache, skip string) {
	cache = os.Getenv(harness.CacheEnv)
	if cache == "" {
		cache = filepath.Join(os.TempDir(), "agentrun-harness-cache")
	}
	d, _ := harness.Lookup(name)
	os.Setenv(harness.CacheEnv, cache) // the test process looks there too (Installed)
	_, err := harness.InstallTo(t.Context(), cache, d.Package(), func(msg string) { t.Log(msg) })
	if _, ok := harness.Installed(t.TempDir(), d.Package()); !ok {
		return "", fmt.Sprintf("%s cannot be installed with npm here (%v): skipping the %s tests", d.Package().Spec(), err, name)
	}
	return cache, ""
}

// runnerChildren lists the processes still running whose environment has a HOME in the data
// folder's harness-home: every harness gets one there. (pi sets its process title, which
// overwrites its command line, so the command line cannot tell.)
func runnerChildren(dir string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, en := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", en.Name(), "environ"))
		if err != nil || !bytes.Contains(b, []byte("HOME="+filepath.Join(dir, "harness-home"))) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", en.Name(), "cmdline"))
		out = append(out, en.Name()+": "+string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
	}
	return out
}

// noneLeft waits until no process of the harness is left in the data folder.
func (h harnessCase) noneLeft(t *testing.T, dir string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		p := h.procs(dir)
		if len(p) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s processes still running: %v", h.name, p)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// harnessCase is one harness the shared tests below run: its name, the prefix its model gives
// our tools' names, and how its processes are found.
type harnessCase struct {
	name, prefix string
	procs        func(dir string) []string
}

var piCase = harnessCase{name: "pi", procs: runnerChildren}

// script is harnessScript with the harness's tool names.
func (h harnessCase) script() string { return strings.ReplaceAll(harnessScript, "TOOL_", h.prefix) }

// newPiEnv is newEnv with the harness cache (holding pi) given to the server.
func newPiEnv(t *testing.T) *env {
	t.Helper()
	cache := installedHarness(t, "pi")
	e := newEnv(t, piCase.script())
	e.extra = append(e.extra, harness.CacheEnv+"="+cache)
	return e
}

const harnessScript = `
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
          - name: TOOL_ask_person
            input: {question: "Which region should I cover?"}
      - tool_calls:
          - name: TOOL_write
            input: {path: region.md, content: "# {{last_tool_result}}\n\nNotes about {{last_tool_result}}.\n"}
      - text: "I wrote region.md."
  - name: careful
    match: "Count carefully"
    turns:
      - text: "I need to count this once."
        tool_calls:
          - name: TOOL_write
            input: {path: "secret.txt", content: "leak"}
      - tool_calls:
          - name: TOOL_dev_count
            input: {label: "careful"}
      - text: "counted"
  - name: crash
    match: "Crash test"
    turns:
      - tool_calls:
          - name: TOOL_dev_count
            input: {label: "crash"}
      - tool_calls:
          - name: TOOL_write
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

// The seed's quickstart, unchanged but for "harness": "pi" in the agent: exit 8 while it asks
// which region, runs message, exit 0, runs read-file region.md. pi was started twice (the run
// parked on the question), and each scripted model turn reached the scripted server once: the
// second start was answered from the journal.
func TestPiQuickstart(t *testing.T) {
	t.Parallel()
	needBwrap(t) // the seed's agent has a sandbox: its computer is the first step
	harnessQuickstart(t, newPiEnv(t), piCase)
}

func harnessQuickstart(t *testing.T, e *env, h harnessCase) {
	e.start()
	work := t.TempDir()
	script := strings.Replace(seedQuickstart, `{"definition": {"id": "notes",`, `{"definition": {"id": "notes", "harness": "`+h.name+`",`, 1)
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
	if !strings.Contains(string(out), "# Europe\n\nNotes about Europe.\n") {
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
		if s.Kind == "model" && !strings.Contains(s.Title, "via "+h.name) {
			t.Errorf("model step %s does not name the harness: %q", s.Key, s.Title)
		}
	}
	// The seed's agent has a sandbox (its default computer), which the harness runs in: the
	// computer is made before the harness starts.
	if want := "computer t0/route t0/model t0/tool/0 t1/model t1/tool/0 t2/model"; strings.Join(keys, " ") != want {
		t.Errorf("steps = %v, want %s", keys, want)
	}
	if tr := final.Status.Turns; len(tr) != 1 || tr[0].ModelCalls != 3 || tr[0].Family != "sonnet" || tr[0].ChosenBy != "jev" || tr[0].InputTokens == 0 {
		t.Errorf("turns = %+v", tr)
	}
	if c := final.Status.Cost; c == nil || c.TotalUSD == "" || c.TotalUSD == "0.00" || strings.Contains(c.TotalUSD, "unknown") {
		t.Errorf("cost = %+v", c)
	}
	h.noneLeft(t, e.dir, 10*time.Second)
}

// A write the server's deny set refuses is answered to pi as an error without running; a
// dev_count that asks parks the run in Waiting/Approval with its arguments until a person
// approves, then runs once.
func TestPiApprovalAndDeny(t *testing.T) {
	t.Parallel()
	harnessApprovalAndDeny(t, newPiEnv(t), piCase)
}

func harnessApprovalAndDeny(t *testing.T, e *env, h harnessCase) {
	e.startWith([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug", "--deny", "write(secret*)"})
	agent := `{"metadata":{"name":"careful"},"spec":{"harness":"` + h.name + `","tools":["write","dev_count"],
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

// A cap too small for the first call's worst case parks the run MaxCostReached with neededUSD
// before anything reaches the model server; raising the cap to it lets it finish.
func TestPiCapPause(t *testing.T) {
	t.Parallel()
	harnessCapPause(t, newPiEnv(t), piCase)
}

func harnessCapPause(t *testing.T, e *env, h harnessCase) {
	e.start()
	if st := e.do("PUT", "/v2/agents/hi", `{"metadata":{"name":"hi"},"spec":{"harness":"`+h.name+`","tools":["write"]}}`, nil); st != 201 {
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
// after its intent parks NeedsResolution naming it; retry runs it once. No pi outlives its runner.
func TestPiCrashReplay(t *testing.T) {
	t.Parallel()
	harnessCrashReplay(t, newPiEnv(t), piCase)
}

func harnessCrashReplay(t *testing.T, e *env, h harnessCase) {
	e.start("AGENTRUN_DEV_PAUSE_AT=after-intent:t1/model")
	if st := e.do("PUT", "/v2/agents/crasher", `{"metadata":{"name":"crasher"},"spec":{"harness":"`+h.name+`","tools":["write","dev_count"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"k1"},"spec":{"agent":"crasher","input":"Crash test one"}}`, nil)
	e.waitStderr("AGENTRUN_DEV_PAUSED after-intent t1/model", 60*time.Second)
	e.kill()
	h.noneLeft(t, e.dir, 10*time.Second)
	e.start("AGENTRUN_DEV_PAUSE_AT=after-result:t1/tool/0")
	e.waitStderr("AGENTRUN_DEV_PAUSED after-result t1/tool/0", 60*time.Second)
	e.kill()
	h.noneLeft(t, e.dir, 10*time.Second)
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
	h.noneLeft(t, e.dir, 10*time.Second)
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

// A keep-alive run's message is pi's next user turn: pi, stopped while the run waited, is started
// again, replays the first turn from the journal and answers the second.
func TestPiKeepAlive(t *testing.T) {
	t.Parallel()
	harnessKeepAlive(t, newPiEnv(t), piCase)
}

func harnessKeepAlive(t *testing.T, e *env, h harnessCase) {
	e.start()
	if st := e.do("PUT", "/v2/agents/talker", `{"metadata":{"name":"talker"},"spec":{"harness":"`+h.name+`","tools":["write"]}}`, nil); st != 201 {
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
		if r.Status.Answer != nil && r.Status.Answer.Preview == "second answer: and more" && r.Status.Phase == api.PhaseWaiting {
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
	h.noneLeft(t, e.dir, 10*time.Second)
}

// Cancelling a run whose pi waits on a model call ends the run and kills pi at once.
func TestPiCancel(t *testing.T) {
	t.Parallel()
	harnessCancel(t, newPiEnv(t), piCase)
}

func harnessCancel(t *testing.T, e *env, h harnessCase) {
	e.start()
	if st := e.do("PUT", "/v2/agents/slow", `{"metadata":{"name":"slow"},"spec":{"harness":"`+h.name+`","tools":["write"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"s1"},"spec":{"agent":"slow","input":"Be slow"}}`, nil)
	deadline := time.Now().Add(60 * time.Second)
	for e.model.CountTurn("slow", 0) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s never called the model: %+v", h.name, e.getRun("s1").Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(h.procs(e.dir)) == 0 {
		t.Fatalf("no %s process while the run works", h.name)
	}
	e.mustCLI(0, "cancel", "agentrun/s1")
	r := e.waitPhase("s1", 20*time.Second, api.PhaseCancelled)
	if r.Status.Reason != api.ReasonUserCancelled {
		t.Errorf("cancelled with %s", r.Status.Reason)
	}
	h.noneLeft(t, e.dir, 10*time.Second)
}
