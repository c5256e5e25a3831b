package e2etest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/model/fake"
)

// The ifBusy interrupt scenario every harness runs (e2e/ifbusy, e2e/harnessopencode).

// HarnessInterruptScript: a tool call, then a slow call the message interrupts. What the
// harness's history holds of the interrupted call is its own (Claude Code's and Codex's
// interrupts leave no assistant message; the gateway's stop text, for a harness it cannot
// interrupt so, is one), so HarnessInterrupt swaps in harnessAfterInterrupt, which answers the
// call after the message fast whichever turn it is.
func HarnessInterruptScript(tool string) string {
	return harnessInterruptHead(tool) + `  - text: "first done"
    latency: 60s
  - text: "then: {{last_user}}"
`
}

func harnessAfterInterrupt(tool string) string {
	return harnessInterruptHead(tool) + `  - text: "then: {{last_user}}"
  - text: "then: {{last_user}}"
`
}

func harnessInterruptHead(tool string) string {
	return `
entries:
- name: router
  match: "Route this request"
  turns:
  - text: '{"family": "sonnet", "confidence": 0.9}'
- name: job
  match: "Slow job"
  turns:
  - tool_calls: [{name: ` + tool + `, input: {label: once}}]
`
}

// HarnessInterrupt: on harness name, a message with ifBusy interrupt while the harness's second
// model call is slow stops the turn (run.interrupted), the call is recorded Interrupted, and the
// message is the next turn; the runner is SIGKILLed right after, before that turn's model call,
// and (kill) a restart replays the harness through the stopped call (answered from the stop step, the
// cancelled call not sent again) to the run's end. The tool call before it ran once.
//
// own: the harness is stopped through its own protocol (harness.Interrupter), not answered the
// gateway's stop text.
func HarnessInterrupt(t *testing.T, e *Env, name, tool string, own, kill bool) {
	if kill {
		e.Start("AGENTRUN_DEV_PAUSE_AT=before-intent:t2/model")
	} else {
		e.Start()
	}
	if st := e.Do("PUT", "/v2/agents/h", `{"metadata":{"name":"h"},"spec":{"harness":"`+name+`","tools":["dev_count"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"r1"},"spec":{"agent":"h","input":"Slow job: count once"}}`, nil)
	deadline := time.Now().Add(120 * time.Second)
	for e.Model.CountTurn("job", 1) < 1 {
		if r := e.GetRun("r1"); api.Finished(r.Status.Phase) || time.Now().After(deadline) {
			t.Fatalf("the slow call never came: run %s %s; steps %s", r.Status.Phase, r.Status.Message, StepList(e.Steps("r1")))
		}
		time.Sleep(50 * time.Millisecond)
	}
	RejectBusy(t, e, "r1")
	sc, err := fake.ParseScript([]byte(harnessAfterInterrupt(tool)))
	if err != nil {
		t.Fatal(err)
	}
	e.Model.SetScript(sc)
	e.MustCLI(0, "runs", "message", "r1", "--content", "use the short form", "--if-busy", "interrupt")
	ev := WaitEvent(t, e, "r1", api.EventRunInterrupted)
	if ev.StepKey != "t1/model" {
		t.Errorf("run.interrupted at %q, want t1/model", ev.StepKey)
	}
	if kill {
		e.WaitStderr("AGENTRUN_DEV_PAUSED before-intent t2/model", 60*time.Second)
		e.Kill()
		e.Start()
	}
	r := e.WaitPhase("r1", 120*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if testing.Verbose() {
		for _, ev := range e.Events("r1") {
			t.Logf("%s %s %s %s", ev.Time.Format("15:04:05.000"), ev.Type, ev.StepKey, ev.Message)
		}
	}
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || !strings.HasPrefix(r.Status.Answer.Preview, "then: ") || !strings.Contains(r.Status.Answer.Preview, "use the short form") {
		t.Fatalf("run %s (%s), answer %+v; steps %s", r.Status.Phase, r.Status.Message, r.Status.Answer, StepList(e.Steps("r1")))
	}
	if got := e.Counted(); !slices.Equal(got, []string{"once"}) {
		t.Errorf("dev_count ran %v, want once", got)
	}
	steps := e.Steps("r1")
	if s := FindStep(steps, "t1/model"); s == nil || s.State != api.StepInterrupted {
		t.Errorf("the slow call: %+v, want Interrupted; steps %s", s, StepList(steps))
	}
	if s := FindStep(steps, "t1/stop"); s == nil {
		t.Errorf("no stop step: %s", StepList(steps))
	}
	// How the turn was stopped shows in the harness's history: its own interrupt leaves no
	// answer to the stopped call (the call after the message has 1 assistant message), the
	// gateway's stop text is one (2).
	var last fake.Call
	for _, c := range e.Model.Calls() {
		if c.Entry == "job" {
			last = c
		}
	}
	if want := map[bool]int{true: 1, false: 2}[own]; last.Turn != want {
		t.Errorf("the call after the message had %d assistant messages, want %d (own interrupt protocol: %v)", last.Turn, want, own)
	}
	// The tool call, the slow call, the call after the message: each reached the model server
	// once (the restart's replay was answered from the journal).
	if n := e.Model.CountTurn("job", 0); n != 1 {
		t.Errorf("scripted turn 0 reached the model server %d times, want 1", n)
	}
	if n := e.Model.CountTurn("job", 0) + e.Model.CountTurn("job", 1) + e.Model.CountTurn("job", 2); n != 3 {
		t.Errorf("the model server got %d calls, want 3", n)
	}
}

// RejectBusy: a message with ifBusy reject to busy run is refused (409 RunBusy at ifBusy) and
// nothing of it is stored: no message, no message event.
func RejectBusy(t *testing.T, e *Env, run string) {
	t.Helper()
	var before struct{ Items []api.Message }
	e.Do("GET", "/v2/agentruns/"+run+"/messages", nil, &before)
	var aerr api.Error
	if st := e.Do("POST", "/v2/agentruns/"+run+"/messages", `{"payload":"not now","ifBusy":"reject"}`, &aerr); st != 409 || aerr.Code != api.CodeRunBusy || aerr.Field != "ifBusy" {
		t.Errorf("reject to a busy run: HTTP %d %+v, want 409 RunBusy at ifBusy", st, aerr)
	}
	var after struct{ Items []api.Message }
	e.Do("GET", "/v2/agentruns/"+run+"/messages", nil, &after)
	if len(after.Items) != len(before.Items) {
		t.Errorf("a rejected message was stored: %+v", after.Items)
	}
	for _, ev := range e.Events(run) {
		if strings.HasPrefix(string(ev.Type), "message.") && strings.Contains(ev.Message, "not now") {
			t.Errorf("a rejected message left event %s %q", ev.Type, ev.Message)
		}
	}
}

// HarnessRollbackScript: the input's turn writes notes.txt (v1) and counts once; the message's
// turn writes notes.txt again (v2) and makes extra.txt, then a slow call the rollback stops.
// rollbackScript is what the scripted server answers after the rollback: the harness started
// again has the input's turn only in its history, so the message after the rollback is the
// script's turn 3, answered with a text.
func HarnessRollbackScript(prefix string) (slow, after string) {
	head := `
entries:
- name: router
  match: "Route this request"
  turns:
  - text: '{"family": "sonnet", "confidence": 0.9}'
- name: job
  match: "Slow job"
  turns:
  - tool_calls: [{name: ` + prefix + `write, input: {path: notes.txt, content: "v1"}}]
  - tool_calls: [{name: ` + prefix + `dev_count, input: {label: once}}]
  - text: "first done"
`
	slow = head + `  - tool_calls: [{name: ` + prefix + `write, input: {path: notes.txt, content: "v2"}}]
  - tool_calls: [{name: ` + prefix + `write, input: {path: extra.txt, content: "new"}}]
  - text: "second done"
    latency: 60s
`
	after = head + `  - text: "rolled back; now: {{last_user}}"
`
	return slow, after
}

// HarnessRollback: on harness name (keepAlive), the input's turn is done; a message's turn
// changes the run folder and its last model call is slow; a message with ifBusy reject is
// refused and stored nothing; one with rollback stops the turn (turn.rolledBack), the folder is
// as the turn found it, the turn's steps are marked rolled back, its cost still counts, and the
// harness, started again from the journal without the turn, answers the message. With kill the
// runner is SIGKILLed right after the rollback, before the message's model call: the restart
// replays to the same place (the input turn's tool ran once, no scripted call is made twice).
func HarnessRollback(t *testing.T, e *Env, name, tools string, kill bool, after string) {
	if kill {
		e.Start("AGENTRUN_DEV_PAUSE_AT=before-intent:t6/model")
	} else {
		e.Start()
	}
	if st := e.Do("PUT", "/v2/agents/h", `{"metadata":{"name":"h"},"spec":{"harness":"`+name+`","tools":`+tools+`}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"r1"},"spec":{"agent":"h","input":"Slow job: write notes","keepAlive":true}}`, nil)
	r := e.WaitPhase("r1", 180*time.Second, api.PhaseWaiting, api.PhaseFailed, api.PhaseNeedsResolution)
	if r.Status.Phase != api.PhaseWaiting {
		t.Fatalf("run %s (%s); steps %s", r.Status.Phase, r.Status.Message, StepList(e.Steps("r1")))
	}
	before := r.Status.Cost
	e.MustCLI(0, "runs", "message", "r1", "--content", "rewrite it")
	deadline := time.Now().Add(120 * time.Second)
	for e.Model.CountTurn("job", 5) < 1 {
		if r := e.GetRun("r1"); api.Finished(r.Status.Phase) || time.Now().After(deadline) {
			t.Fatalf("the slow call never came: run %s %s; steps %s", r.Status.Phase, r.Status.Message, StepList(e.Steps("r1")))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := e.MustCLI(0, "runs", "read-file", "r1", "extra.txt").Stdout; got != "new" {
		t.Fatalf("extra.txt = %q before the rollback", got)
	}
	RejectBusy(t, e, "r1")
	sc, err := fake.ParseScript([]byte(after))
	if err != nil {
		t.Fatal(err)
	}
	e.Model.SetScript(sc)
	e.MustCLI(0, "runs", "message", "r1", "--content", "never mind", "--if-busy", "rollback")
	ev := WaitEvent(t, e, "r1", api.EventTurnRolledBack)
	if ev.StepKey != "t5/model" || !strings.Contains(ev.Message, "2 files") {
		t.Errorf("turn.rolledBack at %q says %q, want at t5/model, 2 files restored", ev.StepKey, ev.Message)
	}
	// The drive a rollback ends hands the run back to be driven again: no error in the log.
	quiet := func() {
		t.Helper()
		if strings.Contains(e.Stderr.String(), "drive ended with an error") {
			t.Errorf("the rollback's hand-back is logged as a failed drive:\n%s", QuietLog(e.Stderr.String()))
		}
	}
	if kill {
		e.WaitStderr("AGENTRUN_DEV_PAUSED before-intent t6/model", 120*time.Second)
		quiet()
		e.Kill()
		e.Start()
	}
	deadline = time.Now().Add(180 * time.Second)
	for {
		r = e.GetRun("r1")
		if r.Status.Phase == api.PhaseWaiting && r.Status.Answer != nil && strings.HasPrefix(r.Status.Answer.Preview, "rolled back; now: ") {
			break
		}
		if api.Finished(r.Status.Phase) || r.Status.Phase == api.PhaseNeedsResolution || time.Now().After(deadline) {
			t.Fatalf("run %s (%s), answer %+v; steps %s", r.Status.Phase, r.Status.Message, r.Status.Answer, StepList(e.Steps("r1")))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !kill {
		quiet()
	}
	if testing.Verbose() {
		for _, ev := range e.Events("r1") {
			t.Logf("%s %s %s %s", ev.Time.Format("15:04:05.000"), ev.Type, ev.StepKey, ev.Message)
		}
	}
	if !strings.Contains(r.Status.Answer.Preview, "never mind") {
		t.Errorf("answer %q does not answer the message that rolled the turn back", r.Status.Answer.Preview)
	}
	if got := e.MustCLI(0, "runs", "read-file", "r1", "notes.txt").Stdout; got != "v1" {
		t.Errorf("notes.txt = %q after the rollback, want v1 (as the turn found it)", got)
	}
	if res := e.CLI(e.Dir, "runs", "read-file", "r1", "extra.txt"); res.Code == 0 {
		t.Errorf("extra.txt, made by the rolled-back turn, is still there: %q", res.Stdout)
	}
	steps := e.Steps("r1")
	for _, k := range []string{"m0", "t3/model", "t3/tool/0", "t4/model", "t4/tool/0", "t5/model"} {
		if s := FindStep(steps, k); s == nil || !s.RolledBack {
			t.Errorf("step %s not marked rolled back: %s", k, StepList(steps))
		}
	}
	for _, k := range []string{"t0/model", "t0/tool/0", "t1/tool/0", "t2/model", "m1", "t6/model"} {
		if s := FindStep(steps, k); s == nil || s.RolledBack {
			t.Errorf("step %s: %+v, want present and not rolled back: %s", k, s, StepList(steps))
		}
	}
	if s := FindStep(steps, "t5/model"); s == nil || s.State != api.StepInterrupted {
		t.Errorf("the slow call: %+v, want Interrupted", s)
	}
	// The rolled-back turn's calls still count; the stopped one's cost is unknown, never $0.
	if c := r.Status.Cost; before == nil || c == nil || c.TotalUSD == before.TotalUSD || !strings.HasPrefix(c.TotalUSD, "at least") {
		t.Errorf("cost before %+v, after %+v: want more, and \"at least\" (the stopped call's cost is unknown)", before, c)
	}
	if got := e.Counted(); !slices.Equal(got, []string{"once"}) {
		t.Errorf("dev_count ran %v, want once", got)
	}
	// Each scripted call reached the model server once: the restarted harness's replay of the
	// input's turn was answered from the journal.
	for turn := 0; turn <= 5; turn++ {
		want := 1
		if turn == 3 {
			want = 2 // the write of v2, then (the script swapped) the answer after the rollback
		}
		if n := e.Model.CountTurn("job", turn); n != want {
			t.Errorf("scripted turn %d reached the model server %d times, want %d", turn, n, want)
		}
	}
}

// WaitEvent waits (a generous deadline: no timing is asserted) for an event of typ on run.
func WaitEvent(t *testing.T, e *Env, run string, typ api.EventType) api.Event {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		for _, ev := range e.Events(run) {
			if ev.Type == typ {
				return ev
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event on %s; steps: %s", typ, run, StepList(e.Steps(run)))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StepList is the run's steps as KEY:STATE, for a failure's message.
func StepList(steps []api.Step) string {
	var b strings.Builder
	for _, s := range steps {
		b.WriteString(s.Key + ":" + string(s.State))
		if s.RolledBack {
			b.WriteString("(rolled back)")
		}
		b.WriteString(" ")
	}
	return b.String()
}

// FindStep is the step of key (nil: none).
func FindStep(steps []api.Step, key string) *api.Step {
	for i := range steps {
		if steps[i].Key == key {
			return &steps[i]
		}
	}
	return nil
}
