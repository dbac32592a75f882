package proxy

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/telemetry"
)

// Tracing, when config-observability turns it on: a server span per request, which
// continues the caller's traceparent, with children for routing, for the wait for a
// pod (only when the request waited) and for the call to the pod, whose context goes
// to the pod in traceparent, so that the app's spans join the trace. Spans are
// written by hand around the request path rather than with otelhttp: its handler and
// transport would wrap every request, tracing on or off, and the direct path
// (direct.go) has no http.RoundTripper to wrap. Off, the cost is one atomic load
// per request in Traced and one in listenerHandler.ServeHTTP.
//
// Names and attributes follow OpenTelemetry's HTTP conventions and Knative's kn.*
// names where Knative has them (docs/observability.md lists them).
const (
	spanRoute      = "ferry.gateway.route"
	spanActivation = "ferry.gateway.activation"
	spanUpstream   = "ferry.gateway.upstream"
)

// Traced wraps the listener's whole handler, request log included, in the request's
// server span: whatever runs inside reads the trace from the request's context
// (trace.SpanContextFromContext). Probes, by kubelet or Knative's prober, are not
// traced, as in Knative.
func Traced(tel *telemetry.Telemetry, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr := tel.Tracer()
		if tr == nil || probe(r) {
			next.ServeHTTP(w, r)
			return
		}
		serveTraced(tr, next, w, r)
	})
}

func probe(r *http.Request) bool {
	if _, ok := r.Header["K-Network-Probe"]; ok {
		return true
	}
	if _, ok := r.Header["K-Kubelet-Probe"]; ok {
		return true
	}
	return strings.HasPrefix(r.Header.Get("User-Agent"), "kube-probe/")
}

func serveTraced(tr trace.Tracer, next http.Handler, w http.ResponseWriter, r *http.Request) {
	ctx := telemetry.Propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := tr.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer))
	if !span.IsRecording() {
		// Not sampled, so neither are its children under any sampler of
		// telemetry.Sampler: nothing to record, and no context for the handler to
		// carry. The pod is still told, in traceparent, so that it does not sample
		// the trace either; the request log reads the trace ID from there.
		telemetry.Propagator.Inject(ctx, propagation.HeaderCarrier(r.Header))
		next.ServeHTTP(w, r)
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", r.Method),
		attribute.String("url.path", r.URL.Path),
		attribute.String("url.scheme", scheme),
		attribute.String("server.address", r.Host),
		attribute.String("network.protocol.version", strconv.Itoa(r.ProtoMajor)+"."+strconv.Itoa(r.ProtoMinor)),
	}
	if ua := r.Header.Get("User-Agent"); ua != "" {
		attrs = append(attrs, attribute.String("user_agent.original", ua))
	}
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		attrs = append(attrs, attribute.String("client.address", ip))
	}
	span.SetAttributes(attrs...)
	rec := &statusRecorder{ResponseWriter: w}
	completed := false
	defer func() {
		switch {
		case !completed:
			// The answer broke off (the pod's body did); the handler aborted it.
			span.SetStatus(codes.Error, "response aborted")
		case rec.code >= 500:
			span.SetStatus(codes.Error, http.StatusText(rec.code))
		}
		if rec.code != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", rec.code))
		}
		span.End()
	}()
	next.ServeHTTP(rec, r.WithContext(ctx))
	completed = true
}

// statusRecorder notes the status the handler answered with. Unwrap lets
// http.ResponseController reach the connection's Flush, Hijack and full duplex, which
// are all the request path uses.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	// Of the informational codes, only 101 is the answer: the rest precede it.
	if s.code == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// requestTracer is the tracer for the request's child spans: nil unless tracing is
// on and Traced started a recording server span.
func (p *listenerHandler) requestTracer(r *http.Request) trace.Tracer {
	tr := p.telemetry.Tracer()
	if tr == nil || !trace.SpanContextFromContext(r.Context()).IsValid() {
		return nil
	}
	return tr
}

// traceRouted records the routing span, from the request's arrival to the split's
// pick, and names the revision, and its Service and Configuration when the
// endpoints say, on the server span as Knative's activator does.
func traceRouted(tr trace.Tracer, ctx context.Context, arrived time.Time, rr *routedRequest, se *backends.Endpoints) {
	attrs := []attribute.KeyValue{
		attribute.String("kn.revision.name", rr.revision),
		attribute.String("k8s.namespace.name", rr.split.Service.Key.Namespace),
	}
	if service, configuration := se.Owners(); configuration != "" {
		attrs = append(attrs, attribute.String("kn.configuration.name", configuration))
		if service != "" {
			attrs = append(attrs, attribute.String("kn.service.name", service))
		}
	}
	trace.SpanFromContext(ctx).SetAttributes(attrs...)
	_, span := tr.Start(ctx, spanRoute, trace.WithTimestamp(arrived), trace.WithAttributes(attrs...))
	span.End()
}

// traceActivation records a wait for a pod: cold when the revision had no ready pod
// at all (a cold start), else no pod below its containerConcurrency.
func traceActivation(tr trace.Tracer, ctx context.Context, start time.Time, rr *routedRequest, cold bool) {
	_, span := tr.Start(ctx, spanActivation, trace.WithTimestamp(start), trace.WithAttributes(
		attribute.Bool("ferry.activation.cold", cold), attribute.String("kn.revision.name", rr.revision)))
	if rr.target == nil {
		span.SetStatus(codes.Error, "no pod: answered "+strconv.Itoa(rr.code))
	}
	span.End()
}

// startUpstream starts the client span of the call to the pod and puts its context
// in the request's traceparent (and tracestate, baggage), replacing the caller's:
// both the direct path and ReverseProxy send r's headers. finish ends the span.
func startUpstream(tr trace.Tracer, ctx context.Context, r *http.Request, rr *routedRequest) context.Context {
	rr.serverSpan = trace.SpanFromContext(ctx)
	ctx, rr.upstreamSpan = tr.Start(ctx, spanUpstream, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("http.request.method", r.Method),
		attribute.String("server.address", rr.target.IP),
		attribute.String("network.peer.address", rr.target.Addr),
		attribute.String("kn.revision.name", rr.revision),
		attribute.Bool("ferry.pod.simulated", rr.target.Simulated),
	))
	telemetry.Propagator.Inject(ctx, propagation.HeaderCarrier(r.Header))
	return ctx
}

// endUpstream ends the call's span with the status the client got, and gives it to
// the server span too: an upgrade's 101 goes out on the hijacked connection, where
// Traced's recorder does not see it (what the recorder saw is set after, and wins).
func endUpstream(rr *routedRequest) {
	span := rr.upstreamSpan
	if rr.code != 0 {
		code := attribute.Int("http.response.status_code", rr.code)
		span.SetAttributes(code)
		rr.serverSpan.SetAttributes(code)
	}
	// A client span is in error from 400 on (OpenTelemetry's HTTP conventions).
	if rr.code >= 400 || rr.code == 0 {
		span.SetStatus(codes.Error, strconv.Itoa(rr.code))
	}
	span.End()
}
