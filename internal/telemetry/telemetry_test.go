package telemetry

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestEnabled(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_SERVICE_NAME": "x"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, false},
	} {
		if got := Enabled(env(c.env)); got != c.want {
			t.Errorf("Enabled(%v) = %v", c.env, got)
		}
	}
	if _, err := protocol(env(map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}), "TRACES"); err == nil {
		t.Error("http/json accepted")
	}
	if p, _ := protocol(env(map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}), "TRACES"); p != "grpc" {
		t.Errorf("the signal's own protocol variable does not win: %s", p)
	}
}

func TestTraceParent(t *testing.T) {
	if got := TraceParent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"); got != "" {
		t.Errorf("upper-case hex is invalid in W3C trace context, got %q", got)
	}
	if got := TraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"); got != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
		t.Errorf("valid traceparent: %q", got)
	}
	for _, bad := range []string{"", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"} {
		if got := TraceParent(bad); got != "" {
			t.Errorf("TraceParent(%q) = %q", bad, got)
		}
	}
}

// TestRunContext: a run's root spans take its trace id, whatever span the context held; a
// traceparent makes them the caller's children.
func TestRunContext(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(runIDs{}))
	tr := tp.Tracer("test")
	outer, other := tr.Start(context.Background(), "unrelated")
	_, a := tr.Start(RunContext(outer, "uid-1", ""), "a")
	_, b := tr.Start(RunContext(context.Background(), "uid-1", ""), "b")
	_, c := tr.Start(RunContext(context.Background(), "uid-1", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), "c")
	for _, s := range []trace.Span{a, b, c, other} {
		s.End()
	}
	spans := rec.Ended()
	want := RunTraceID("uid-1")
	if spans[0].SpanContext().TraceID() != want || spans[1].SpanContext().TraceID() != want || spans[0].Parent().IsValid() {
		t.Errorf("run roots: %v %v parent %v, want trace %v", spans[0].SpanContext().TraceID(), spans[1].SpanContext().TraceID(), spans[0].Parent(), want)
	}
	if spans[2].SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || spans[2].Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("traceparent not joined: %v", spans[2].Parent())
	}
	if RunTraceID("uid-2") == want {
		t.Error("two runs share a trace id")
	}
}

// BenchmarkDisabled is what a drive would pay with no OTEL variables if it did not ask On first:
// the run's context and a span that does not record.
func BenchmarkDisabled(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		c, s := Tracer().Start(RunContext(ctx, "uid-1", ""), "invoke_agent x")
		if s.IsRecording() || c == nil {
			b.Fatal("recording with no provider")
		}
		s.End()
	}
}
