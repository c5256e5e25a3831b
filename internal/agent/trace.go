package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/telemetry"
)

// The drive's spans, named as the OpenTelemetry GenAI semantic conventions name them
// (docs/observability.md): invoke_agent for the drive, chat for each model call, execute_tool for
// each tool call, invoke_workflow and a span per agent node for a workflow. Spans come from the
// journal's observer, which sees only effects that run now: a step answered from the journal
// makes no span, so a run replayed after a crash adds spans only for what it really does again.

// driveTracer is a drive's journal observer: it starts the spans of live steps and puts the
// timeline's notable events on the drive's span.
type driveTracer struct {
	d       *drive
	span    trace.Span
	capture bool
}

// startDriveSpan starts the drive's invoke_agent span in the run's trace and sets the journal's
// observer. With no tracer installed the span does not record and no observer is set.
func (d *drive) startDriveSpan(ctx context.Context) (context.Context, trace.Span) {
	if !telemetry.On() {
		return ctx, noop.Span{} // no exporter: not even the run's trace id is worked out
	}
	run := d.run
	uid := run.Metadata.UID
	if uid == "" {
		uid = run.Metadata.Name
	}
	ctx = telemetry.RunContext(ctx, uid, run.Status.TraceParent)
	ctx, span := telemetry.Tracer().Start(ctx, "invoke_agent "+run.Spec.Agent, trace.WithSpanKind(trace.SpanKindInternal))
	if !span.IsRecording() {
		return ctx, span
	}
	// The agent's uid identifies it across a delete and a new agent of the same name.
	agentID := run.Spec.Agent
	if ag, err := d.e.Store.GetAgent(ctx, run.Spec.Agent); err == nil && ag.Metadata.UID != "" {
		agentID = ag.Metadata.UID
	}
	span.SetAttributes(
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", run.Spec.Agent),
		attribute.String("gen_ai.agent.id", agentID),
		attribute.Int64("gen_ai.agent.version", run.Status.AgentRevision),
		attribute.String("gen_ai.conversation.id", run.Metadata.Name),
		attribute.String("agentrun.run.uid", run.Metadata.UID),
		attribute.String("agentrun.runner", d.e.RunnerName),
		attribute.Int64("agentrun.lease.generation", d.j.Lease().Generation),
	)
	d.j.Observe(&driveTracer{d: d, span: span, capture: telemetry.CaptureContent()})
	return ctx, span
}

// endDriveSpan ends the drive's span with how the drive ended.
func (d *drive) endDriveSpan(span trace.Span, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("agentrun.run.phase", string(d.status.Phase)))
		if d.status.Reason != "" {
			span.SetAttributes(attribute.String("agentrun.run.reason", string(d.status.Reason)))
		}
		if d.acc != nil && d.acc.provider != nil {
			span.SetAttributes(attribute.String("gen_ai.provider.name", providerName(d.acc.provider.Name())))
		}
		if d.status.Phase == api.PhaseFailed {
			span.SetStatus(codes.Error, d.status.Message)
			span.SetAttributes(attribute.String("error.type", string(d.status.Reason)))
		} else if err != nil && !errors.Is(err, errParked) {
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(attribute.String("error.type", "_OTHER"))
		}
	}
	span.End()
}

// providerName is a provider as gen_ai.provider.name names it.
func providerName(p string) string {
	switch p {
	case "anthropic":
		return "anthropic"
	case "openai":
		return "openai"
	}
	return p
}

// notable are the timeline events a drive's span shows as span events: approvals, parks, the
// person's answers, takeovers and interruptions (the step events are its child spans).
var notable = map[api.EventType]bool{
	api.EventRunStarted: true, api.EventRunResumed: true, api.EventRunWaiting: true, api.EventRunQuestion: true,
	api.EventRunApproval: true, api.EventApprovalApprove: true, api.EventApprovalDeny: true, api.EventRunResolution: true,
	api.EventStepInterrupted: true, api.EventStepRetried: true, api.EventStepResolved: true, api.EventToolRefused: true,
	api.EventRunSucceeded: true, api.EventRunFailed: true, api.EventRunCancelled: true, api.EventRunDiverged: true,
	api.EventRunCapRaised: true, api.EventMessageReceived: true,
}

// Event puts a notable timeline event on the drive's span; its message (which may quote a
// question or a tool's input) only when content is captured.
func (t *driveTracer) Event(ev api.Event) {
	if !notable[ev.Type] {
		return
	}
	attrs := []attribute.KeyValue{}
	if ev.StepKey != "" {
		attrs = append(attrs, attribute.String("agentrun.step.key", ev.StepKey))
	}
	if t.capture && ev.Message != "" {
		attrs = append(attrs, attribute.String("agentrun.event.message", t.d.redact(ev.Message)))
	}
	t.span.AddEvent(string(ev.Type), trace.WithTimestamp(ev.Time), trace.WithAttributes(attrs...))
}

// Step starts the span of a step whose effect runs now: chat for a model call, execute_tool for
// a tool call; other steps (the computer, the learning folder) get none. Agent nodes waiting in
// ctx start first (lazyNode).
func (t *driveTracer) Step(ctx context.Context, spec journal.Spec, attempt int) (context.Context, func(any, *int64, error)) {
	args, _ := spec.Args.(map[string]any)
	var name, provider string
	var attrs []attribute.KeyValue
	kind := trace.SpanKindInternal
	switch spec.Kind {
	case api.StepKindModel, api.StepKindRoute:
		m, _ := args["model"].(string)
		if m == "" {
			return ctx, func(any, *int64, error) {}
		}
		p, _ := args["provider"].(string)
		if p == "" && t.d.acc != nil && t.d.acc.provider != nil {
			p = t.d.acc.provider.Name()
		}
		provider = providerName(p)
		name, kind = "chat "+m, trace.SpanKindClient
		attrs = []attribute.KeyValue{attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.request.model", m),
			attribute.String("gen_ai.provider.name", provider)}
		if h, _ := args["harness"].(string); h != "" {
			attrs = append(attrs, attribute.String("agentrun.harness", h))
		}
	case api.StepKindTool:
		tool, _ := args["tool"].(string)
		name = "execute_tool " + tool
		attrs = []attribute.KeyValue{attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", tool),
			attribute.String("gen_ai.tool.type", toolType(tool))}
		if call, ok := ctx.Value(toolCallKey{}).(model.Block); ok && call.ID != "" {
			attrs = append(attrs, attribute.String("gen_ai.tool.call.id", call.ID))
			if t.capture {
				attrs = append(attrs, attribute.String("gen_ai.tool.call.arguments", t.d.redact(string(call.Input))))
			}
		}
	default:
		return ctx, func(any, *int64, error) {}
	}
	startLazy(ctx)
	attrs = append(attrs, attribute.String("agentrun.step.key", spec.Key), attribute.Int("agentrun.step.attempt", attempt))
	if spec.Kind == api.StepKindRoute {
		attrs = append(attrs, attribute.Bool("agentrun.router", true))
	}
	if t.capture && spec.Kind != api.StepKindTool {
		if req, ok := ctx.Value(modelRequestKey{}).(*model.Request); ok {
			attrs = append(attrs, attribute.String("gen_ai.input.messages", t.d.redact(inputMessages(req))))
			if req.System != "" {
				attrs = append(attrs, attribute.String("gen_ai.system_instructions", t.d.redact(textParts(req.System))))
			}
		}
	}
	start := time.Now()
	sctx, span := telemetry.Tracer().Start(stepParent(ctx), name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return sctx, func(res any, costMicros *int64, err error) {
		defer span.End()
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(attribute.String("error.type", errorType(err)))
		}
		if spec.Kind == api.StepKindTool {
			if t.capture && err == nil {
				if b, jerr := json.Marshal(res); jerr == nil {
					span.SetAttributes(attribute.String("gen_ai.tool.call.result", t.d.redact(string(b))))
				}
			}
			return
		}
		var mr *modelResult
		switch r := res.(type) {
		case modelResult:
			mr = &r
		case gatewayResult:
			mr = &r.modelResult
		case routeResult:
			// The router's call: its usage, answered by the router model (no content kept).
			mr = &modelResult{Response: model.Response{Model: stringArg(args, "model"), Usage: r.Usage}, VendorMicros: r.VendorMicros}
		}
		call := telemetry.Call{Provider: provider, RequestModel: stringArg(args, "model"), Duration: time.Since(start)}
		if err != nil {
			call.ErrorType = errorType(err)
			telemetry.RecordCall(ctx, call)
			return
		}
		if mr == nil {
			return
		}
		u := mr.Usage
		call.ResponseModel, call.Input, call.Output = mr.Model, u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens, u.OutputTokens
		telemetry.RecordCall(ctx, call)
		span.SetAttributes(attribute.String("gen_ai.response.model", mr.Model))
		if mr.ID != "" {
			span.SetAttributes(attribute.String("gen_ai.response.id", mr.ID))
		}
		span.SetAttributes(
			attribute.Int64("gen_ai.usage.input_tokens", call.Input),
			attribute.Int64("gen_ai.usage.output_tokens", u.OutputTokens),
			attribute.Int64("gen_ai.usage.cache_read.input_tokens", u.CacheReadInputTokens),
			attribute.Int64("gen_ai.usage.cache_creation.input_tokens", u.CacheCreationInputTokens+u.CacheCreation1hInputTokens),
		)
		if mr.StopReason != "" {
			span.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", []string{mr.StopReason}))
		}
		if costMicros != nil {
			span.SetAttributes(attribute.Int64("agentrun.cost_micros", *costMicros))
		} else {
			span.SetAttributes(attribute.String("agentrun.cost", "unknown"))
		}
		if t.capture && len(mr.Content) > 0 {
			span.SetAttributes(attribute.String("gen_ai.output.messages", t.d.redact(outputMessages(mr.Response))))
		}
	}
}

func stringArg(args map[string]any, k string) string {
	s, _ := args[k].(string)
	return s
}

// errorType is error.type for a failed step: the failure's reason, else _OTHER.
func errorType(err error) string {
	var f *failure
	if errors.As(err, &f) {
		return string(f.reason)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "cancelled"
	}
	return "_OTHER"
}

// toolType is gen_ai.tool.type: extension for an MCP server's tool, function for the rest.
func toolType(name string) string {
	if strings.HasPrefix(name, "mcp__") {
		return "extension"
	}
	return "function"
}

type toolCallKey struct{}
type modelRequestKey struct{}

// withToolCall carries the model's tool call to the tool step's span (its id is not a step
// argument: arguments are hashed for replay and their shape is fixed).
func withToolCall(ctx context.Context, call model.Block) context.Context {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx
	}
	return context.WithValue(ctx, toolCallKey{}, call)
}

// withModelRequest carries a model call's request to its span (for captured content).
func withModelRequest(ctx context.Context, req *model.Request) context.Context {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx
	}
	return context.WithValue(ctx, modelRequestKey{}, req)
}

// The conventions' message shapes (gen_ai.input.messages, gen_ai.output.messages): a role and
// its parts.
type otelPart struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  string          `json:"response,omitempty"`
}

type otelMessage struct {
	Role         string     `json:"role"`
	Parts        []otelPart `json:"parts"`
	FinishReason string     `json:"finish_reason,omitempty"`
}

func parts(blocks []model.Block) []otelPart {
	out := []otelPart{}
	for _, b := range blocks {
		switch b.Type {
		case model.BlockText:
			out = append(out, otelPart{Type: "text", Content: b.Text})
		case model.BlockToolUse:
			out = append(out, otelPart{Type: "tool_call", ID: b.ID, Name: b.Name, Arguments: b.Input})
		case model.BlockToolResult:
			out = append(out, otelPart{Type: "tool_call_response", ID: b.ToolUseID, Response: b.Content})
		}
	}
	return out
}

func inputMessages(req *model.Request) string {
	msgs := make([]otelMessage, 0, len(req.Messages))
	for _, m := range req.Messages {
		msgs = append(msgs, otelMessage{Role: m.Role, Parts: parts(m.Content)})
	}
	b, _ := json.Marshal(msgs)
	return string(b)
}

func outputMessages(r model.Response) string {
	b, _ := json.Marshal([]otelMessage{{Role: "assistant", Parts: parts(r.Content), FinishReason: r.StopReason}})
	return string(b)
}

func textParts(s string) string {
	b, _ := json.Marshal([]otelPart{{Type: "text", Content: s}})
	return string(b)
}

// redact replaces the secrets the run's drive knows of (its MCP servers' and its own model key)
// in content put on a span, as the timeline does.
func (d *drive) redact(s string) string {
	if d.mcp != nil {
		for _, sess := range d.mcp.sessions {
			s = sess.Redact(s)
		}
	}
	if d.secretDetector != nil {
		s = d.secretDetector.Redact(s)
	}
	return s
}

// lazyNode is a workflow node's span, started only when a step under it runs live (a node
// replayed from the journal makes none), at the time the node started.
type lazyNode struct {
	parent context.Context
	name   string
	attrs  []attribute.KeyValue
	start  time.Time
	once   sync.Once
	span   trace.Span
	ctx    context.Context
}

type lazyKey struct{}

// withLazyNode puts a node span that starts on its first live step into ctx; end ends it if it
// started.
func withLazyNode(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, func(error)) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, func(error) {}
	}
	n := &lazyNode{parent: ctx, name: name, attrs: attrs, start: time.Now()}
	return context.WithValue(ctx, lazyKey{}, n), func(err error) {
		n.once.Do(func() {}) // nothing starts it after this
		if n.span != nil {
			if err != nil && !errors.Is(err, errParked) {
				n.span.SetStatus(codes.Error, err.Error())
			}
			n.span.End()
		}
	}
}

// startLazy starts the node spans waiting in ctx, outermost first; ctx's spans are then theirs.
// The step's own span is started from ctx by the caller, so it parents on the innermost node:
// lazySpanContext makes that so.
func startLazy(ctx context.Context) {
	if n, ok := ctx.Value(lazyKey{}).(*lazyNode); ok {
		n.begin()
	}
}

func (n *lazyNode) begin() trace.Span {
	n.once.Do(func() {
		parent := n.parent
		if p, ok := parent.Value(lazyKey{}).(*lazyNode); ok {
			if ps := p.begin(); ps != nil {
				parent = trace.ContextWithSpan(parent, ps)
			}
		}
		n.ctx, n.span = telemetry.Tracer().Start(parent, n.name, trace.WithTimestamp(n.start), trace.WithAttributes(n.attrs...))
	})
	return n.span
}

// stepParent is the context a step's span starts from: the innermost node's span once started.
func stepParent(ctx context.Context) context.Context {
	if n, ok := ctx.Value(lazyKey{}).(*lazyNode); ok && n.span != nil {
		return trace.ContextWithSpan(ctx, n.span)
	}
	return ctx
}
