package otel

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/telemetry"
)

// script: a run that calls the counting tool, then answers; a slow variant whose second model
// call is slow enough to kill the server during it.
const script = `
entries:
  - name: tool
    match: "Count once"
    turns:
      - tool_calls:
          - name: dev_count
            input: {label: "c1", sleep_ms: 0}
      - text: "counted: {{last_tool_result}}"
  - name: slow
    match: "Think slowly"
    turns:
      - tool_calls:
          - name: dev_count
            input: {label: "m1", sleep_ms: 0}
      - text: "thought it through"
        latency: 4s
`

// otelEnv is the environment that points the binary at r; the batch processor exports at once.
func otelEnv(r *receiver, extra ...string) []string {
	return append([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + r.URL, "OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_METRIC_EXPORT_INTERVAL=200",
		"OTEL_SERVICE_NAME=agentrun-e2e", "OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=test"}, extra...)
}

// waitSpans waits until the receiver holds a span named name of the trace, then returns the
// trace's spans.
func waitSpans(t *testing.T, r *receiver, trace, name string, d time.Duration) []span {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		var got []span
		found := false
		for _, s := range r.Spans() {
			if s.TraceID() == trace {
				got = append(got, s)
				found = found || s.Name == name
			}
		}
		if found {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span %q in trace %s; received: %s", name, trace, names(r.Spans()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func names(ss []span) string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name+"@"+s.TraceID()[:8])
	}
	return strings.Join(out, ", ")
}

func named(ss []span, prefix string) []span {
	var out []span
	for _, s := range ss {
		if strings.HasPrefix(s.Name, prefix) {
			out = append(out, s)
		}
	}
	return out
}

func wantAttr(t *testing.T, s span, k string, want any) {
	t.Helper()
	got, ok := s.Attr(k)
	if !ok {
		t.Errorf("span %s has no %s", s.Name, k)
		return
	}
	if want != nil && got != want {
		t.Errorf("span %s: %s = %v (%T), want %v", s.Name, k, got, got, want)
	}
}

// TestToolRunTrace: a run with a tool call is one trace in the run's own trace id: invoke_agent
// with the agent's attributes, under it chat spans with usage and cost and an execute_tool span
// with the call's id; content is captured when asked for; the GenAI client metrics go out too.
func TestToolRunTrace(t *testing.T) {
	t.Parallel()
	r := newHTTPReceiver(t)
	e := NewEnv(t, script)
	e.Start(otelEnv(r, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true", "OTEL_EXPORTER_OTLP_HEADERS=x-team=agents")...)
	name := StartCrashRun(t, e, "Count once")
	run := e.WaitPhase(name, 30*time.Second, api.PhaseSucceeded)
	trace := telemetry.RunTraceID(run.Metadata.UID).String()
	spans := waitSpans(t, r, trace, "invoke_agent counter", 15*time.Second)

	agent := named(spans, "invoke_agent ")
	if len(agent) != 1 {
		t.Fatalf("invoke_agent spans: %s", names(spans))
	}
	a := agent[0]
	r.mu.Lock()
	if len(r.headers) == 0 || r.headers[0] != "agents" {
		t.Errorf("exports' x-team headers %v, want OTEL_EXPORTER_OTLP_HEADERS's", r.headers)
	}
	r.mu.Unlock()
	if a.Service != "agentrun-e2e" {
		t.Errorf("service.name %q, want OTEL_SERVICE_NAME's", a.Service)
	}
	wantAttr(t, a, "gen_ai.operation.name", "invoke_agent")
	wantAttr(t, a, "gen_ai.agent.name", "counter")
	var ag api.Agent
	e.Do("GET", "/v2/agents/counter", nil, &ag)
	wantAttr(t, a, "gen_ai.agent.id", ag.Metadata.UID)
	wantAttr(t, a, "gen_ai.agent.version", run.Status.AgentRevision)
	wantAttr(t, a, "gen_ai.conversation.id", name)
	wantAttr(t, a, "gen_ai.provider.name", "anthropic")
	if len(a.ParentSpanId) != 0 {
		t.Errorf("invoke_agent of a run created without traceparent has a parent")
	}
	hasEvent := false
	for _, ev := range a.Events {
		hasEvent = hasEvent || ev.Name == "run.succeeded"
	}
	if !hasEvent {
		t.Errorf("invoke_agent has no run.succeeded event: %v", a.Events)
	}

	// The router's call (it picks the turn's model) and the two turns.
	chats := named(spans, "chat ")
	if len(chats) != 3 {
		t.Fatalf("want 3 chat spans, got %s", names(spans))
	}
	routed := 0
	for _, c := range chats {
		if v, _ := c.Attr("agentrun.router"); v == true {
			routed++
			wantAttr(t, c, "gen_ai.usage.input_tokens", nil)
			wantAttr(t, c, "agentrun.cost_micros", nil)
			continue
		}
		if c.ParentID() != a.SpanID() {
			t.Errorf("chat span's parent %s, want invoke_agent %s", c.ParentID(), a.SpanID())
		}
		wantAttr(t, c, "gen_ai.operation.name", "chat")
		wantAttr(t, c, "gen_ai.request.model", nil)
		wantAttr(t, c, "gen_ai.response.model", nil)
		wantAttr(t, c, "gen_ai.usage.input_tokens", nil)
		wantAttr(t, c, "gen_ai.usage.output_tokens", nil)
		wantAttr(t, c, "gen_ai.usage.cache_read.input_tokens", nil)
		wantAttr(t, c, "gen_ai.response.finish_reasons", nil)
		wantAttr(t, c, "agentrun.cost_micros", nil)
		in, _ := c.Attr("gen_ai.input.messages")
		if s, _ := in.(string); !strings.Contains(s, "Count once") || !json.Valid([]byte(s)) {
			t.Errorf("chat span's captured input %q lacks the prompt", s)
		}
	}
	if routed != 1 {
		t.Errorf("%d chat spans of the router, want 1", routed)
	}
	tools := named(spans, "execute_tool ")
	if len(tools) != 1 || tools[0].Name != "execute_tool dev_count" {
		t.Fatalf("execute_tool spans: %s", names(spans))
	}
	wantAttr(t, tools[0], "gen_ai.tool.name", "dev_count")
	wantAttr(t, tools[0], "gen_ai.tool.type", "function")
	wantAttr(t, tools[0], "gen_ai.tool.call.id", nil)
	wantAttr(t, tools[0], "gen_ai.tool.call.arguments", nil)
	if tools[0].ParentID() != a.SpanID() {
		t.Errorf("execute_tool's parent is not invoke_agent")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !(r.Metric("gen_ai.client.token.usage") && r.Metric("gen_ai.client.operation.duration")) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !r.Metric("gen_ai.client.token.usage") || !r.Metric("gen_ai.client.operation.duration") {
		t.Errorf("the GenAI client metrics were not exported")
	}
}

// TestCrashOneTrace: a server killed during a model call and started again (its runner takes
// the run over) leaves one trace; the replayed steps add no span.
func TestCrashOneTrace(t *testing.T) {
	t.Parallel()
	r := newHTTPReceiver(t)
	e := NewEnv(t, script)
	e.Start(otelEnv(r)...)
	name := StartCrashRun(t, e, "Think slowly")
	run := e.GetRun(name)
	trace := telemetry.RunTraceID(run.Metadata.UID).String()
	waitSpans(t, r, trace, "execute_tool dev_count", 20*time.Second)
	// The slow second model call is under way: kill the server during it.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if e.Model.CountTurn("slow", 1) >= 1 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.Proc.Process.Signal(syscall.SIGKILL)
	<-e.Exited
	e.Proc = nil
	e.Start(otelEnv(r)...)
	e.WaitPhase(name, 60*time.Second, api.PhaseSucceeded)
	spans := waitSpans(t, r, trace, "invoke_agent counter", 15*time.Second)
	for _, s := range r.Spans() {
		if s.TraceID() != trace {
			t.Errorf("span %s outside the run's trace", s.Name)
		}
	}
	if n := len(named(spans, "execute_tool ")); n != 1 {
		t.Errorf("%d execute_tool spans, want 1 (the replay adds none): %s", n, names(spans))
	}
	keys := map[string]int{}
	for _, c := range named(spans, "chat ") {
		k, _ := c.Attr("agentrun.step.key")
		keys[k.(string)]++
	}
	if keys["t0/model"] != 1 || keys["t1/model"] != 1 {
		t.Errorf("chat spans by step %v: want t0/model once (not replayed) and t1/model once (its second attempt)", keys)
	}
	takeover := false
	for _, a := range named(spans, "invoke_agent ") {
		for _, ev := range a.Events {
			takeover = takeover || ev.Name == "takeover"
		}
	}
	if !takeover {
		t.Errorf("no takeover event on the second drive's span")
	}
}

// TestTraceparentJoins: a run created with a traceparent joins the caller's trace (over gRPC
// here), and without the content flag no content is on the spans.
func TestTraceparentJoins(t *testing.T) {
	t.Parallel()
	r := newGRPCReceiver(t)
	e := NewEnv(t, script)
	e.Start(otelEnv(r, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_EXPORTER_OTLP_INSECURE=true")...)
	if st := e.Do("PUT", "/v2/agents/counter", `{"metadata":{"name":"counter"},"spec":{"tools":["dev_count"]}}`, nil); st != 201 && st != 200 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	st, body := e.Post("/v2/agentruns", `{"agent":"counter","input":"Count once"}`, map[string]string{"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01"})
	if st != 201 {
		t.Fatalf("create run: HTTP %d %s", st, body)
	}
	var run api.AgentRun
	json.Unmarshal(body, &run)
	e.WaitPhase(run.Metadata.Name, 30*time.Second, api.PhaseSucceeded)
	spans := waitSpans(t, r, callerTrace, "invoke_agent counter", 15*time.Second)
	a := named(spans, "invoke_agent ")[0]
	if a.ParentID() != callerSpan {
		t.Errorf("invoke_agent's parent %s, want the caller's span %s", a.ParentID(), callerSpan)
	}
	for _, s := range spans {
		for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} {
			if _, ok := s.Attr(k); ok {
				t.Errorf("span %s carries %s without OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", s.Name, k)
			}
		}
	}
	if len(named(spans, "execute_tool ")) != 1 {
		t.Errorf("spans: %s", names(spans))
	}
}

// TestUnsetExportsNothing: without the OTEL variables the binary exports nothing (and says so by
// not saying it exports).
func TestUnsetExportsNothing(t *testing.T) {
	t.Parallel()
	r := newHTTPReceiver(t)
	e := NewEnv(t, script)
	// Everything but an endpoint: nothing is configured to receive.
	e.Start("OTEL_SERVICE_NAME=agentrun-e2e", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true")
	name := StartCrashRun(t, e, "Count once")
	e.WaitPhase(name, 30*time.Second, api.PhaseSucceeded)
	time.Sleep(300 * time.Millisecond)
	if strings.Contains(e.Stderr.String(), "exporting OpenTelemetry") {
		t.Errorf("the server exports with no endpoint set")
	}
	if r.Requests() != 0 {
		t.Errorf("the receiver got %d requests", r.Requests())
	}
}
