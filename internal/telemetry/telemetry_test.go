package telemetry

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/internal/config"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/ferry-serving/ferry/internal/telemetry/otlptest"
)

func TestSamplerIsKnatives(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want string
	}{
		{0, "AlwaysOffSampler"},
		{-1, "AlwaysOffSampler"},
		{1, "AlwaysOnSampler"},
		{2, "AlwaysOnSampler"},
		{0.5, "ParentBased{root:TraceIDRatioBased{0.5}"},
	} {
		if got := Sampler(c.rate).Description(); !strings.HasPrefix(got, c.want) {
			t.Errorf("Sampler(%v) = %s, want %s…", c.rate, got, c.want)
		}
	}
}

// A fractional rate follows the caller's sampled flag either way, and samples that
// fraction of the traces it starts.
func TestFractionalRateFollowsTheParent(t *testing.T) {
	s := Sampler(0.5)
	parent := func(flags trace.TraceFlags) context.Context {
		return trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: flags, Remote: true}))
	}
	for _, c := range []struct {
		flags trace.TraceFlags
		want  sdktrace.SamplingDecision
	}{{trace.FlagsSampled, sdktrace.RecordAndSample}, {0, sdktrace.Drop}} {
		// A trace ID the ratio alone would drop: all ones is above any bound.
		id := trace.TraceID{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		if c.flags == 0 {
			id = trace.TraceID{} // and one it would keep
		}
		got := s.ShouldSample(sdktrace.SamplingParameters{ParentContext: parent(c.flags), TraceID: id, Name: "x"}).Decision
		if got != c.want {
			t.Errorf("parent flags %v: decision %v, want %v", c.flags, got, c.want)
		}
	}
	sampled := 0
	const n = 10000
	gen := sdktrace.NewTracerProvider(sdktrace.WithSampler(s)).Tracer("t")
	for range n {
		_, sp := gen.Start(context.Background(), "root")
		if sp.SpanContext().IsSampled() {
			sampled++
		}
		sp.End()
	}
	// Binomial(10000, 0.5): sd 50; 5 sd either side.
	if sampled < n/2-250 || sampled > n/2+250 {
		t.Errorf("rate 0.5 sampled %d of %d roots", sampled, n)
	}
}

func TestEndpointURL(t *testing.T) {
	for _, c := range []struct{ endpoint, path, want string }{
		{"collector:4317", "", "https://collector:4317"},
		{"http://collector:4317", "", "http://collector:4317"},
		{"http://collector:4318", "/v1/traces", "http://collector:4318/v1/traces"},
		{"http://collector:4318/", "/v1/traces", "http://collector:4318/v1/traces"},
		{"https://collector/otlp/traces", "/v1/traces", "https://collector/otlp/traces"},
		{"", "", ""},
	} {
		if got := endpointURL(c.endpoint, "TRACES", c.path); got != c.want {
			t.Errorf("endpointURL(%q, %q) = %q, want %q", c.endpoint, c.path, got, c.want)
		}
	}
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://from-env:4317")
	if got := endpointURL("collector:4317", "TRACES", ""); got != "" {
		t.Errorf("with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set: %q, want \"\" (the environment wins)", got)
	}
	if got := endpointURL("collector:4317", "METRICS", ""); got == "" {
		t.Error("the traces' variable took the metrics' endpoint")
	}
}

func newTestTelemetry(t *testing.T, g prometheus.Gatherer) *Telemetry {
	tel := New(Options{ServiceName: "ferry-test", Gatherer: g, Logger: funcr.New(func(p, a string) { t.Log(p, a) }, funcr.Options{})})
	t.Cleanup(tel.Shutdown)
	return tel
}

// Tracing follows Apply without a restart: on, to another endpoint, off.
func TestApplyIsLive(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100") // ms: the batcher's delay, 5 s by default
	a, b := otlptest.Start(t), otlptest.Start(t)
	tel := newTestTelemetry(t, prometheus.NewRegistry())
	if tel.Tracer() != nil {
		t.Fatal("a tracer before any configuration")
	}
	span := func(name string) {
		_, s := tel.Tracer().Start(context.Background(), name)
		s.End()
	}
	tel.Apply(&config.Observability{Tracing: config.Tracing{Protocol: config.ProtocolGRPC, Endpoint: a.Endpoint(), SamplingRate: 1}})
	span("to-a")
	tel.Apply(&config.Observability{Tracing: config.Tracing{Protocol: config.ProtocolGRPC, Endpoint: b.Endpoint(), SamplingRate: 1}})
	span("to-b")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The replaced provider flushes on its shutdown; the current one within its
	// batch delay.
	for _, c := range []struct {
		r    *otlptest.Receiver
		name string
	}{{a, "to-a"}, {b, "to-b"}} {
		if !c.r.Wait(ctx, func(r *otlptest.Receiver) bool { return len(r.Spans()) > 0 }) {
			t.Fatalf("no span %s", c.name)
		}
		if got := c.r.Spans(); len(got) != 1 || got[0].Name != c.name || got[0].Service != "ferry-test" {
			t.Errorf("received %+v, want one span %s of ferry-test", got, c.name)
		}
	}
	tel.Apply(&config.Observability{Tracing: config.Tracing{Protocol: config.ProtocolNone}})
	if tel.Tracer() != nil {
		t.Error("a tracer after tracing-protocol none")
	}
}

// http/protobuf sends to the signal's path of an endpoint given without one.
func TestHTTPProtobuf(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	r := otlptest.Start(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "ferry_test_gauge", Help: "test"}))
	tel := newTestTelemetry(t, reg)
	tel.Apply(&config.Observability{Tracing: config.Tracing{Protocol: config.ProtocolHTTPProtobuf, Endpoint: r.HTTPEndpoint(), SamplingRate: 1},
		Metrics: config.Export{Protocol: config.ProtocolHTTPProtobuf, Endpoint: r.HTTPEndpoint(), ExportInterval: 100 * time.Millisecond}})
	_, s := tel.Tracer().Start(context.Background(), "over-http")
	s.End()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !r.Wait(ctx, func(r *otlptest.Receiver) bool {
		return len(r.Spans()) == 1 && slices.Contains(r.MetricNames(), "ferry_test_gauge")
	}) {
		t.Errorf("received spans %+v and metrics %v, want the span over-http and ferry_test_gauge", r.Spans(), r.MetricNames())
	}
}

// Spans may start and end on a tracer while Apply replaces it (go test -race).
func TestApplyWhileTracing(t *testing.T) {
	r := otlptest.Start(t)
	tel := newTestTelemetry(t, prometheus.NewRegistry())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				if tr := tel.Tracer(); tr != nil {
					_, s := tr.Start(ctx, "busy")
					s.End()
				}
			}
		})
	}
	for i := 0; ctx.Err() == nil; i++ {
		rate := float64(i % 2)
		tel.Apply(&config.Observability{Tracing: config.Tracing{Protocol: config.ProtocolGRPC, Endpoint: r.Endpoint(), SamplingRate: rate}})
		time.Sleep(10 * time.Millisecond)
		if i%3 == 0 {
			tel.Apply(&config.Observability{})
		}
	}
	wg.Wait()
}

// metrics-protocol grpc pushes the Prometheus registry's series, by their
// Prometheus names, every metrics-export-interval.
func TestMetricsOverOTLP(t *testing.T) {
	r := otlptest.Start(t)
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "ferry_test_requests_total", Help: "test"})
	reg.MustRegister(c)
	c.Inc()
	tel := newTestTelemetry(t, reg)
	tel.Apply(&config.Observability{Metrics: config.Export{Protocol: config.ProtocolGRPC, Endpoint: r.Endpoint(), ExportInterval: 100 * time.Millisecond}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !r.Wait(ctx, func(r *otlptest.Receiver) bool { return slices.Contains(r.MetricNames(), "ferry_test_requests_total") }) {
		t.Fatalf("received metrics %v, want ferry_test_requests_total", r.MetricNames())
	}
	tel.Apply(&config.Observability{Metrics: config.Export{Protocol: config.ProtocolPrometheus}})
	tel.retired.Wait()
	r.Reset()
	time.Sleep(300 * time.Millisecond)
	if got := r.MetricNames(); len(got) > 0 {
		t.Errorf("metrics-protocol prometheus still pushed %v", got)
	}
}

func TestErrorLogIsRateLimited(t *testing.T) {
	var lines []string
	e := newErrorLog(funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{}), time.Hour)
	for range 5 {
		e.log(errors.New("unreachable"))
	}
	if len(lines) != 1 {
		t.Fatalf("%d lines for 5 errors within the interval: %q", len(lines), lines)
	}
	e.last = time.Now().Add(-2 * time.Hour)
	e.log(errors.New("unreachable"))
	if len(lines) != 2 || !strings.Contains(lines[1], `"notLoggedSince"=4`) {
		t.Errorf("after the interval: %q, want a second line counting 4 not logged", lines)
	}
}

// An endpoint with nothing behind it stops nothing, and its failures are logged.
func TestUnreachableEndpointIsLogged(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "300") // ms per export, retries included
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	var mu sync.Mutex
	var lines []string
	tel := New(Options{Logger: funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})})
	t.Cleanup(tel.Shutdown)
	tel.Apply(&config.Observability{Tracing: config.Tracing{Protocol: config.ProtocolGRPC, Endpoint: closed, SamplingRate: 1}})
	for range 3 {
		_, s := tel.Tracer().Start(context.Background(), "lost")
		s.End()
		time.Sleep(100 * time.Millisecond)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		logged := slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "OpenTelemetry reported an error") })
		mu.Unlock()
		if logged {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no error logged for an unreachable endpoint: %q", lines)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
