// Package telemetry exports traces and the GenAI client metrics over OTLP with the OpenTelemetry
// Go SDK, named as the OpenTelemetry GenAI semantic conventions name them (docs/observability.md).
// It is configured by the standard OTEL_* variables only; with none set, Start installs nothing,
// the global tracer and meter stay OpenTelemetry's no-ops and instrumented code costs a check.
//
// A run is one trace: its trace id derives from the run's uid (RunContext), so every drive, on
// any runner, after any restart, lands in the same trace, unless the run was created with a W3C
// traceparent, whose trace it joins.
package telemetry

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Scope is the instrumentation scope of every span and instrument.
const Scope = "agentrun.dev/agentrun"

// Provider is what Start installed; its Shutdown flushes what is buffered. A nil Provider (nothing
// configured) is valid and does nothing.
type Provider struct {
	tp *sdktrace.TracerProvider
	mp *sdkmetric.MeterProvider
}

// Enabled reports whether the environment asks for OTLP export: an endpoint is set for traces or
// for all signals, and the SDK is not disabled.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// metricsEnabled: metrics go out when their endpoint or the common one is set (a traces-only
// endpoint says nothing of where metrics go).
func metricsEnabled(getenv func(string) string) bool {
	if getenv("OTEL_METRICS_EXPORTER") == "none" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != ""
}

// protocol is the OTLP protocol for a signal: its own variable, else the common one, else
// http/protobuf (the SDKs' default).
func protocol(getenv func(string) string, signal string) (string, error) {
	p := getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL")
	if p == "" {
		p = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch p {
	case "", "http/protobuf":
		return "http/protobuf", nil
	case "grpc":
		return "grpc", nil
	}
	return "", fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: agentrun exports http/protobuf or grpc", p)
}

// Start installs the OTLP trace (and metric) exporters the environment configures as the global
// providers; the exporters read the endpoint, headers, timeout, TLS and compression variables
// themselves. service is the service.name unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES
// says otherwise. Nothing configured: nil, nil.
func Start(ctx context.Context, service string, log *slog.Logger) (*Provider, error) {
	if !Enabled(os.Getenv) {
		return nil, nil
	}
	res, err := resource.Merge(resource.NewSchemaless(attribute.String("service.name", service)), nil)
	if err != nil {
		return nil, err
	}
	// WithFromEnv last: OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME win over the default.
	env, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	if res, err = resource.Merge(res, env); err != nil {
		return nil, err
	}
	proto, err := protocol(os.Getenv, "TRACES")
	if err != nil {
		return nil, err
	}
	var exp sdktrace.SpanExporter
	if proto == "grpc" {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	p := &Provider{tp: sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithIDGenerator(runIDs{}))}
	// Not the global provider: libraries that trace through it (the Docker client's HTTP
	// instrumentation) would fill the runs' tracing with their own spans.
	tracer.Store(&tracerBox{p.tp.Tracer(Scope)})
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("OpenTelemetry export", "err", err) }))
	if metricsEnabled(os.Getenv) {
		mproto, err := protocol(os.Getenv, "METRICS")
		if err != nil {
			return nil, err
		}
		var mexp sdkmetric.Exporter
		if mproto == "grpc" {
			mexp, err = otlpmetricgrpc.New(ctx)
		} else {
			mexp, err = otlpmetrichttp.New(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("OTLP metric exporter: %w", err)
		}
		p.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp)), sdkmetric.WithResource(res),
			sdkmetric.WithView(genAIBuckets()...))
		meter.Store(&meterBox{p.mp.Meter(Scope)})
	}
	log.Info("exporting OpenTelemetry traces over OTLP", "protocol", proto, "metrics", p.mp != nil)
	return p, nil
}

// Shutdown flushes and stops the exporters (at process stop).
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	var errs []error
	if err := p.tp.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	if p.mp != nil {
		if err := p.mp.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("OpenTelemetry shutdown: %v", errs)
	}
	return nil
}

type tracerBox struct{ trace.Tracer }
type meterBox struct{ metric.Meter }

var (
	tracer atomic.Pointer[tracerBox]
	meter  atomic.Pointer[meterBox]
	noopTr = tracenoop.NewTracerProvider().Tracer(Scope)
)

// On reports whether Start installed an exporter (callers skip their tracing work when not).
func On() bool { return tracer.Load() != nil }

// Tracer is agentrun's tracer (a no-op until Start installed a provider).
func Tracer() trace.Tracer {
	if t := tracer.Load(); t != nil {
		return t.Tracer
	}
	return noopTr
}

// CaptureContent reports whether spans carry message content and tool arguments and results
// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true); off by default.
func CaptureContent() bool {
	return strings.EqualFold(os.Getenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"), "true")
}

// runTraceKey carries the trace id a run's root spans take (runIDs).
type runTraceKey struct{}

// RunTraceID is the trace id of a run created without a traceparent: derived from its uid, so
// every drive of the run agrees on it without storing it.
func RunTraceID(uid string) trace.TraceID {
	sum := sha256.Sum256([]byte("agentrun run trace\x00" + uid))
	var id trace.TraceID
	copy(id[:], sum[:16])
	return id
}

// RunContext is the context a run's drive starts its spans from: the caller's span as remote
// parent when the run was created with a traceparent, else a root in the run's own trace.
func RunContext(ctx context.Context, uid, traceparent string) context.Context {
	if traceparent != "" {
		pctx := propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
		if trace.SpanContextFromContext(pctx).IsValid() {
			return pctx
		}
	}
	// A new root (not a child of whatever ctx holds) whose trace id the generator takes.
	return context.WithValue(trace.ContextWithSpanContext(ctx, trace.SpanContext{}), runTraceKey{}, RunTraceID(uid))
}

// TraceParent checks a traceparent header's value and returns it normalized ("" when absent or
// not a valid W3C traceparent, which the spec says to ignore).
func TraceParent(h string) string {
	if h == "" {
		return ""
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": h})
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	out := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, out)
	return out["traceparent"]
}

// runIDs is the SDK's random generator, except that a root span started from RunContext takes
// the run's trace id.
type runIDs struct{}

// randomGen makes the ids no run fixes (the SDK's own random generator is not exported).
var randomGen randomIDs

type randomIDs struct{}

func (randomIDs) NewIDs(context.Context) (trace.TraceID, trace.SpanID) {
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.NativeEndian.PutUint64(tid[:8], rand.Uint64())
		binary.NativeEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid, randomGen.NewSpanID(context.Background(), tid)
}

func (randomIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.NativeEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}

func (runIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	tid, sid := randomGen.NewIDs(ctx)
	if id, ok := ctx.Value(runTraceKey{}).(trace.TraceID); ok && id.IsValid() {
		tid = id
	}
	return tid, sid
}

func (runIDs) NewSpanID(ctx context.Context, traceID trace.TraceID) trace.SpanID {
	return randomGen.NewSpanID(ctx, traceID)
}

// Metrics: the GenAI client histograms, made once on the meter Start installed (none: nothing is
// recorded).
var (
	instOnce      sync.Once
	tokenUsage    metric.Int64Histogram
	operationTime metric.Float64Histogram
)

func instruments() {
	instOnce.Do(func() {
		b := meter.Load()
		if b == nil {
			return // no provider: nothing is recorded
		}
		m := b.Meter
		tokenUsage, _ = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
			metric.WithDescription("Number of input and output tokens used."))
		operationTime, _ = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
			metric.WithDescription("GenAI operation duration."))
	})
}

// genAIBuckets are the bucket boundaries the conventions advise for the two histograms.
func genAIBuckets() []sdkmetric.View {
	return []sdkmetric.View{
		sdkmetric.NewView(sdkmetric.Instrument{Name: "gen_ai.client.token.usage"}, sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{
			Boundaries: []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}}}),
		sdkmetric.NewView(sdkmetric.Instrument{Name: "gen_ai.client.operation.duration"}, sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{
			Boundaries: []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}}}),
	}
}

// Call is one model call, for the client metrics.
type Call struct {
	Provider, RequestModel, ResponseModel string
	Input, Output                         int64
	Duration                              time.Duration
	// ErrorType is set when the call failed.
	ErrorType string
}

// RecordCall records a model call's duration and tokens in the GenAI client histograms.
func RecordCall(ctx context.Context, c Call) {
	instruments()
	if tokenUsage == nil {
		return
	}
	attrs := []attribute.KeyValue{attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", c.Provider),
		attribute.String("gen_ai.request.model", c.RequestModel)}
	if c.ResponseModel != "" {
		attrs = append(attrs, attribute.String("gen_ai.response.model", c.ResponseModel))
	}
	dattrs := attrs
	if c.ErrorType != "" {
		dattrs = append(append([]attribute.KeyValue{}, attrs...), attribute.String("error.type", c.ErrorType))
	}
	operationTime.Record(ctx, c.Duration.Seconds(), metric.WithAttributes(dattrs...))
	if c.ErrorType != "" {
		return
	}
	tokenUsage.Record(ctx, c.Input, metric.WithAttributes(append(attrs, attribute.String("gen_ai.token.type", "input"))...))
	tokenUsage.Record(ctx, c.Output, metric.WithAttributes(append(attrs, attribute.String("gen_ai.token.type", "output"))...))
}
