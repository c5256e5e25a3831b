package api

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

func createHelloAgent(t *testing.T, e *Env) {
	t.Helper()
	if st := e.Do("PUT", "/v2/agents/hello-agent", nodusAgentYAMLAsJSON, nil); st != 201 {
		t.Fatalf("create hello-agent: HTTP %d", st)
	}
}

const nodusAgentYAMLAsJSON = `{"apiVersion": "nodus.dev/v1", "kind": "Agent", "metadata": {"name": "hello-agent"},
  "spec": {"system": "You are a careful assistant.", "model": {"access": "Nodus"}, "perRunMaxCostUSD": "0.50"}}`

func TestKeepAliveMessagesOnce(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, nodusScript)
	e.Start()
	createHelloAgent(t, e)
	run := `{"kind": "AgentRun", "metadata": {"name": "chat"}, "spec": {"agent": "hello-agent", "input": "Say hello", "keepAlive": true}}`
	if st := e.Do("POST", "/v2/agentruns", run, nil); st != 201 {
		t.Fatalf("create run: HTTP %d", st)
	}
	r := e.WaitPhase("chat", 10*time.Second, api.PhaseWaiting)
	if r.Status.Reason != api.ReasonMessage || r.Status.Answer == nil || r.Status.Answer.Preview != "Hello." {
		t.Fatalf("after the first turn: %s/%s answer %+v", r.Status.Phase, r.Status.Reason, r.Status.Answer)
	}
	// Waiting for a message uses no model.
	time.Sleep(300 * time.Millisecond)
	if n := AgentCalls(e.Model); n != 1 {
		t.Fatalf("model calls while idle = %d, want 1", n)
	}
	// runs wait on an idle keep-alive run returns: the turn is done.
	if res := e.MustCLI(0, "runs", "wait", "chat"); !strings.Contains(res.Stdout, `"answer": "Hello."`) {
		t.Errorf("runs wait on an idle run printed %q", res.Stdout)
	}
	// The Nodus form, twice with the same key: delivered once.
	e.MustCLI(0, "agentrun", "send", "chat", "Now do the same for the staging logs", "--key", "staging-1")
	res := e.MustCLI(0, "agentrun", "send", "chat", "Now do the same for the staging logs", "--key", "staging-1")
	if !strings.Contains(strings.ToLower(res.Stdout+res.Stderr), "already") {
		t.Errorf("second send with the same key should say it was already delivered: %q %q", res.Stdout, res.Stderr)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r = e.GetRun("chat")
		if r.Status.Answer != nil && r.Status.Answer.Preview == "Now the staging logs: all quiet." && r.Status.Phase == api.PhaseWaiting {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r.Status.Answer == nil || r.Status.Answer.Preview != "Now the staging logs: all quiet." {
		t.Fatalf("second turn answer: %+v (%s)", r.Status.Answer, r.Status.Phase)
	}
	time.Sleep(300 * time.Millisecond)
	if n := e.Model.CountTurn("chat", 2); n != 0 {
		t.Errorf("a repeated message key reached the model (%d calls for turn 3)", n)
	}
	var msgs struct{ Items []api.Message }
	e.Do("GET", "/v2/agentruns/chat/messages", nil, &msgs)
	if len(msgs.Items) != 1 {
		t.Errorf("messages stored = %d, want 1", len(msgs.Items))
	}
	// REST form of a message, then cancel; a finished run refuses messages.
	e.MustCLI(0, "cancel", "agentrun/chat")
	e.WaitPhase("chat", 10*time.Second, api.PhaseCancelled)
	var errBody api.Error
	if st := e.Do("POST", "/v2/agentruns/chat/messages", `{"payload": "hello?", "messageKey": "late"}`, &errBody); st != 409 || errBody.Code != api.CodeAgentRunFinished {
		t.Errorf("message to a finished run: HTTP %d %+v", st, errBody)
	}
}

func TestDeadlineWhileWaiting(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, nodusScript)
	e.Start()
	createHelloAgent(t, e)
	run := `{"kind": "AgentRun", "metadata": {"name": "bounded"}, "spec": {"agent": "hello-agent", "input": "Say hello", "keepAlive": true, "deadline": "2s"}}`
	if st := e.Do("POST", "/v2/agentruns", run, nil); st != 201 {
		t.Fatalf("create run: HTTP %d", st)
	}
	e.WaitPhase("bounded", 10*time.Second, api.PhaseWaiting)
	r := e.WaitPhase("bounded", 10*time.Second, api.PhaseFailed)
	if r.Status.Reason != api.ReasonDeadlineExceeded {
		t.Errorf("reason = %s, want DeadlineExceeded", r.Status.Reason)
	}
	if n := AgentCalls(e.Model); n != 1 {
		t.Errorf("model calls = %d, want 1 (no call after the deadline)", n)
	}
	// runs wait exits 1 for a failed run.
	e.MustCLI(1, "runs", "wait", "bounded")

	// A deadline that passes mid-call fails the run too.
	run = `{"kind": "AgentRun", "metadata": {"name": "slow"}, "spec": {"agent": "hello-agent", "input": "Take your time", "deadline": "1s"}}`
	e.Do("POST", "/v2/agentruns", run, nil)
	r = e.WaitPhase("slow", 10*time.Second, api.PhaseFailed, api.PhaseSucceeded)
	if r.Status.Phase != api.PhaseFailed || r.Status.Reason != api.ReasonDeadlineExceeded {
		t.Errorf("slow run: %s/%s", r.Status.Phase, r.Status.Reason)
	}
}

func TestTimelineFollow(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, QuickstartScript)
	e.Start()
	e.Do("POST", "/v2/agents", `{"definition": {"id": "notes", "tools": ["write", "ask_person"]}}`, nil)
	var run api.AgentRun
	e.Do("POST", "/v2/agents/notes/runs", `{"input": {"content": "Ask me which region to cover, then write region.md about it."}}`, &run)
	name := run.Metadata.Name
	e.WaitPhase(name, 10*time.Second, api.PhaseWaiting)
	go func() {
		time.Sleep(500 * time.Millisecond)
		e.Do("POST", "/v2/agentruns/"+name+"/messages", `{"payload": "Africa"}`, nil)
	}()
	// --follow streams until the run ends, then exits.
	res := e.MustCLI(0, "runs", "timeline", name, "--follow")
	for _, want := range []string{"run.created", "t0/model", "run.question", "Which region should I cover?", "message.received", "t1/tool/0", "run.succeeded"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("timeline lacks %q:\n%s", want, res.Stdout)
		}
	}
	// Resuming after an event id gives only what came later.
	evs := e.Events(name)
	if len(evs) < 5 {
		t.Fatalf("events = %d", len(evs))
	}
	var page struct{ Items []api.Event }
	e.Do("GET", "/v2/agentruns/"+name+"/events?after=3", nil, &page)
	if len(page.Items) != len(evs)-3 || page.Items[0].Seq != 4 {
		t.Errorf("events after 3: %d items starting at %d", len(page.Items), page.Items[0].Seq)
	}
	// The SSE stream resumes after Last-Event-ID and ends with "end" once the run has finished.
	req, _ := http.NewRequest("GET", e.URL+"/v2/agentruns/"+name+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+e.Token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", "3")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	stream := string(body)
	if resp.Header.Get("Content-Type") != "text/event-stream" || strings.Contains(stream, "id: 3\n") || !strings.Contains(stream, "id: 4\n") || !strings.HasSuffix(strings.TrimSpace(stream), `"reason":"Completed"}`) || !strings.Contains(stream, "event: end") {
		t.Errorf("SSE stream after Last-Event-ID 3:\n%s", stream)
	}
}
