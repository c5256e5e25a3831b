package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/harness"
	"agentrun.dev/agentrun/internal/model/fake"
)

// Codex on a server whose only model access is Anthropic's (the seed's quickstart setup:
// ANTHROPIC_API_KEY, here pointed at the scripted model server): the gateway translates each of
// Codex's Responses calls to the Messages API and each Anthropic answer back. The scripted server
// sees Anthropic calls only, with our MCP tools named mcp__agentrun__TOOL (Codex's namespace
// flattened), so the scripts name them so.

// newCodexAnthropicEnv is newEnv (ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL only) with codex in the
// harness cache; it skips, saying why, when codex cannot be installed.
func newCodexAnthropicEnv(t *testing.T, script string) *env {
	t.Helper()
	cache := installedHarness(t, "codex")
	e := newEnv(t, script)
	e.extra = append(e.extra, harness.CacheEnv+"="+cache)
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
	anthropicOnly(t, e.model.Calls())
	var keys []string
	for _, s := range e.steps(run) {
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
	for _, ev := range e.events(run) {
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
	noHarnessLeft(t, e.dir, 10*time.Second)
}

// SIGKILL after a translated model call's intent (the call not yet sent), then right after a
// tool call, and start again: the run finishes, no scripted turn reaches the server twice, the
// counting tool ran once, and the restarted codex, answered from the journal's Anthropic bytes
// translated again, sends the same requests (no ReplayDiverged).
func TestCodexAnthropicCrashReplay(t *testing.T) {
	t.Parallel()
	e := newCodexAnthropicEnv(t, codexAnthropicScript)
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
		t.Fatalf("k1: %s %s %s %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer)
	}
	if got := e.counted(); !slices.Equal(got, []string{"crash"}) {
		t.Errorf("dev_count ran %v, want once", got)
	}
	for turn := 0; turn < 3; turn++ {
		if n := e.model.CountTurn("crash", turn); n != 1 {
			t.Errorf("scripted turn %d reached the model server %d times, want 1", turn, n)
		}
	}
	anthropicOnly(t, e.model.Calls())
	if b, err := os.ReadFile(filepath.Join(e.dir, "runs", "k1", "after.txt")); err != nil || string(b) != "done" {
		t.Errorf("after.txt = %q, %v", b, err)
	}
	said := 0
	for _, ev := range e.events("k1") {
		if ev.Type == api.EventGatewayTranslated {
			said++
		}
	}
	if said != 1 {
		t.Errorf("gateway.translated %d times over three drives, want once", said)
	}
}
