package cluster

import (
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/model/fake"
)

// Each crash point: SIGKILL the server there, start it again on the same data folder, and check the
// run ends, no completed step ran twice, and the side effect happened at most once.
func TestCrashMatrix(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, pause string
		// wantResolution: the run parks in NeedsResolution on this step and is resolved with action.
		wantResolution, action string
		wantCount              int
		wantAnswer             string
	}{
		// Killed before the tool's intent was recorded: nothing happened, it just runs after restart.
		{name: "before-intent", pause: "before-intent:t0/tool/0", wantCount: 1, wantAnswer: "counted: counted c1"},
		// Intent recorded, effect not started: uncertain to the journal, so a person decides.
		{name: "after-intent/retry", pause: "after-intent:t0/tool/0", wantResolution: "t0/tool/0", action: "retry", wantCount: 1, wantAnswer: "counted: counted c1"},
		{name: "after-intent/complete", pause: "after-intent:t0/tool/0", wantResolution: "t0/tool/0", action: "complete", wantCount: 0, wantAnswer: "counted: checked by hand"},
		// Result recorded: the tool is not run again and the model is not asked again for turn 0.
		{name: "after-result", pause: "after-result:t0/tool/0", wantCount: 1, wantAnswer: "counted: counted c1"},
		// Model calls on the server's key are safe to repeat.
		{name: "model-after-intent", pause: "after-intent:t0/model", wantCount: 1, wantAnswer: "counted: counted c1"},
		{name: "model-after-result", pause: "after-result:t0/model", wantCount: 1, wantAnswer: "counted: counted c1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := NewEnv(t, CrashScript)
			e.Start("AGENTRUN_DEV_PAUSE_AT=" + c.pause)
			name := StartCrashRun(t, e, "Count once")
			e.WaitStderr("AGENTRUN_DEV_PAUSED "+strings.Replace(c.pause, ":", " ", 1), 15*time.Second)
			e.Kill()
			e.Start()
			if c.wantResolution != "" {
				r := e.WaitPhase(name, 15*time.Second, api.PhaseNeedsResolution)
				if r.Status.WaitingOn == nil || r.Status.WaitingOn.StepKey != c.wantResolution {
					t.Fatalf("NeedsResolution waiting on %+v, want step %s", r.Status.WaitingOn, c.wantResolution)
				}
				// runs wait: 8, it waits on a person.
				e.MustCLI(8, "runs", "wait", name)
				if n := len(e.Counted()); n != 0 {
					t.Fatalf("the interrupted tool ran %d times before resolution", n)
				}
				switch c.action {
				case "retry":
					e.RetryAsPerson(name)
				case "complete":
					res := WriteFile(t, e.Dir, "result.json", `{"content": "checked by hand"}`)
					e.MustCLI(0, "runs", "resolve", name, "--complete", "@"+res)
				}
			}
			r := e.WaitPhase(name, 15*time.Second, api.PhaseSucceeded, api.PhaseFailed)
			if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != c.wantAnswer {
				t.Fatalf("run ended %s/%s (%s) answer %+v, want Succeeded with %q", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer, c.wantAnswer)
			}
			if got := e.Counted(); len(got) != c.wantCount {
				t.Errorf("side effect happened %d times (%v), want %d", len(got), got, c.wantCount)
			}
			// Every completed model turn was served exactly once; an interrupted call may have been
			// made again, but its first attempt never completed.
			turnsServedOnce(t, e, "crash", 2)
			evs := e.Events(name)
			if !HasEvent(evs, "run.resumed", "replaying") {
				t.Errorf("timeline does not show the restart: %v", evs)
			}
			if c.wantResolution != "" && !HasEvent(evs, "step.interrupted", c.wantResolution) {
				t.Errorf("timeline does not show the interruption of %s", c.wantResolution)
			}
			for _, s := range e.Steps(name) {
				if s.State != api.StepCompleted {
					t.Errorf("step %s ended %s", s.Key, s.State)
				}
			}
		})
	}
}

// Killed in the middle of a tool call with a side effect: the run parks for a person, who skips it;
// the agent is told and carries on; the effect happened once.
func TestCrashMidToolCall(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, CrashScript)
	e.Start()
	name := StartCrashRun(t, e, "Count slowly")
	deadline := time.Now().Add(15 * time.Second)
	for len(e.Counted()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(e.Counted()) != 1 {
		t.Fatalf("the slow tool never started")
	}
	e.Kill()
	e.Start()
	r := e.WaitPhase(name, 15*time.Second, api.PhaseNeedsResolution)
	if r.Status.WaitingOn == nil || r.Status.WaitingOn.StepKey != "t0/tool/0" {
		t.Fatalf("waiting on %+v", r.Status.WaitingOn)
	}
	if res := e.MustCLI(0, "runs", "steps", name); !strings.Contains(res.Stdout, "Interrupted") {
		t.Errorf("steps do not show the interrupted step:\n%s", res.Stdout)
	}
	e.MustCLI(0, "runs", "resolve", name, "--skip")
	r = e.WaitPhase(name, 15*time.Second, api.PhaseSucceeded)
	if !strings.HasPrefix(r.Status.Answer.Preview, "after the slow tool: this call was interrupted") {
		t.Errorf("the agent was not told the call was interrupted: %q", r.Status.Answer.Preview)
	}
	if got := e.Counted(); len(got) != 1 {
		t.Errorf("side effect happened %d times, want 1", len(got))
	}
}

// Killed while the model is answering: the call is on the server's key, so it is made again after
// the restart; the tool before it is not repeated.
func TestCrashMidModelCall(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, CrashScript)
	var once sync.Once
	e.Model.OnRequest(func(c fake.Call) {
		if c.Entry == "slowmodel" && c.Turn == 1 {
			once.Do(func() {
				go func() {
					e.Proc.Process.Signal(syscall.SIGKILL)
				}()
			})
		}
	})
	e.Start()
	name := StartCrashRun(t, e, "Think slowly")
	<-e.Exited
	e.Proc = nil
	// The script answers at once now.
	sc, _ := fake.ParseScript([]byte(strings.Replace(CrashScript, "latency: 60s", "latency: 0s", 1)))
	e.Model.SetScript(sc)
	e.Start()
	r := e.WaitPhase(name, 15*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer.Preview != "thought it through" {
		t.Fatalf("run ended %s: %+v", r.Status.Phase, r.Status.Answer)
	}
	if got := e.Counted(); len(got) != 1 {
		t.Errorf("the tool before the crash ran %d times, want 1", len(got))
	}
	if n := e.Model.CountTurn("slowmodel", 0); n != 1 {
		t.Errorf("turn 0 (completed before the crash) was called %d times, want 1", n)
	}
	if n := e.Model.CountTurn("slowmodel", 1); n != 2 {
		t.Errorf("turn 1 (cut off by the crash) was called %d times, want 2", n)
	}
	for _, s := range e.Steps(name) {
		if s.Key == "t1/model" && s.Attempt != 2 {
			t.Errorf("t1/model attempt %d, want 2", s.Attempt)
		}
	}
}

// A read in the built-in loop is held for the next model call's intent commit (journal
// Spec.Held). Killed after its result but before that commit, the server has recorded nothing of
// it (the timeline has it only after the restart): the read runs again, the run ends as it would have, the model is asked
// once per turn, and the timeline names the read once, started then completed, with no start
// left over from before the kill.
func TestCrashAfterAHeldRead(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, `
entries:
  - name: lister
    match: "List once"
    turns:
      - tool_calls:
          - name: ls
            input: {path: "."}
      - text: "listed: {{last_tool_result}}"
`)
	e.Start("AGENTRUN_DEV_PAUSE_AT=after-result:t0/tool/0")
	if st := e.Do("PUT", "/v2/agents/lister", `{"metadata":{"name":"lister"},"spec":{"tools":["ls"]}}`, nil); st != 201 && st != 200 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/lister/runs", `{"input":{"content":"List once"}}`, &run); st != 201 {
		t.Fatalf("start run: HTTP %d", st)
	}
	name := run.Metadata.Name
	e.WaitStderr("AGENTRUN_DEV_PAUSED after-result t0/tool/0", 15*time.Second)
	e.Kill()
	e.Start()
	r := e.WaitPhase(name, 15*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	listed := e.ToolResults(name)["t0/tool/0"].Content
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "listed: "+listed {
		t.Fatalf("run ended %s/%s (%s) answer %+v, want Succeeded with %q", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer, "listed: "+listed)
	}
	turnsServedOnce(t, e, "lister", 2)
	for _, s := range e.Steps(name) {
		if s.State != api.StepCompleted || s.Attempt != 1 {
			t.Errorf("step %s ended %s at attempt %d, want Completed at attempt 1", s.Key, s.State, s.Attempt)
		}
	}
	started, completed, resumed := 0, 0, false
	evs := e.Events(name)
	for _, ev := range evs {
		if ev.Type == api.EventRunResumed {
			resumed = true
		}
		if ev.StepKey != "t0/tool/0" {
			continue
		}
		switch ev.Type {
		case api.EventStepStarted:
			started++
			if !resumed {
				t.Errorf("t0/tool/0 is on the timeline before the restart, but its record was held for a commit the kill prevented")
			}
		case api.EventStepCompleted:
			completed++
			if started != 1 {
				t.Errorf("t0/tool/0 completed before it started")
			}
		}
	}
	if started != 1 || completed != 1 {
		t.Errorf("the timeline has %d starts and %d completions of t0/tool/0, want 1 and 1: %v", started, completed, evs)
	}
	if !HasEvent(evs, "run.resumed", "replaying") {
		t.Errorf("timeline does not show the restart: %v", evs)
	}
}

// turnsServedOnce checks the scripted model completed each of entry's first turns exactly once.
func turnsServedOnce(t *testing.T, e *Env, entry string, turns int) {
	t.Helper()
	for turn := 0; turn < turns; turn++ {
		completed := 0
		for _, call := range e.Model.Calls() {
			if call.Entry == entry && call.Turn == turn && call.Completed {
				completed++
			}
		}
		if completed != 1 {
			t.Errorf("model turn %d of %s completed %d times, want 1", turn, entry, completed)
		}
	}
}

// On PostgreSQL a model reply's end goes to the group committer without the drive waiting for
// it (journal.Spec.Ahead), and a pause point waits for it, so each point names the same state of
// the store as on SQLite. A runner killed right before the counting tool's intent, or right
// after it, has the reply in the store: the restarted runner goes on from there, the model is
// asked once per turn, and the tool runs once (or waits for a person, its intent recorded).
func TestPGCrashAfterAReplySentAhead(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ pause, resolve string }{
		{"before-intent:t0/tool/0", ""},
		{"after-intent:t0/tool/0", "t0/tool/0"},
	} {
		t.Run(c.pause, func(t *testing.T) {
			t.Parallel()
			cl := NewCluster(t, CrashScript)
			cl.StartServer()
			name := StartCrashRun(t, cl.Env, "Count once")
			extra := cl.Extra
			cl.Extra = append(append([]string(nil), extra...), "AGENTRUN_DEV_PAUSE_AT="+c.pause)
			r1 := cl.StartRunner("r1")
			cl.Extra = extra
			marker := "AGENTRUN_DEV_PAUSED " + strings.Replace(c.pause, ":", " ", 1)
			for deadline := time.Now().Add(60 * time.Second); !strings.Contains(r1.Stderr.String(), marker); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the runner never paused at %s:\n%s", c.pause, Tail(r1.Stderr.String(), 3000))
				}
			}
			found := false
			for _, s := range cl.Steps(name) {
				if s.Key == "t0/model" {
					found = true
					if s.State != api.StepCompleted {
						t.Errorf("paused at %s, the store has t0/model %s, want Completed", c.pause, s.State)
					}
				}
			}
			if !found {
				t.Errorf("paused at %s, the store has no t0/model", c.pause)
			}
			r1.Kill()
			cl.StartRunner("r1")
			if c.resolve != "" {
				r := cl.WaitPhase(name, 60*time.Second, api.PhaseNeedsResolution)
				if r.Status.WaitingOn == nil || r.Status.WaitingOn.StepKey != c.resolve {
					t.Fatalf("NeedsResolution waiting on %+v, want %s", r.Status.WaitingOn, c.resolve)
				}
				cl.RetryAsPerson(name)
			}
			r := cl.WaitPhase(name, 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
			if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "counted: counted c1" {
				t.Fatalf("run ended %s/%s (%s) answer %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer)
			}
			if got := cl.Counted(); len(got) != 1 {
				t.Errorf("the tool ran %d times (%v), want 1", len(got), got)
			}
			turnsServedOnce(t, cl.Env, "crash", 2)
		})
	}
}
