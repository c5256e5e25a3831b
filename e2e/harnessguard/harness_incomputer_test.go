package harnessguard

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// claudeBoxScript is claudeScript with a turn that lists the folders of a filesystem MCP server.
const claudeBoxScript = ClaudeScript + `
  - name: files
    match: "List your folders"
    turns:
      - tool_calls:
          - name: mcp__agentrun__mcp__files__list_allowed_directories
            input: {}
      - text: "folders: {{last_tool_result}}"
`

// inSandbox checks that each process of procs (harnessProcs lines) is in a PID and a network
// namespace other than this test's, with /workspace as its working folder, and returns how many.
func inSandbox(t *testing.T, procs []string) int {
	t.Helper()
	self := func(ns string) string { l, _ := os.Readlink("/proc/self/ns/" + ns); return l }
	n := 0
	for _, p := range procs {
		pid, err := strconv.Atoi(strings.SplitN(p, ":", 2)[0])
		if err != nil {
			continue
		}
		pidNS, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
		netNS, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
		cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if pidNS == "" {
			continue // gone meanwhile
		}
		n++
		if pidNS == self("pid") || netNS == self("net") || cwd != "/workspace" {
			t.Errorf("harness process %s: pid namespace %s (the host's %s), network namespace %s (the host's %s), cwd %q; want its own namespaces and /workspace",
				p, pidNS, self("pid"), netNS, self("net"), cwd)
		}
	}
	return n
}

// TestClaudeInSandbox: an agent on the claude-agent harness with a sandbox computer (network
// off) has the real claude CLI run inside the sandbox: while it waits on its second model call
// (the runner paused there) its process is in the sandbox's PID and network namespaces with
// /workspace as its working folder, and it still reaches the gateway (through the forwarded unix
// socket). SIGKILL of the runner leaves no harness process (it dies with the computer); the
// restarted runner replays it in a new sandbox to the end, each scripted turn reaching the model
// once and the counting tool running once. Then the seed's quickstart with the harness in a
// sandbox, and the real server-filesystem over stdio in the sandbox, served to the harness: the
// folder it lists is /workspace, not the run folder's host path.
func TestClaudeInSandbox(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	npmDir := MCPNPMServers(t)
	e := NewClaudeEnv(t, claudeBoxScript)
	e.Start("AGENTRUN_DEV_PAUSE_AT=after-intent:t1/model")
	if st := e.Do("PUT", "/v2/agents/boxed", `{"metadata":{"name":"boxed"},"spec":{"harness":"claude-agent","computer":{"kind":"sandbox"},"tools":["write","dev_count"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"b1"},"spec":{"agent":"boxed","input":"Crash test one"}}`, nil)
	e.WaitStderr("AGENTRUN_DEV_PAUSED after-intent t1/model", 90*time.Second)
	if n := inSandbox(t, HarnessProcs(e.Dir)); n == 0 {
		t.Fatal("no harness process is running while the runner waits on its model call")
	}
	var started string
	for _, ev := range e.Events("b1") {
		if ev.Type == api.EventHarnessStarted {
			started = ev.Message
		}
	}
	if !strings.Contains(started, "inside the run's sandbox computer, in /workspace") {
		t.Errorf("harness.started says %q", started)
	}
	e.Kill()
	NoHarnessLeft(t, e.Dir, 10*time.Second)
	e.Start()
	r := e.WaitPhase("b1", 90*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "finished" {
		t.Fatalf("b1: %s %s %s %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer)
	}
	if got := e.Counted(); !slices.Equal(got, []string{"crash"}) {
		t.Errorf("dev_count ran %v, want once", got)
	}
	for turn := 0; turn < 3; turn++ {
		if n := e.Model.CountTurn("crash", turn); n != 1 {
			t.Errorf("scripted turn %d reached the model server %d times, want 1", turn, n)
		}
	}
	if b, err := os.ReadFile(filepath.Join(e.Dir, "runs", "b1", "after.txt")); err != nil || string(b) != "done" {
		t.Errorf("after.txt = %q, %v", b, err)
	}

	// The seed's quickstart, the harness in a sandbox.
	work := t.TempDir()
	script := strings.Replace(SeedQuickstart, `{"definition": {"id": "notes",`, `{"definition": {"id": "notes", "harness": "claude-agent", "computer": {"kind": "sandbox"},`, 1)
	// Bounded: a run that never ends would keep the CLI's wait, and the whole e2e package, until
	// go test's timeout, which shows nothing of the run; failing here logs its server's stderr.
	qctx, qcancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer qcancel()
	cmd := exec.CommandContext(qctx, "bash", "-c", script)
	cmd.Dir = work
	cmd.Env = append(e.BaseEnv(), "PATH="+filepath.Dir(BinPath)+":"+os.Getenv("PATH"))
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		var runs []api.AgentRun
		e.Do("GET", "/v2/agentruns", nil, &struct{ Items *[]api.AgentRun }{&runs})
		for _, r := range runs {
			t.Logf("run %s: %s %s %s", r.Metadata.Name, r.Status.Phase, r.Status.Reason, r.Status.Message)
		}
		e.DumpGoroutines()
		t.Fatalf("quickstart failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "start-exit=8") || !strings.Contains(string(out), "# Europe") || !strings.Contains(string(out), "Notes about Europe") {
		t.Errorf("quickstart output:\n%s", out)
	}

	// The filesystem MCP server inside the sandbox, its tool served to the harness.
	files := filepath.Join(npmDir, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
	agent := fmt.Sprintf(`{"metadata":{"name":"filer"},"spec":{"harness":"claude-agent","computer":{"kind":"sandbox"},"approvals":"never-ask",
  "mcpServers":[{"name":"files","command":"node","args":[%q,"."],"tools":["list_allowed_directories"]}]}}`, files)
	var apiErr api.Error
	if st := e.Do("PUT", "/v2/agents/filer", agent, &apiErr); st != 201 {
		t.Fatalf("create the filer agent: HTTP %d %+v", st, apiErr)
	}
	e.StartRun("filer", "f1", "List your folders")
	a := e.AnswerOf("f1")
	if !strings.Contains(a, "/workspace") || strings.Contains(a, filepath.Join(e.Dir, "runs")) {
		t.Errorf("the filesystem server's folders, seen by the harness: %q", a)
	}
	NoHarnessLeft(t, e.Dir, 10*time.Second)
}

// procsWithEnv lists the processes whose environment holds both marks ("PID: cmdline").
func procsWithEnv(a, b string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, en := range ents {
		env, err := os.ReadFile(filepath.Join("/proc", en.Name(), "environ"))
		if err != nil || !strings.Contains(string(env), a) || !strings.Contains(string(env), b) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", en.Name(), "cmdline"))
		out = append(out, en.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return out
}

// TestPiInSandbox: pi (a Node program, node from the host's /usr) on a sandbox computer without
// network runs inside it: while its model call waits on the scripted server, its process is in
// the sandbox's namespaces with /workspace as its working folder; SIGKILL of the runner leaves no
// pi process; and the seed's quickstart runs with pi in a sandbox.
func TestPiInSandbox(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	e := NewPiEnv(t)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/boxed", `{"metadata":{"name":"boxed"},"spec":{"harness":"pi","computer":{"kind":"sandbox"},"tools":["write"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"p1"},"spec":{"agent":"boxed","input":"Be slow"}}`, nil)
	mine := func() []string { return procsWithEnv("AGENTRUN_PI_CONFIG=", filepath.Join(e.Dir, "harness-home")) }
	for deadline := time.Now().Add(60 * time.Second); len(mine()) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no pi process within 60 s; run: %+v", e.GetRun("p1").Status)
		}
	}
	if n := inSandbox(t, mine()); n == 0 {
		t.Fatal("the pi process went before it could be looked at")
	}
	e.Kill()
	for deadline := time.Now().Add(10 * time.Second); len(mine()) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pi processes survived the runner: %v", mine())
		}
	}
	e.Start()
	e.Do("POST", "/v2/agentruns/p1/cancel", nil, nil)

	work := t.TempDir()
	script := strings.Replace(SeedQuickstart, `{"definition": {"id": "notes",`, `{"definition": {"id": "notes", "harness": "pi", "computer": {"kind": "sandbox"},`, 1)
	// Bounded: a run that never ends would keep the CLI's wait, and the whole e2e package, until
	// go test's timeout, which shows nothing of the run; failing here logs its server's stderr.
	qctx, qcancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer qcancel()
	cmd := exec.CommandContext(qctx, "bash", "-c", script)
	cmd.Dir = work
	cmd.Env = append(e.BaseEnv(), "PATH="+filepath.Dir(BinPath)+":"+os.Getenv("PATH"))
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		var runs []api.AgentRun
		e.Do("GET", "/v2/agentruns", nil, &struct{ Items *[]api.AgentRun }{&runs})
		for _, r := range runs {
			t.Logf("run %s: %s %s %s", r.Metadata.Name, r.Status.Phase, r.Status.Reason, r.Status.Message)
		}
		t.Logf("pi processes: %v", mine())
		e.DumpGoroutines()
		t.Fatalf("quickstart failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "start-exit=8") || !strings.Contains(string(out), "# Europe\n\nNotes about Europe.\n") {
		t.Errorf("quickstart output:\n%s", out)
	}
}

// TestClaudeInDockerSandbox: the real claude CLI (a native binary, so the image needs no Node) on
// a docker sandbox without network runs inside the container (its process in the container's PID
// and network namespaces, cwd /workspace, while the runner is paused on its second model call),
// reaching the gateway through the socket bind-mounted into the container; SIGKILL of the runner
// leaves neither a harness process nor the container, and the restarted runner replays it to the
// end in a new container.
func TestClaudeInDockerSandbox(t *testing.T) {
	t.Parallel()
	base := NeedDockerBase(t)
	e := NewClaudeEnv(t, ClaudeScript)
	e.Extra = append(e.Extra, "AGENTRUN_DOCKER_BASE="+base)
	e.Start("AGENTRUN_DEV_PAUSE_AT=after-intent:t1/model")
	if st := e.Do("PUT", "/v2/agents/docked", `{"metadata":{"name":"docked"},"spec":{"harness":"claude-agent","computer":{"kind":"sandbox","provider":"docker"},"tools":["write","dev_count"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"dk1"},"spec":{"agent":"docked","input":"Crash test one"}}`, nil)
	e.WaitStderr("AGENTRUN_DEV_PAUSED after-intent t1/model", 300*time.Second)
	if n := inSandbox(t, HarnessProcs(e.Dir)); n == 0 {
		t.Fatal("no harness process is running while the runner waits on its model call")
	}
	e.Kill()
	NoHarnessLeft(t, e.Dir, 20*time.Second)
	NoContainers(t, "dk1")
	e.Start()
	r := e.WaitPhase("dk1", 120*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "finished" {
		t.Fatalf("dk1: %s %s %s %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer)
	}
	if got := e.Counted(); !slices.Equal(got, []string{"crash"}) {
		t.Errorf("dev_count ran %v, want once", got)
	}
	for turn := 0; turn < 3; turn++ {
		if n := e.Model.CountTurn("crash", turn); n != 1 {
			t.Errorf("scripted turn %d reached the model server %d times, want 1", turn, n)
		}
	}
	NoContainers(t, "dk1")
}

// mcpBoxScript: the built-in loop calls a filesystem server's list_allowed_directories and the
// everything server's get-env, both started in the run's sandbox.
const mcpBoxScript = `
entries:
  - name: boxed
    match: "Look around"
    turns:
      - tool_calls:
          - name: mcp__files__list_allowed_directories
            input: {}
      - tool_calls:
          - name: mcp__everything__get-env
            input: {}
      - text: "done looking"
`

// TestMCPStdioInSandbox: a built-in agent with a sandbox computer (network off) and two real npm
// MCP servers over stdio: both start inside the sandbox (the filesystem server's folder "." is
// /workspace, not the run folder's host path), the everything server's environment is the
// sandbox's with the spec's env and none of the runner's variables.
func TestMCPStdioInSandbox(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	npmDir := MCPNPMServers(t)
	e := NewEnv(t, mcpBoxScript)
	e.Start("AGENTRUN_RUNNER_ONLY_VAR=runner-side")
	files := filepath.Join(npmDir, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
	everything := filepath.Join(npmDir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	agent := fmt.Sprintf(`{"metadata":{"name":"looker"},"spec":{"computer":{"kind":"sandbox"},"approvals":"never-ask",
  "mcpServers":[{"name":"files","command":"node","args":[%q,"."],"tools":["list_allowed_directories"]},
                {"name":"everything","command":"node","args":[%q,"stdio"],"env":{"FROM_SPEC":"yes"},"tools":["get-env"]}]}}`, files, everything)
	var apiErr api.Error
	if st := e.Do("PUT", "/v2/agents/looker", agent, &apiErr); st != 201 {
		t.Fatalf("create agent: HTTP %d %+v", st, apiErr)
	}
	e.StartRun("looker", "l1", "Look around")
	if a := e.AnswerOf("l1"); a != "done looking" {
		t.Fatalf("answer %q", a)
	}
	res := e.ToolResults("l1")
	if r := res["t0/tool/0"]; r.IsError || !strings.Contains(r.Content, "/workspace") || strings.Contains(r.Content, filepath.Join(e.Dir, "runs")) {
		t.Errorf("the filesystem server's folders: %+v", r)
	}
	env := res["t1/tool/0"].Content
	for _, want := range []string{"FROM_SPEC", "HOME", "/home/agent"} {
		if !strings.Contains(env, want) {
			t.Errorf("the everything server's environment lacks %q: %s", want, env)
		}
	}
	if strings.Contains(env, "AGENTRUN_RUNNER_ONLY_VAR") || strings.Contains(env, "ANTHROPIC") {
		t.Errorf("the everything server's environment has the runner's variables: %s", env)
	}
	// The computer the servers start in is made by the run's first drive: its timeline says the
	// run started (once), before that step, and never that it resumed.
	var seq []string
	for _, ev := range e.Events("l1") {
		switch {
		case ev.Type == api.EventRunStarted, ev.Type == api.EventRunResumed:
			seq = append(seq, string(ev.Type))
		case ev.Type == api.EventStepCompleted && ev.StepKey == "computer":
			seq = append(seq, "computer")
		}
	}
	if strings.Join(seq, " ") != "run.started computer" {
		t.Errorf("timeline = %v, want run.started before the computer step and no run.resumed", seq)
	}
}
