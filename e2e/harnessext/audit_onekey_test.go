package harnessext

import (
	. "agentrun.dev/agentrun/e2e/e2etest"
	"encoding/json"
	"fmt"
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

// One model key for every harness (issue 24): a server whose only key is one vendor's, against a
// scripted server that serves only that vendor's paths (and answers any other with the vendor's
// own 404, as the real one does).

// oneKeyEnv is NewEnv with only vendor's key, its base URL the scripted server restricted to
// vendor's paths, and the harness cache holding name's CLI.
func oneKeyEnv(t *testing.T, name, vendor, script string) *Env {
	t.Helper()
	cache := InstalledHarness(t, name)
	e := NewEnv(t, script)
	e.Model.Only(vendor)
	base := fake.VendorBase(vendor, e.Model.URL())
	var keys []string
	switch vendor {
	case fake.VendorAnthropic:
		keys = []string{"ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL=" + base}
	case fake.VendorOpenAI:
		keys = []string{"OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=" + base}
	case fake.VendorOpenRouter:
		keys = []string{"OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL=" + base}
	}
	extra := keys
	for _, kv := range e.Extra {
		if !strings.HasPrefix(kv, "ANTHROPIC_") {
			extra = append(extra, kv)
		}
	}
	e.Extra = append(extra, harness.CacheEnv+"="+cache)
	return e
}

// oneKeyScript: the crash test's three turns (a counting tool, a write, an answer), TOOL_ the
// prefix the harness's model sees our tools under.
const oneKeyScript = `
entries:
  - name: router
    match: "Route this request"
    turns:
      - text: '{"family": "sonnet", "confidence": 0.9}'
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
`

// oneKeyCase is one harness on one vendor: the prefix its model sees our tools under and the
// format its calls reach the vendor in ("" when the server refuses to run it with that key).
type oneKeyCase struct {
	harness, vendor, prefix, format string
}

var oneKeyCases = []oneKeyCase{
	{"claude-agent", fake.VendorAnthropic, "mcp__agentrun__", fake.FormatAnthropic},
	{"claude-agent", fake.VendorOpenRouter, "mcp__agentrun__", fake.FormatAnthropic},
	{"claude-agent", fake.VendorOpenAI, "mcp__agentrun__", ""},
	{"codex", fake.VendorAnthropic, "mcp__agentrun__", fake.FormatAnthropic}, // translated
	{"codex", fake.VendorOpenAI, "", fake.FormatResponses},
	{"codex", fake.VendorOpenRouter, "", fake.FormatResponses},
	{"pi", fake.VendorAnthropic, "", fake.FormatAnthropic},
	{"pi", fake.VendorOpenAI, "", fake.FormatOpenAI},
	{"pi", fake.VendorOpenRouter, "", fake.FormatOpenAI},
	{"opencode", fake.VendorAnthropic, "agentrun_", fake.FormatAnthropic},
	{"opencode", fake.VendorOpenAI, "agentrun_", fake.FormatOpenAI},
	{"opencode", fake.VendorOpenRouter, "agentrun_", fake.FormatOpenAI},
}

// Every harness on each single key: the run calls a tool, is SIGKILLed right after it, and
// finishes on the next start (the completed calls answered from the journal byte for byte: each
// scripted turn reaches the vendor once, the counting tool ran once), every call in the wire the
// vendor serves (none refused), with usage read from the vendor's answers. Claude Code with only
// an OpenAI key (OpenAI serves no Messages API) fails HarnessUnavailable at once, saying which
// providers would run it, with nothing sent to the vendor.
func TestOneKeyEveryHarness(t *testing.T) {
	t.Parallel()
	for _, c := range oneKeyCases {
		t.Run(c.harness+"/"+c.vendor, func(t *testing.T) {
			t.Parallel()
			e := oneKeyEnv(t, c.harness, c.vendor, strings.ReplaceAll(oneKeyScript, "TOOL_", c.prefix))
			agent := `{"metadata":{"name":"one"},"spec":{"harness":"` + c.harness + `","tools":["write","dev_count"]}}`
			if c.format == "" {
				e.Start()
				if st := e.Do("PUT", "/v2/agents/one", agent, nil); st != 201 {
					t.Fatalf("create agent: HTTP %d", st)
				}
				e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"k1"},"spec":{"agent":"one","input":"Crash test one"}}`, nil)
				r := e.WaitPhase("k1", 60*time.Second, api.PhaseFailed, api.PhaseSucceeded)
				if r.Status.Phase != api.PhaseFailed || r.Status.Reason != api.ReasonHarnessUnavailable ||
					!strings.Contains(r.Status.Message, "Anthropic Messages") || !strings.Contains(r.Status.Message, "anthropic or openrouter") {
					t.Fatalf("run is %s %s: %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
				}
				if calls, refused := e.Model.Calls(), e.Model.Refused(); len(calls) != 0 || len(refused) != 0 {
					t.Errorf("the vendor was sent %+v, refused %q", calls, refused)
				}
				return
			}
			e.Start("AGENTRUN_DEV_PAUSE_AT=after-result:t0/tool/0")
			if st := e.Do("PUT", "/v2/agents/one", agent, nil); st != 201 {
				t.Fatalf("create agent: HTTP %d", st)
			}
			e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"k1"},"spec":{"agent":"one","input":"Crash test one"}}`, nil)
			e.WaitStderr("AGENTRUN_DEV_PAUSED after-result t0/tool/0", 90*time.Second)
			e.Kill()
			e.Start()
			r := e.WaitPhase("k1", 120*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
			if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "finished" {
				t.Fatalf("run is %s %s: %s (answer %+v); refused %q", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer, e.Model.Refused())
			}
			if refused := e.Model.Refused(); len(refused) != 0 {
				t.Errorf("the vendor refused %q", refused)
			}
			for turn := 0; turn < 3; turn++ {
				if n := e.Model.CountTurn("crash", turn); n != 1 {
					t.Errorf("scripted turn %d reached the vendor %d times, want 1", turn, n)
				}
			}
			for _, call := range e.Model.Calls() {
				if call.Entry == "router" {
					continue // the server's own routing call
				}
				if call.Format != c.format || !call.Stream || call.Status != 200 {
					t.Errorf("call %+v: want a streamed %s call answered 200", call, c.format)
				}
			}
			if got := e.Counted(); !slices.Equal(got, []string{"crash"}) {
				t.Errorf("dev_count ran %v, want once", got)
			}
			if tr := r.Status.Turns; len(tr) != 1 || tr[0].ModelCalls != 3 || tr[0].InputTokens == 0 || tr[0].OutputTokens == 0 {
				t.Errorf("turns = %+v: want three calls with their usage", tr)
			}
		})
	}
}

const statusToolsScript = `
entries:
  - name: echo
    match: "Echo once"
    turns:
      - tool_calls:
          - name: mcp__ev__echo
            input: {message: "hi"}
      - text: "echoed: {{last_tool_result}}"
`

// status.tools names every tool the agent's runs are offered (issue 24): with a stdio MCP server
// and its echo ticked, `get agent -o json` lists mcp__ev__echo beside the listed tool, and the
// run's first model request offers exactly those tools, in that order.
func TestStatusToolsNamesMCP(t *testing.T) {
	t.Parallel()
	npmDir := MCPNPMServers(t)
	e := NewEnv(t, statusToolsScript)
	modelURL, bodies := RecordModel(t, e)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "ANTHROPIC_BASE_URL="+modelURL)
	everything := filepath.Join(npmDir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	agent := fmt.Sprintf(`{"metadata":{"name":"ev-agent"},"spec":{"computer":{"kind":"none"},"tools":["write"],
  "mcpServers":[{"name":"ev","command":"node","args":[%q,"stdio"],"tools":["echo"]}]}}`, everything)
	if st := e.Do("PUT", "/v2/agents/ev-agent", agent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var got api.Agent
	if err := json.Unmarshal([]byte(e.MustCLI(0, "get", "agent", "ev-agent", "-o", "json").Stdout), &got); err != nil {
		t.Fatal(err)
	}
	if want := []string{"write", "mcp__ev__echo"}; !slices.Equal(got.Status.Tools, want) {
		t.Errorf("status.tools = %q, want %q", got.Status.Tools, want)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"s1"},"spec":{"agent":"ev-agent","input":"Echo once"}}`, nil)
	r := e.WaitPhase("s1", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "echoed: Echo: hi" {
		t.Fatalf("run is %s %s (%s), answer %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer)
	}
	if offered := OfferedTools(t, bodies(), "Echo once"); !slices.Equal(offered, got.Status.Tools) {
		t.Errorf("the run was offered %q, status.tools says %q", offered, got.Status.Tools)
	}
}

// `server capabilities` looks at what is installed on each request (issue 24): OpenCode is
// unavailable with the line that installs it, the line is run as printed, and the same server
// then lists it available, installed in the data folder, with no restart.
func TestCapabilitiesSeeOpenCodeInstalled(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed: the printed line cannot be run")
	}
	e := NewEnv(t, HarnessScript)
	e.Extra = append(e.Extra, harness.CacheEnv+"="+t.TempDir())
	e.Start()
	opencode := func() harness.Info {
		var caps struct{ Harnesses []harness.Info }
		res := e.MustCLI(0, "server", "capabilities")
		if err := JSONUnmarshal(res.Stdout, &caps); err != nil {
			t.Fatalf("capabilities: %v\n%s", err, res.Stdout)
		}
		for _, h := range caps.Harnesses {
			if h.Name == "opencode" {
				return h
			}
		}
		t.Fatalf("capabilities list no opencode:\n%s", res.Stdout)
		return harness.Info{}
	}
	before := opencode()
	_, line, ok := strings.Cut(before.Why, "install it with `")
	line, _, _ = strings.Cut(line, "`")
	if before.Available || !ok || !strings.HasPrefix(line, "npm install ") {
		t.Fatalf("before installing: %+v", before)
	}
	if out, err := exec.Command("bash", "-c", line).CombinedOutput(); err != nil {
		t.Skipf("the printed line could not install opencode here (no registry reachable?): %v\n%s", err, out)
	}
	after := opencode()
	if want := filepath.Join(e.Dir, "harnesses", "opencode@"+harness.OpenCodeVersion); !after.Available || after.Installed != want {
		t.Errorf("after `%s`: %+v, want available, installed in %s", line, after, want)
	}
}
