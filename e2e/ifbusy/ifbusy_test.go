package ifbusy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/model/fake"
)

// The scripted conversation: the first call writes notes.txt, the second (made slow by the test)
// is in flight when the message arrives. The scripted server picks a turn by the number of
// assistant messages in the request, so the call after an interrupt (the same number) is
// answered by the same turn: the tests swap in fastScript before they send the message.
const slowScript = `
entries:
- name: job
  match: "Slow job"
  turns:
  - tool_calls: [{name: write, input: {path: notes.txt, content: "v1"}}]
  - text: "first done"
    latency: 60s
  - text: "then: {{last_user}}"
`

// fastScript is slowScript without the latency, the second turn answering the message that
// stopped it.
const fastScript = `
entries:
- name: job
  match: "Slow job"
  turns:
  - tool_calls: [{name: write, input: {path: notes.txt, content: "v1"}}]
  - text: "handled: {{last_user}}"
  - text: "then: {{last_user}}"
`

const writerAgent = `{"metadata":{"name":"writer"},"spec":{"tools":["write","dev_count"]}}`

func setScript(t *testing.T, e *Env, script string) {
	t.Helper()
	sc, err := fake.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	e.Model.SetScript(sc)
}

// waitCall waits until the scripted server has received call turn of entry at least n times.
func waitCall(t *testing.T, e *Env, entry string, turn, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for e.Model.CountTurn(entry, turn) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the scripted server got %d calls of %s turn %d, want %d\nsteps: %s", e.Model.CountTurn(entry, turn), entry, turn, n, StepList(e.Steps("r1")))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func startSlow(t *testing.T, e *Env, spec string) {
	t.Helper()
	agent := writerAgent
	if spec != "" {
		agent = `{"metadata":{"name":"writer"},"spec":{"tools":["write","dev_count"],` + spec + `}}`
	}
	if st := e.Do("PUT", "/v2/agents/writer", agent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	if st := e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"r1"},"spec":{"agent":"writer","input":"Slow job: write notes"}}`, nil); st != 201 {
		t.Fatalf("create run: HTTP %d", st)
	}
	waitCall(t, e, "job", 1, 1) // the slow call is in flight
}

// TestRejectAndEnqueue: while a model call is slow, a message with ifBusy reject is refused
// (409 RunBusy, by the API and the CLI) and nothing is stored; one with enqueue (the default)
// shows as queued and starts the next turn once the first ends.
func TestRejectAndEnqueue(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, strings.Replace(slowScript, "60s", "4s", 1))
	e.Start()
	startSlow(t, e, "")

	var aerr api.Error
	if st := e.Do("POST", "/v2/agentruns/r1/messages", `{"payload":"stop that","ifBusy":"reject","messageKey":"k1"}`, &aerr); st != 409 || aerr.Code != api.CodeRunBusy || aerr.Field != "ifBusy" {
		t.Errorf("reject to a busy run: HTTP %d %+v, want 409 RunBusy at ifBusy", st, aerr)
	}
	if r := e.CLI(e.Dir, "runs", "message", "r1", "--content", "stop that", "--if-busy", "reject"); r.Code == 0 || !strings.Contains(r.Stderr, "RunBusy") {
		t.Errorf("runs message --if-busy reject: exit %d, %q; want a failure naming RunBusy", r.Code, r.Stderr)
	}
	if r := e.CLI(e.Dir, "runs", "message", "r1", "--content", "x", "--if-busy", "soon"); r.Code == 0 || !strings.Contains(r.Stderr, "--if-busy") {
		t.Errorf("runs message --if-busy soon: exit %d, %q; want a usage error naming --if-busy", r.Code, r.Stderr)
	}
	if st := e.Do("POST", "/v2/agentruns/r1/messages", `{"payload":"x","ifBusy":"later"}`, &aerr); st != 422 || aerr.Field != "ifBusy" {
		t.Errorf("ifBusy later: HTTP %d %+v, want 422 naming ifBusy", st, aerr)
	}
	var msgs struct{ Items []api.Message }
	e.Do("GET", "/v2/agentruns/r1/messages", nil, &msgs)
	if len(msgs.Items) != 0 {
		t.Fatalf("rejected messages were stored: %+v", msgs.Items)
	}
	for _, ev := range e.Events("r1") {
		if strings.HasPrefix(string(ev.Type), "message.") {
			t.Errorf("a rejected message left event %s %q", ev.Type, ev.Message)
		}
	}

	res := e.MustCLI(0, "runs", "message", "r1", "--content", "and the summary")
	if !strings.Contains(res.Stdout, "queued") {
		t.Errorf("runs message to a busy run printed %q, want it to say queued", res.Stdout)
	}
	ev := WaitEvent(t, e, "r1", api.EventMessageQueued)
	var data struct{ IfBusy api.IfBusy }
	if json.Unmarshal(ev.Data, &data); data.IfBusy != api.IfBusyEnqueue {
		t.Errorf("message.queued data %s, want ifBusy enqueue", ev.Data)
	}
	e.Do("GET", "/v2/agentruns/r1/messages", nil, &msgs)
	if len(msgs.Items) != 1 || msgs.Items[0].IfBusy != api.IfBusyEnqueue {
		t.Errorf("messages = %+v, want the queued one with ifBusy enqueue", msgs.Items)
	}
	r := e.WaitPhase("r1", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "then: and the summary" {
		t.Fatalf("run %s/%s answer %+v, want the queued message answered after the slow turn\nsteps: %s", r.Status.Phase, r.Status.Reason, r.Status.Answer, StepList(e.Steps("r1")))
	}
	if s := FindStep(e.Steps("r1"), "t1/model"); s == nil || s.State != api.StepCompleted {
		t.Errorf("the slow call was not left to finish: %+v", s)
	}
}

// TestInterrupt: a message with ifBusy interrupt while a model call is slow cancels the call
// (recorded Interrupted, not repeated), shows run.interrupted on the timeline, and starts the
// next turn; the run finishes with its answer, and the tool call before it ran once.
func TestInterrupt(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, slowScript)
	e.Start()
	startSlow(t, e, "")
	setScript(t, e, fastScript)
	var posted struct {
		Message api.Message
		Created bool
	}
	if st := e.Do("POST", "/v2/agentruns/r1/messages", `{"payload":"use the short form","ifBusy":"interrupt"}`, &posted); st != 202 || posted.Message.IfBusy != api.IfBusyInterrupt {
		t.Fatalf("interrupt: HTTP %d %+v", st, posted)
	}
	WaitEvent(t, e, "r1", api.EventMessageQueued)
	ev := WaitEvent(t, e, "r1", api.EventRunInterrupted)
	if ev.StepKey != "t1/model" {
		t.Errorf("run.interrupted at %q, want t1/model", ev.StepKey)
	}
	r := e.WaitPhase("r1", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "handled: use the short form" {
		t.Fatalf("run %s/%s answer %+v\nsteps: %s", r.Status.Phase, r.Status.Message, r.Status.Answer, StepList(e.Steps("r1")))
	}
	steps := e.Steps("r1")
	if s := FindStep(steps, "t1/model"); s == nil || s.State != api.StepInterrupted || s.Attempt != 1 {
		t.Errorf("the cancelled call: %+v, want Interrupted at attempt 1", s)
	}
	if s := FindStep(steps, "t1/stop"); s == nil || s.Kind != api.StepKindStop {
		t.Errorf("no stop step t1/stop: %s", StepList(steps))
	}
	if s := FindStep(steps, "t2/model"); s == nil || s.State != api.StepCompleted {
		t.Errorf("the next turn's call: %+v", s)
	}
	if s := FindStep(steps, "t0/tool/0"); s == nil || s.Attempt != 1 {
		t.Errorf("the write before the interrupt: %+v, want run once", s)
	}
	// The slow call reached the model once; the next turn's call once.
	if n := e.Model.CountTurn("job", 1); n != 2 {
		t.Errorf("the scripted server got %d calls of turn 1, want 2 (the cancelled one, the next turn's)", n)
	}
	for _, c := range e.Model.Calls() {
		if c.Turn == 1 {
			if c.Completed {
				t.Errorf("the first call of turn 1 (the cancelled one) was answered to the end: %+v", c)
			}
			break
		}
	}
	if len(r.Status.Turns) != 2 {
		t.Errorf("status.turns = %+v, want the interrupted turn and the next", r.Status.Turns)
	}
	// The cancelled call may have been billed for what it streamed: its cost is unknown, never
	// $0, so the run's is "at least" the known calls', and it counts as the turn's call.
	if c := r.Status.Cost; c == nil || !strings.HasPrefix(c.TotalUSD, "at least") {
		t.Errorf("cost %+v, want \"at least ...\" (the cancelled call's cost is unknown)", c)
	}
	if len(r.Status.Turns) > 0 && (r.Status.Turns[0].ModelCalls != 2 || !strings.HasPrefix(r.Status.Turns[0].CostUSD, "at least")) {
		t.Errorf("the interrupted turn: %+v, want 2 model calls, cost \"at least ...\"", r.Status.Turns[0])
	}
}

// TestRollback: on a keep-alive run, a turn that wrote files is discarded by a message with
// ifBusy rollback while its last call is slow: its steps are marked rolled back, the run folder
// is as the turn found it, the cost of its calls still counts, and the new message's turn
// continues from the conversation before it.
func TestRollback(t *testing.T) {
	t.Parallel()
	script := `
entries:
- name: job
  match: "Slow job"
  turns:
  - tool_calls: [{name: write, input: {path: notes.txt, content: "v1"}}]
  - text: "first done"
  - tool_calls: [{name: write, input: {path: notes.txt, content: "v2"}}, {name: write, input: {path: extra.txt, content: "new"}}]
  - text: "second done"
    latency: 60s
`
	e := NewEnv(t, script)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/writer", writerAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"r1"},"spec":{"agent":"writer","input":"Slow job: write notes","keepAlive":true}}`, nil)
	e.WaitPhase("r1", 30*time.Second, api.PhaseWaiting)
	before := e.GetRun("r1").Status.Cost
	// Not busy (waiting for a message): rollback is taken as any message.
	var posted struct{ Message api.Message }
	if st := e.Do("POST", "/v2/agentruns/r1/messages", `{"payload":"rewrite it","ifBusy":"rollback"}`, &posted); st != 202 || posted.Message.IfBusy != "" {
		t.Fatalf("a message to a waiting run: HTTP %d %+v, want taken with no mode", st, posted)
	}
	waitCall(t, e, "job", 3, 1)
	if got := e.MustCLI(0, "runs", "read-file", "r1", "extra.txt").Stdout; got != "new" {
		t.Fatalf("extra.txt = %q before the rollback", got)
	}
	setScript(t, e, strings.Replace(script, `tool_calls: [{name: write, input: {path: notes.txt, content: "v2"}}, {name: write, input: {path: extra.txt, content: "new"}}]`, `text: "rolled back; now: {{last_user}}"`, 1))
	res := e.MustCLI(0, "runs", "message", "r1", "--content", "never mind", "--if-busy", "rollback")
	if !strings.Contains(res.Stdout, "rollback") {
		t.Errorf("runs message --if-busy rollback printed %q", res.Stdout)
	}
	ev := WaitEvent(t, e, "r1", api.EventTurnRolledBack)
	if !strings.Contains(ev.Message, "2 files") {
		t.Errorf("turn.rolledBack says %q, want 2 files restored", ev.Message)
	}
	r := e.WaitPhase("r1", 60*time.Second, api.PhaseWaiting)
	for r.Status.Answer == nil || r.Status.Answer.Preview != "rolled back; now: never mind" {
		if ev := e.Events("r1"); len(ev) > 0 && ev[len(ev)-1].Type == api.EventRunFailed {
			t.Fatalf("run failed: %s", ev[len(ev)-1].Message)
		}
		time.Sleep(50 * time.Millisecond)
		r = e.GetRun("r1")
		if r.Status.Phase == api.PhaseWaiting && r.Status.Answer != nil && r.Status.Answer.Preview == "second done" {
			t.Fatalf("the rolled-back turn answered")
		}
	}
	if got := e.MustCLI(0, "runs", "read-file", "r1", "notes.txt").Stdout; got != "v1" {
		t.Errorf("notes.txt = %q after the rollback, want v1 (as the turn found it)", got)
	}
	if res := e.CLI(e.Dir, "runs", "read-file", "r1", "extra.txt"); res.Code == 0 {
		t.Errorf("extra.txt, made by the rolled-back turn, is still there: %q", res.Stdout)
	}
	steps := e.Steps("r1")
	for _, k := range []string{"m0", "t2/model", "t2/tool/0", "t2/tool/1", "t3/model"} {
		if s := FindStep(steps, k); s == nil || !s.RolledBack {
			t.Errorf("step %s not marked rolled back: %s", k, StepList(steps))
		}
	}
	for _, k := range []string{"t0/model", "t0/tool/0", "t1/model", "m1", "t4/model"} {
		if s := FindStep(steps, k); s == nil || s.RolledBack {
			t.Errorf("step %s: %+v, want present and not rolled back: %s", k, s, StepList(steps))
		}
	}
	// The rolled-back turn's completed call still counts.
	after := r.Status.Cost
	if before == nil || after == nil || after.TotalUSD == before.TotalUSD {
		t.Errorf("cost before %+v, after %+v: the rolled-back turn's cost does not count", before, after)
	}
	if len(r.Status.Turns) != 3 {
		t.Errorf("status.turns = %d entries, want 3 (the rolled-back turn's kept)", len(r.Status.Turns))
	}
}

// TestAgentDefaultAndRefusals: spec.ifBusy is validated with the API's field errors and is the
// default of a message that names no mode.
func TestAgentDefaultAndRefusals(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, strings.Replace(slowScript, "60s", "4s", 1))
	e.Start()
	var aerr api.Error
	if st := e.Do("PUT", "/v2/agents/bad", `{"metadata":{"name":"bad"},"spec":{"ifBusy":"sometimes"}}`, &aerr); st != 422 || aerr.Field != "spec.ifBusy" {
		t.Errorf("spec.ifBusy sometimes: HTTP %d %+v, want 422 at spec.ifBusy", st, aerr)
	}
	if st := e.Do("PUT", "/v2/agents/hb", `{"metadata":{"name":"hb"},"spec":{"harness":"claude-agent","ifBusy":"rollback"}}`, &aerr); st != 201 {
		t.Errorf("ifBusy rollback on claude-agent: HTTP %d %+v, want 201 (harnesses take rollback)", st, aerr)
	}
	wf := `{"metadata":{"name":"wf"},"spec":{"ifBusy":"interrupt","workflow":{"v": 2, "name": "w", "schemas": {"In": {"type": "object"}, "Out": {"type": "object"}},
		"input": {"schemaId": "In"}, "output": {"schemaId": "Out"}, "root": {"node": "agent", "label": "a", "instructions": "x", "as": "a"}}}}`
	if st := e.Do("PUT", "/v2/agents/wf", wf, &aerr); st != 422 || aerr.Field != "spec.ifBusy" || !strings.Contains(aerr.Message, "workflow") {
		t.Errorf("ifBusy interrupt on a workflow agent: HTTP %d %+v, want 422 at spec.ifBusy saying why", st, aerr)
	}
	startSlow(t, e, `"ifBusy":"reject"`)
	if st := e.Do("POST", "/v2/agentruns/r1/messages", `{"payload":"hi"}`, &aerr); st != 409 || aerr.Code != api.CodeRunBusy {
		t.Errorf("a message naming no mode to a busy run of an agent with ifBusy reject: HTTP %d %+v, want 409 RunBusy", st, aerr)
	}
	// The message's own mode wins over the agent's.
	var posted struct{ Message api.Message }
	if st := e.Do("POST", "/v2/agentruns/r1/messages", `{"payload":"later","ifBusy":"enqueue"}`, &posted); st != 202 || posted.Message.IfBusy != api.IfBusyEnqueue {
		t.Errorf("enqueue over the agent's reject: HTTP %d %+v", st, posted)
	}
	e.WaitPhase("r1", 60*time.Second, api.PhaseSucceeded)
	var done api.Error
	if st := e.Do("POST", "/v2/agentruns/r1/messages", `{"payload":"late","ifBusy":"interrupt"}`, &done); st != 409 || done.Code != api.CodeAgentRunFinished {
		t.Errorf("a message to a finished run: HTTP %d %+v", st, done)
	}
}
