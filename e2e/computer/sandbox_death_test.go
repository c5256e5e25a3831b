package computer

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/computer/local"
)

const sandboxFillScript = `
entries:
  - name: fill
    match: "Fill the sandbox"
    turns:
      - tool_calls:
          - name: bash
            input: {command: "echo ran >> count.log; head -c 2G /dev/zero > /tmp/fill"}
      - tool_calls:
          - name: bash
            input: {command: "wc -l < count.log; stat -c %s /tmp/fill"}
      - tool_calls:
          - name: bash
            input: {command: "set -o pipefail; echo ran >> count.log; head -c 3G /dev/zero | tail -n 1 | wc -c"}
      - tool_calls:
          - name: bash
            input: {command: "wc -l < count.log"}
      - text: "done: {{last_tool_result}}"
  - name: die
    match: "Kill the helper"
    turns:
      - tool_calls:
          - name: bash
            input: {command: "echo ran >> count.log; kill -9 $PPID; sleep 30"}
      - tool_calls:
          - name: bash
            input: {command: "wc -l < count.log"}
      - text: "after: {{last_tool_result}}"
`

// A command that fills the sandbox's /tmp, or its memory, fails by itself: /tmp stops at its size
// with ENOSPC reported to the model, a memory hog is killed, and the helper lives on (the next
// tool calls run on the same sandbox, which is never made again). The audit's command ran twice.
func TestSandboxFillFailsTheCommand(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	e := NewEnv(t, sandboxFillScript)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/filler", `{"metadata":{"name":"filler"},"spec":{"model":{"access":"Nodus"},"computer":{"kind":"sandbox","provider":"local"},"perRunMaxCostUSD":"1.00"}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"fill"},"spec":{"agent":"filler","input":"Fill the sandbox"}}`, nil)
	r := e.WaitPhase("fill", 3*time.Minute, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run ended %s/%s: %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	res := e.ToolResults("fill")
	if !strings.Contains(res["t0/tool/0"].Content, "No space left on device") {
		t.Errorf("the /tmp fill did not report ENOSPC to the model: %q", res["t0/tool/0"].Content)
	}
	if want := fmt.Sprintf("1\n%d", local.TmpBytes); !strings.Contains(res["t1/tool/0"].Content, want) {
		t.Errorf("after the fill: %q, want %q (one line, /tmp full at its size)", res["t1/tool/0"].Content, want)
	}
	if c := res["t2/tool/0"].Content; strings.HasPrefix(c, "exit code 0") || !strings.Contains(res["t3/tool/0"].Content, "2") {
		t.Errorf("the memory hog: %q, then %q", c, res["t3/tool/0"].Content)
	}
	if got := e.MustCLI(0, "runs", "read-file", "fill", "count.log").Stdout; got != "ran\nran\n" {
		t.Errorf("count.log = %q, want two lines (one per command, none repeated)", got)
	}
	for _, ev := range e.Events("fill") {
		if ev.Type == "computer.recreated" || ev.Type == "step.interrupted" {
			t.Errorf("the sandbox died under a fill: %s %s", ev.Type, ev.Message)
		}
	}
	t.Logf("fill: %q; hog: %q", res["t0/tool/0"].Content, res["t2/tool/0"].Content)
}

// A command whose sandbox dies under it after it started (here it kills the helper itself) is not
// run again: the step is interrupted and the run waits in NeedsResolution; skipped by a person, the
// run goes on, on a new sandbox around the same folder, and count.log has the one line.
func TestSandboxDeathInterruptsTheCommand(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	e := NewEnv(t, sandboxFillScript)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/killer", `{"metadata":{"name":"killer"},"spec":{"model":{"access":"Nodus"},"computer":{"kind":"sandbox","provider":"local"},"perRunMaxCostUSD":"1.00"}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"die"},"spec":{"agent":"killer","input":"Kill the helper"}}`, nil)
	r := e.WaitPhase("die", time.Minute, api.PhaseNeedsResolution, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseNeedsResolution || r.Status.WaitingOn == nil || r.Status.WaitingOn.StepKey != "t0/tool/0" {
		t.Fatalf("run is %s/%s (%s), want NeedsResolution on t0/tool/0", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	if got := e.MustCLI(0, "runs", "read-file", "die", "count.log").Stdout; got != "ran\n" {
		t.Errorf("count.log = %q, want one line", got)
	}
	if !HasEvent(e.Events("die"), "step.interrupted", "computer died") {
		t.Error("the timeline does not say the step was interrupted by the computer's death")
	}
	e.MustCLI(8, "runs", "wait", "die")
	e.MustCLI(0, "runs", "resolve", "die", "--skip")
	r = e.WaitPhase("die", time.Minute, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("after skip: %s/%s %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	if c := e.ToolResults("die")["t1/tool/0"].Content; !strings.Contains(c, "1") {
		t.Errorf("the next tool call on a new sandbox: %q, want count.log's one line", c)
	}
	if got := e.MustCLI(0, "runs", "read-file", "die", "count.log").Stdout; got != "ran\n" {
		t.Errorf("count.log = %q after the run, want one line", got)
	}
	if !HasEvent(e.Events("die"), "computer.recreated", "") {
		t.Error("the next call did not get a new sandbox")
	}
}
