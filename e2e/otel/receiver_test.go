package otel

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// receiver is an OTLP receiver: HTTP/protobuf on /v1/traces and /v1/metrics, or gRPC's trace and
// metrics services, decoding with the OTLP protobuf types.
type receiver struct {
	mu       sync.Mutex
	spans    []span
	metrics  map[string]bool
	requests int
	headers  []string // each HTTP export's x-team header
	URL      string   // http://host:port, or host:port for gRPC
	coltracepb.UnimplementedTraceServiceServer
	colmetricpb.UnimplementedMetricsServiceServer
}

// span is a received span with its resource's service.name.
type span struct {
	*tracepb.Span
	Service string
}

func (s span) TraceID() string  { return hex.EncodeToString(s.Span.TraceId) }
func (s span) SpanID() string   { return hex.EncodeToString(s.Span.SpanId) }
func (s span) ParentID() string { return hex.EncodeToString(s.Span.ParentSpanId) }

// Attr is the string form of an attribute ("" when absent).
func (s span) Attr(k string) (any, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == k {
			return value(kv.Value), true
		}
	}
	return nil, false
}

func value(v *commonpb.AnyValue) any {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.Values {
			out = append(out, value(e))
		}
		return out
	}
	return nil
}

func (r *receiver) addTraces(req *coltracepb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	for _, rs := range req.ResourceSpans {
		svc := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				svc = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				r.spans = append(r.spans, span{Span: sp, Service: svc})
			}
		}
	}
}

func (r *receiver) addMetrics(req *colmetricpb.ExportMetricsServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				r.metrics[m.Name] = true
			}
		}
	}
}

func (r *receiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.addTraces(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// metricsServer is the gRPC metrics service (its Export has another signature).
type metricsServer struct {
	colmetricpb.UnimplementedMetricsServiceServer
	r *receiver
}

func (m metricsServer) Export(_ context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	m.r.addMetrics(req)
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

// Spans returns the spans received so far.
func (r *receiver) Spans() []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]span(nil), r.spans...)
}

func (r *receiver) Metric(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.metrics[name]
}

func (r *receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

func newHTTPReceiver(t *testing.T) *receiver {
	r := &receiver{metrics: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.headers = append(r.headers, req.Header.Get("X-Team"))
		r.mu.Unlock()
		var msg coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.addTraces(&msg)
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	})
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var msg colmetricpb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.addMetrics(&msg)
		out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	r.URL = "http://" + ln.Addr().String()
	return r
}

func newGRPCReceiver(t *testing.T) *receiver {
	r := &receiver{metrics: map[string]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, r)
	colmetricpb.RegisterMetricsServiceServer(gs, metricsServer{r: r})
	go gs.Serve(ln)
	t.Cleanup(gs.Stop)
	r.URL = "http://" + ln.Addr().String()
	return r
}
