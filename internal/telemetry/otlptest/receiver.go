// Package otlptest is an OTLP/gRPC receiver for tests: the OpenTelemetry project's
// collector services served with grpc-go, keeping what they receive, so that a test
// checks what an exporter really sent rather than what an SDK meant to send.
package otlptest

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"

	metricsv1 "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Span is a received span, flattened.
type Span struct {
	// Service is the resource's service.name.
	Service string
	Name    string
	// Kind is the OTLP kind: 1 internal, 2 server, 3 client.
	Kind                       int32
	TraceID, SpanID, ParentID  string // hex; ParentID "" for a root
	Attributes                 map[string]string
	StatusCode                 int32 // 0 unset, 1 ok, 2 error
	StartUnixNano, EndUnixNano uint64
}

// Receiver serves OTLP's TraceService and MetricsService on a loopback port over
// gRPC, and their HTTP/protobuf forms (/v1/traces, /v1/metrics) on another.
type Receiver struct {
	tracev1.UnimplementedTraceServiceServer
	// Addr is the gRPC host:port, HTTPAddr the HTTP/protobuf one.
	Addr, HTTPAddr string

	mu      sync.Mutex
	spans   []Span
	metrics map[string]int // metric name → data points received
	changed chan struct{}
}

// Start serves a Receiver until the test ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{Addr: ln.Addr().String(), metrics: map[string]int{}, changed: make(chan struct{})}
	s := grpc.NewServer()
	tracev1.RegisterTraceServiceServer(s, r)
	metricsv1.RegisterMetricsServiceServer(s, metricsServer{r: r})
	go s.Serve(ln)
	t.Cleanup(s.Stop)
	hs := httptest.NewServer(http.HandlerFunc(r.serveHTTP))
	t.Cleanup(hs.Close)
	r.HTTPAddr = hs.Listener.Addr().String()
	return r
}

// Endpoint is the receiver's gRPC URL, as tracing-endpoint or metrics-endpoint.
func (r *Receiver) Endpoint() string { return "http://" + r.Addr }

// HTTPEndpoint is the receiver's HTTP/protobuf URL, without the signal's path.
func (r *Receiver) HTTPEndpoint() string { return "http://" + r.HTTPAddr }

// serveHTTP takes OTLP/HTTP's binary protobuf exports.
func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var res proto.Message
	switch req.URL.Path {
	case "/v1/traces":
		var export tracev1.ExportTraceServiceRequest
		if err = proto.Unmarshal(body, &export); err == nil {
			res, err = r.Export(req.Context(), &export)
		}
	case "/v1/metrics":
		var export metricsv1.ExportMetricsServiceRequest
		if err = proto.Unmarshal(body, &export); err == nil {
			res, err = metricsServer{r: r}.Export(req.Context(), &export)
		}
	default:
		http.NotFound(w, req)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, _ := proto.Marshal(res)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// Export keeps the spans of a TraceService export.
func (r *Receiver) Export(_ context.Context, req *tracev1.ExportTraceServiceRequest) (*tracev1.ExportTraceServiceResponse, error) {
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		service := attributes(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				got = append(got, Span{Service: service, Name: s.GetName(), Kind: int32(s.GetKind()),
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()), Attributes: attributes(s.GetAttributes()),
					StatusCode: int32(s.GetStatus().GetCode()), StartUnixNano: s.GetStartTimeUnixNano(), EndUnixNano: s.GetEndTimeUnixNano()})
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.notifyLocked()
	r.mu.Unlock()
	return &tracev1.ExportTraceServiceResponse{}, nil
}

// metricsServer is the MetricsService's Export, apart from the TraceService's of the
// same name.
type metricsServer struct {
	metricsv1.UnimplementedMetricsServiceServer
	r *Receiver
}

func (m metricsServer) Export(_ context.Context, req *metricsv1.ExportMetricsServiceRequest) (*metricsv1.ExportMetricsServiceResponse, error) {
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, metric := range sm.GetMetrics() {
				m.r.metrics[metric.GetName()]++
			}
		}
	}
	m.r.notifyLocked()
	return &metricsv1.ExportMetricsServiceResponse{}, nil
}

func (r *Receiver) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// Reset forgets what was received.
func (r *Receiver) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans, r.metrics = nil, map[string]int{}
}

// MetricNames returns the names of the metrics received so far.
func (r *Receiver) MetricNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for n := range r.metrics {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Wait blocks until done reports true of the receiver, checked after every export,
// or ctx ends; it reports whether done did.
func (r *Receiver) Wait(ctx context.Context, done func(*Receiver) bool) bool {
	for {
		r.mu.Lock()
		changed := r.changed
		r.mu.Unlock()
		if done(r) {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return done(r)
		}
	}
}

func attributes(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = strconv.FormatInt(v.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = strconv.FormatBool(v.BoolValue)
		default:
			m[kv.GetKey()] = kv.GetValue().String()
		}
	}
	return m
}
