package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/telemetry/otlptest"
)

// TestTracing runs `ferry up --program-isolation=none` with a real app instrumented
// with the OpenTelemetry SDK (tracedapp), both exporting to an OTLP/gRPC receiver in
// the test, and changes config-observability under them, with no restart:
//   - metrics-protocol grpc pushes Ferry's Prometheus series (by their names) over
//     OTLP within metrics-export-interval;
//   - tracing-sampling-rate 0 records nothing, the app's spans included: the gateway
//     tells the pod the trace is not sampled;
//   - at 0.5 a caller's sampled traceparent is continued (ParentBased) into one trace:
//     the gateway's server span, its routing and upstream children, and the app's
//     server span a child of the upstream span; an unsampled one is not recorded;
//   - at 1 every request is traced, and so is every reconcile, with its key.
func TestTracing(t *testing.T) {
	t.Parallel()
	rcv := otlptest.Start(t)
	dir := t.TempDir()
	app := filepath.Join(dir, "tracedapp")
	if out, err := exec.Command("go", "build", "-o", app, "./tracedapp").CombinedOutput(); err != nil {
		t.Fatalf("building tracedapp: %v\n%s", err, out)
	}
	args, gateway := programsUpArgs(t, dir, app, "--program-isolation", "none")
	// The batcher's delay, 5 s by default, in ms: spans arrive within a moment.
	up := startProcess(t, "ferry up", []string{"OTEL_BSP_SCHEDULE_DELAY=100"}, args...)
	c, _ := waitFerryUp(t, "ferry up", up)
	ctx := context.Background()

	svc := ksvc("default", "traced", "example.com/real:1")
	svc.Spec.Template.ObjectMeta.Annotations = map[string]string{"autoscaling.knative.dev/min-scale": "1"}
	svc.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{
		{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: rcv.Endpoint()},
		{Name: "OTEL_SERVICE_NAME", Value: "tracedapp"},
		{Name: "OTEL_BSP_SCHEDULE_DELAY", Value: "100"},
	}
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, svc, duck.ConditionReady, corev1.ConditionTrue, "", readyTimeout)
	host := "traced.default.example.com"
	sendTraced(t, gateway, host, "/", "") // so that the gateway's request counter has a series

	// Metrics over OTLP, and tracing on at rate 0. The metrics' arrival says the
	// gateway has the new configuration: one Apply takes both.
	observability := map[string]string{
		"metrics-protocol": "grpc", "metrics-endpoint": rcv.Endpoint(), "metrics-export-interval": "1s",
		"tracing-protocol": "grpc", "tracing-endpoint": rcv.Endpoint(), "tracing-sampling-rate": "0",
	}
	applyObservability(t, c, observability)
	waitFor(t, rcv, 30*time.Second, "Ferry's metrics over OTLP", func(r *otlptest.Receiver) bool {
		names := r.MetricNames()
		return slices.Contains(names, "ferry_gateway_requests_total") && slices.Contains(names, "controller_runtime_reconcile_total")
	})
	rcv.Reset()
	for i := range 20 {
		traceparent := newTraceparent(true)
		if i%2 == 0 {
			traceparent = "" // and requests without one
		}
		sendTraced(t, gateway, host, "/rate0", traceparent)
	}
	time.Sleep(time.Second) // ten batch delays
	if spans := rcv.Spans(); len(spans) != 0 {
		t.Errorf("tracing-sampling-rate 0 recorded %d spans: %+v", len(spans), spans[0])
	}

	// At 0.5, a caller's sampled trace is continued into the app.
	observability["tracing-sampling-rate"] = "0.5"
	applyObservability(t, c, observability)
	var trace []otlptest.Span
	var traceID, callerSpan string
	eventually(t, 30*time.Second, func() (bool, string) {
		traceparent := newTraceparent(true)
		ids := strings.Split(traceparent, "-")
		traceID, callerSpan = ids[1], ids[2]
		sendTraced(t, gateway, host, "/sampled", traceparent)
		waitCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		rcv.Wait(waitCtx, func(r *otlptest.Receiver) bool { return len(spansOf(r.Spans(), traceID)) >= 4 })
		trace = spansOf(rcv.Spans(), traceID)
		return len(trace) >= 4, fmt.Sprintf("trace %s has %d spans", traceID, len(trace))
	})
	time.Sleep(300 * time.Millisecond) // anything more of it
	checkTrace(t, spansOf(rcv.Spans(), traceID), callerSpan)
	rcv.Reset()
	unsampled := newTraceparent(false)
	sendTraced(t, gateway, host, "/unsampled", unsampled)
	time.Sleep(500 * time.Millisecond)
	if spans := spansOf(rcv.Spans(), strings.Split(unsampled, "-")[1]); len(spans) != 0 {
		t.Errorf("at 0.5 a caller's unsampled trace was recorded: %+v", spans)
	}

	// At 1 every request is traced: ten in a row without traceparent (at 0.5, one
	// chance in 1024).
	observability["tracing-sampling-rate"] = "1"
	applyObservability(t, c, observability)
	eventually(t, 30*time.Second, func() (bool, string) {
		rcv.Reset()
		for range 10 {
			sendTraced(t, gateway, host, "/rate1", "")
		}
		waitCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		servers := func(r *otlptest.Receiver) (n int) {
			for _, s := range r.Spans() {
				if s.Service == "ferry" && s.Kind == 2 && s.Attributes["url.path"] == "/rate1" {
					n++
				}
			}
			return n
		}
		rcv.Wait(waitCtx, func(r *otlptest.Receiver) bool { return servers(r) >= 10 })
		return servers(rcv) == 10, fmt.Sprintf("%d of 10 requests traced", servers(rcv))
	})
	// A change to the Service is reconciled in a span with its key.
	svc.Labels = map[string]string{"traced": "yes"}
	if err := c.Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	waitFor(t, rcv, 10*time.Second, "a span of the Service's reconcile", func(r *otlptest.Receiver) bool {
		return slices.ContainsFunc(r.Spans(), func(s otlptest.Span) bool {
			return s.Name == "reconcile Service" && s.Attributes["ferry.key"] == "default/traced"
		})
	})
}

func applyObservability(t *testing.T, c client.Client, data map[string]string) {
	t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{}
	if get(t, c, config.SystemNamespace, config.ObservabilityConfigName, cm) {
		cm.Data = data
		if err := c.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		return
	}
	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: config.SystemNamespace, Name: config.ObservabilityConfigName}, Data: data}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, rcv *otlptest.Receiver, timeout time.Duration, what string, done func(*otlptest.Receiver) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if !rcv.Wait(ctx, done) {
		t.Fatalf("no %s within %v; metrics %v, %d spans", what, timeout, rcv.MetricNames(), len(rcv.Spans()))
	}
}

// newTraceparent is a caller's traceparent with random IDs.
func newTraceparent(sampled bool) string {
	id := make([]byte, 24)
	rand.Read(id)
	flags := "00"
	if sampled {
		flags = "01"
	}
	return "00-" + hex.EncodeToString(id[:16]) + "-" + hex.EncodeToString(id[16:]) + "-" + flags
}

// sendTraced sends GET path for host through the gateway, with traceparent if not
// empty, and expects the app's answer.
func sendTraced(t *testing.T, gateway, host, path, traceparent string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+gateway+path, nil)
	req.Host = host
	if traceparent != "" {
		req.Header.Set("Traceparent", traceparent)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s%s: %d", host, path, res.StatusCode)
	}
}

func spansOf(spans []otlptest.Span, traceID string) []otlptest.Span {
	var of []otlptest.Span
	for _, s := range spans {
		if s.TraceID == traceID {
			of = append(of, s)
		}
	}
	return of
}

// checkTrace checks one request's trace: the gateway's server span a child of the
// caller's span, routing and the upstream call its children, and the app's server
// span the upstream call's child.
func checkTrace(t *testing.T, trace []otlptest.Span, callerSpan string) {
	t.Helper()
	by := map[string]otlptest.Span{}
	for _, s := range trace {
		switch {
		case s.Service == "tracedapp" && s.Kind == 2:
			by["app"] = s
		case s.Service == "ferry" && s.Kind == 2:
			by["server"] = s
		case s.Service == "ferry":
			by[s.Name] = s
		}
	}
	server, route, up, app := by["server"], by["ferry.gateway.route"], by["ferry.gateway.upstream"], by["app"]
	t.Logf("trace %s: gateway %s %s (parent %s) > route %s, upstream %s > app %s %q", server.TraceID, server.Name, server.SpanID,
		server.ParentID, route.SpanID, up.SpanID, app.SpanID, app.Name)
	if len(trace) != 4 || server.SpanID == "" || route.SpanID == "" || up.SpanID == "" || app.SpanID == "" {
		t.Fatalf("trace of %d spans, want the gateway's server, route and upstream spans and the app's server span: %+v", len(trace), trace)
	}
	if server.ParentID != callerSpan {
		t.Errorf("the gateway's server span's parent is %q, want the caller's %s", server.ParentID, callerSpan)
	}
	if route.ParentID != server.SpanID || up.ParentID != server.SpanID {
		t.Errorf("route (parent %s) and upstream (parent %s) spans are not the server span %s's children", route.ParentID, up.ParentID, server.SpanID)
	}
	if app.ParentID != up.SpanID {
		t.Errorf("the app's span's parent is %q, want the gateway's upstream span %s", app.ParentID, up.SpanID)
	}
	for k, v := range map[string]string{"kn.revision.name": "traced-00001", "kn.service.name": "traced", "k8s.namespace.name": "default",
		"http.response.status_code": "200", "url.path": "/sampled"} {
		if server.Attributes[k] != v {
			t.Errorf("server span attribute %s = %q, want %q", k, server.Attributes[k], v)
		}
	}
}
