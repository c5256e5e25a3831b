package computer

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

const computerToolsScript = `
entries:
  - name: files
    match: "Work with files"
    turns:
      - tool_calls:
          - name: write
            input: {path: /workspace/notes.txt, content: "alpha\nbeta\n"}
      - tool_calls:
          - name: edit
            input: {path: notes.txt, old_string: beta, new_string: gamma}
      - tool_calls:
          - name: bash
            input: {command: "cat /workspace/notes.txt"}
      - tool_calls:
          - name: grep
            input: {pattern: gamma}
      - tool_calls:
          - name: read
            input: {path: /workspace/notes.txt}
      - text: "read back: {{last_tool_result}}"
  - name: bare
    match: "Try to write"
    turns:
      - tool_calls:
          - name: write
            input: {path: x.txt, content: "x"}
      - text: "got: {{last_tool_result}}"
`

// An agent whose computer is a sandbox gets the file tools (read, write, edit, ls, grep) with it,
// as it gets bash, without listing them; they work on the run folder the sandbox mounts at
// /workspace. The agent's status.tools and `server capabilities` say so.
func TestSandboxBringsFileTools(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	e := NewEnv(t, computerToolsScript)
	e.Start()
	var a api.Agent
	if st := e.Do("PUT", "/v2/agents/filer", `{"metadata":{"name":"filer"},"spec":{"computer":{"kind":"sandbox","provider":"local"}}}`, &a); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	if len(a.Spec.Tools) != 0 {
		t.Fatalf("spec.tools = %v, want none listed", a.Spec.Tools)
	}
	want := []string{"read", "write", "edit", "ls", "grep", "bash", "bash_output", "bash_kill", "bash_list"}
	if !slices.Equal(a.Status.Tools, want) {
		t.Errorf("status.tools = %v, want %v", a.Status.Tools, want)
	}
	// get agent -o yaml shows them too.
	y := e.MustCLI(0, "get", "agent", "filer", "-o", "yaml").Stdout
	for _, n := range want {
		if !strings.Contains(y, "- "+n+"\n") {
			t.Errorf("get agent -o yaml does not list %s:\n%s", n, y)
		}
	}
	var caps struct {
		ComputerTools map[string][]string `json:"computerTools"`
	}
	if err := json.Unmarshal([]byte(e.MustCLI(0, "server", "capabilities").Stdout), &caps); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(caps.ComputerTools["sandbox"], want) || !slices.Contains(caps.ComputerTools["desktop"], "write") || slices.Contains(caps.ComputerTools["browser"], "write") {
		t.Errorf("capabilities computerTools = %v", caps.ComputerTools)
	}

	e.MustCLI(0, "create", "agentrun", "files", "--agent", "filer", "--prompt", "Work with files")
	r := e.WaitPhase("files", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run ended %s: %s", r.Status.Phase, r.Status.Message)
	}
	results := map[string]string{}
	for key, res := range e.ToolResults("files") {
		if res.IsError {
			t.Errorf("step %s failed: %s", key, res.Content)
		}
		results[key] = res.Content
	}
	if !strings.Contains(results["t2/tool/0"], "alpha\ngamma") {
		t.Errorf("bash in the sandbox did not see the edited file: %q", results["t2/tool/0"])
	}
	if !strings.Contains(results["t3/tool/0"], "notes.txt") {
		t.Errorf("grep found %q", results["t3/tool/0"])
	}
	if !strings.Contains(r.Status.Answer.Preview, "gamma") {
		t.Errorf("answer %q", r.Status.Answer.Preview)
	}
	if got := e.MustCLI(0, "runs", "read-file", "files", "notes.txt").Stdout; got != "alpha\ngamma\n" {
		t.Errorf("notes.txt = %q", got)
	}
	for _, ev := range e.Events("files") {
		if ev.Type == "tool.refused" {
			t.Errorf("a call was refused: %s", ev.Message)
		}
	}
}

// An agent with computer none gets only the tools it lists: its write call is refused, which the
// model is told and the timeline shows (it makes no step).
func TestRefusedToolOnTimeline(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, computerToolsScript)
	e.Start()
	var a api.Agent
	if st := e.Do("PUT", "/v2/agents/bare", `{"metadata":{"name":"bare"},"spec":{"computer":{"kind":"none"},"tools":["ls"]}}`, &a); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	if !slices.Equal(a.Status.Tools, []string{"ls"}) {
		t.Errorf("status.tools = %v, want [ls]", a.Status.Tools)
	}
	e.MustCLI(0, "create", "agentrun", "bare-run", "--agent", "bare", "--prompt", "Try to write")
	r := e.WaitPhase("bare-run", 30*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || !strings.Contains(r.Status.Answer.Preview, `tool "write" is not available to this agent`) {
		t.Fatalf("run ended %s: %+v", r.Status.Phase, r.Status.Answer)
	}
	var refused []api.Event
	for _, ev := range e.Events("bare-run") {
		if ev.Type == "tool.refused" {
			refused = append(refused, ev)
		}
	}
	if len(refused) != 1 || !strings.Contains(refused[0].Message, "write") || !strings.Contains(refused[0].Message, "not available") || refused[0].StepKey != "t0/tool/0" {
		t.Fatalf("tool.refused events = %+v, want one for write", refused)
	}
	var data struct{ Tool, Why string }
	if err := json.Unmarshal(refused[0].Data, &data); err != nil || data.Tool != "write" || data.Why == "" {
		t.Errorf("event data %s", refused[0].Data)
	}
	if tl := e.MustCLI(0, "runs", "timeline", "bare-run").Stdout; !strings.Contains(tl, "tool.refused") || !strings.Contains(tl, "write") {
		t.Errorf("timeline does not show the refusal:\n%s", tl)
	}
	for _, s := range e.Steps("bare-run") {
		if s.Kind == "tool" {
			t.Errorf("a refused call made a step: %+v", s)
		}
	}
}
