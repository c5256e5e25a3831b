package ifbusy

import (
	"slices"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// TestInterruptLeavesToolToFinish: a message with ifBusy interrupt while a tool call runs lets
// the call finish (its result recorded), does not run the calls after it (the model is told
// they did not run), and starts the next turn.
func TestInterruptLeavesToolToFinish(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, `
entries:
- name: job
  match: "Slow job"
  turns:
  - tool_calls: [{name: dev_count, input: {label: slow, sleep_ms: 3000}}, {name: dev_count, input: {label: after}}]
  - text: "handled: {{last_user}}"
`)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/writer", writerAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"r1"},"spec":{"agent":"writer","input":"Slow job: count"}}`, nil)
	deadline := time.Now().Add(30 * time.Second)
	for !slices.Contains(e.Counted(), "slow") {
		if time.Now().After(deadline) {
			t.Fatalf("the slow tool call never started: %s", StepList(e.Steps("r1")))
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.MustCLI(0, "runs", "message", "r1", "--content", "skip the rest", "--if-busy", "interrupt")
	ev := WaitEvent(t, e, "r1", api.EventRunInterrupted)
	if ev.StepKey != "t0/tool/1" {
		t.Errorf("run.interrupted at %q, want t0/tool/1 (after the call in flight)", ev.StepKey)
	}
	r := e.WaitPhase("r1", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "handled: skip the rest" {
		t.Fatalf("run %s (%s), answer %+v; steps %s", r.Status.Phase, r.Status.Message, r.Status.Answer, StepList(e.Steps("r1")))
	}
	if got := e.Counted(); !slices.Equal(got, []string{"slow"}) {
		t.Errorf("dev_count ran %v, want [slow]: the call in flight finishes once, the one after it does not run", got)
	}
	steps := e.Steps("r1")
	if s := FindStep(steps, "t0/tool/0"); s == nil || s.State != api.StepCompleted || !strings.Contains(string(s.Result), "counted slow") {
		t.Errorf("the call in flight: %+v, want completed with its result", s)
	}
	if s := FindStep(steps, "t0/tool/1"); s != nil {
		t.Errorf("the call after the interrupt has a step: %+v", s)
	}
}

// TestKillDuringInterrupt: SIGKILL right after the interrupt was recorded (before the next
// turn's model call) and a restart: the run finishes, the tool call before the interrupt ran
// once, the stop and the message were taken once, and the cancelled call was not sent again.
func TestKillDuringInterrupt(t *testing.T) {
	t.Parallel()
	script := strings.Replace(slowScript, `{name: write, input: {path: notes.txt, content: "v1"}}`, `{name: dev_count, input: {label: once}}`, 1)
	e := NewEnv(t, script)
	e.Start("AGENTRUN_DEV_PAUSE_AT=before-intent:t2/model")
	startSlow(t, e, "")
	setScript(t, e, strings.Replace(fastScript, `{name: write, input: {path: notes.txt, content: "v1"}}`, `{name: dev_count, input: {label: once}}`, 1))
	e.MustCLI(0, "runs", "message", "r1", "--content", "use the short form", "--if-busy", "interrupt")
	e.WaitStderr("AGENTRUN_DEV_PAUSED before-intent t2/model", 30*time.Second)
	e.Kill()
	e.Start()
	r := e.WaitPhase("r1", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "handled: use the short form" {
		t.Fatalf("run %s (%s), answer %+v; steps %s", r.Status.Phase, r.Status.Message, r.Status.Answer, StepList(e.Steps("r1")))
	}
	if got := e.Counted(); !slices.Equal(got, []string{"once"}) {
		t.Errorf("dev_count ran %v, want once", got)
	}
	steps := e.Steps("r1")
	stops, msgs := 0, 0
	for _, s := range steps {
		if s.Kind == api.StepKindStop {
			stops++
		}
		if s.Kind == "message" {
			msgs++
		}
	}
	if stops != 1 || msgs != 1 {
		t.Errorf("%d stop steps and %d message steps, want one each: %s", stops, msgs, StepList(steps))
	}
	if n := e.Model.CountTurn("job", 1); n != 2 {
		t.Errorf("the scripted server got %d calls of turn 1, want 2 (the cancelled one, then the next turn's once)", n)
	}
	if n := len(e.Events("r1")); n == 0 || !HasEvent(e.Events("r1"), api.EventRunInterrupted, "") {
		t.Errorf("no run.interrupted on the timeline after the restart")
	}
}

// TestInterruptAcrossRunners: the server (no runner of its own) stores the message; the runner
// driving the run, another process on PostgreSQL, notices it and stops the slow call.
func TestInterruptAcrossRunners(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, slowScript)
	c.StartServer()
	c.StartRunner("a")
	startSlow(t, c.Env, "")
	setScript(t, c.Env, fastScript)
	c.MustCLI(0, "runs", "message", "r1", "--content", "use the short form", "--if-busy", "interrupt")
	WaitEvent(t, c.Env, "r1", api.EventRunInterrupted)
	r := c.WaitPhase("r1", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "handled: use the short form" {
		t.Fatalf("run %s (%s), answer %+v; steps %s", r.Status.Phase, r.Status.Message, r.Status.Answer, StepList(c.Steps("r1")))
	}
	if s := FindStep(c.Steps("r1"), "t1/model"); s == nil || s.State != api.StepInterrupted {
		t.Errorf("the slow call: %+v, want Interrupted", s)
	}
}

// TestRollbackAfterRestart: on an agent whose spec.ifBusy is rollback, the turn a rollback
// discards changed a file, then the server was SIGKILLed and restarted mid-turn; the rollback
// still puts the file back as the turn found it (what the turn's steps changed is kept in the
// journal, KEY/pre, not only by the drive).
func TestRollbackAfterRestart(t *testing.T) {
	t.Parallel()
	script := `
entries:
- name: job
  match: "Slow job"
  turns:
  - tool_calls: [{name: write, input: {path: notes.txt, content: "v1"}}]
  - text: "first done"
  - tool_calls: [{name: write, input: {path: notes.txt, content: "v2"}}]
  - text: "second done"
    latency: 60s
`
	e := NewEnv(t, script)
	e.Start("AGENTRUN_DEV_PAUSE_AT=after-result:t2/tool/0")
	// Rollback is the agent's default: what its turns change is kept in the journal.
	if st := e.Do("PUT", "/v2/agents/writer", `{"metadata":{"name":"writer"},"spec":{"tools":["write"],"ifBusy":"rollback"}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"r1"},"spec":{"agent":"writer","input":"Slow job: write notes","keepAlive":true}}`, nil)
	e.WaitPhase("r1", 30*time.Second, api.PhaseWaiting)
	e.MustCLI(0, "runs", "message", "r1", "--content", "rewrite it")
	e.WaitStderr("AGENTRUN_DEV_PAUSED after-result t2/tool/0", 30*time.Second)
	e.Kill()
	e.Start()
	waitCall(t, e, "job", 3, 1)
	setScript(t, e, strings.Replace(script, `tool_calls: [{name: write, input: {path: notes.txt, content: "v2"}}]`, `text: "rolled back; now: {{last_user}}"`, 1))
	e.MustCLI(0, "runs", "message", "r1", "--content", "never mind") // the agent's default: rollback
	WaitEvent(t, e, "r1", api.EventTurnRolledBack)
	deadline := time.Now().Add(60 * time.Second)
	for r := e.GetRun("r1"); r.Status.Answer == nil || r.Status.Answer.Preview != "rolled back; now: never mind"; r = e.GetRun("r1") {
		if time.Now().After(deadline) || api.Finished(r.Status.Phase) {
			t.Fatalf("run %s (%s), answer %+v; steps %s", r.Status.Phase, r.Status.Message, r.Status.Answer, StepList(e.Steps("r1")))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := e.MustCLI(0, "runs", "read-file", "r1", "notes.txt").Stdout; got != "v1" {
		t.Errorf("notes.txt = %q after the rollback, want v1 (as the turn found it, before the restart)", got)
	}
	if s := FindStep(e.Steps("r1"), "t2/tool/0/pre"); s == nil || s.Kind != "turn.pre" || !s.RolledBack {
		t.Errorf("the write's kept pre-image step: %+v", s)
	}
}
