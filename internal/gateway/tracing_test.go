package gateway

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/internal/config"

	"github.com/ferry-serving/ferry/internal/telemetry"
	"github.com/ferry-serving/ferry/internal/telemetry/otlptest"
)

// inboundTraceparent is a sampled caller's context: trace and span IDs.
const (
	inboundTrace       = "4bf92f3577b34da6a3ce929d0e0e4736"
	inboundSpan        = "00f067aa0ba902b7"
	inboundTraceparent = "00-" + inboundTrace + "-" + inboundSpan + "-01"
)

// startTracedGateway is a gateway whose telemetry sends every span to a receiver.
func startTracedGateway(t *testing.T, rate float64) (*testGateway, *otlptest.Receiver) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50") // ms
	rcv := otlptest.Start(t)
	tel := telemetry.New(telemetry.Options{ServiceName: "ferry-gateway"})
	t.Cleanup(tel.Shutdown)
	if err := tel.Apply(&config.Observability{Tracing: config.Tracing{Protocol: config.ProtocolGRPC, Endpoint: rcv.Endpoint(), SamplingRate: rate}}); err != nil {
		t.Fatal(err)
	}
	return startGateway(t, Options{Stats: &recordingSink{}, Telemetry: tel}), rcv
}

// waitSpans waits for n spans, and a little more for any beyond.
func waitSpans(t *testing.T, rcv *otlptest.Receiver, n int) map[string]otlptest.Span {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rcv.Wait(ctx, func(r *otlptest.Receiver) bool { return len(r.Spans()) >= n })
	time.Sleep(150 * time.Millisecond)
	spans := rcv.Spans()
	byName := map[string]otlptest.Span{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	if len(spans) != n || len(byName) != n {
		t.Fatalf("received %d spans, want %d with distinct names: %+v", len(spans), n, spans)
	}
	return byName
}

// A request continues the caller's trace: the server span is the inbound span's
// child, routing and the upstream call are the server span's, and the pod gets the
// upstream span's context. Both ways to the pod: the direct path (GET) and
// ReverseProxy (POST).
func TestTracedRequestContinuesTheCallersTrace(t *testing.T) {
	for _, method := range []string{"GET", "POST"} {
		t.Run(method, func(t *testing.T) {
			g, rcv := startTracedGateway(t, 1)
			var seen http.Header
			backend := newBackend(t, func(w http.ResponseWriter, r *http.Request) { seen = r.Header.Clone() })
			g.serveRevision(revisionService("traced-1", 0, 0), backend)
			g.route("traced.example.com", "traced-1")

			req, _ := http.NewRequest(method, g.externalURL("/x"), strings.NewReader("body"))
			req.Host = "traced.example.com"
			req.Header.Set("Traceparent", inboundTraceparent)
			res, err := http.DefaultClient.Do(req)
			if err != nil || res.StatusCode != http.StatusOK {
				t.Fatalf("request: %v %v", res, err)
			}
			res.Body.Close()

			spans := waitSpans(t, rcv, 3)
			server, route, up := spans[method], spans["ferry.gateway.route"], spans["ferry.gateway.upstream"]
			if server.TraceID != inboundTrace || server.ParentID != inboundSpan || server.Kind != 2 {
				t.Errorf("server span %+v: want kind server, in trace %s, child of %s", server, inboundTrace, inboundSpan)
			}
			for _, s := range []otlptest.Span{route, up} {
				if s.TraceID != inboundTrace || s.ParentID != server.SpanID {
					t.Errorf("span %s %+v is not the server span's child", s.Name, s)
				}
			}
			if up.Kind != 3 || up.Attributes["kn.revision.name"] != "traced-1" || up.Attributes["http.response.status_code"] != "200" {
				t.Errorf("upstream span %+v", up)
			}
			if server.Attributes["http.response.status_code"] != "200" || server.Attributes["k8s.namespace.name"] != "ns" || server.Service != "ferry-gateway" {
				t.Errorf("server span %+v", server)
			}
			if want := "00-" + inboundTrace + "-" + up.SpanID + "-01"; seen.Get("Traceparent") != want {
				t.Errorf("the pod got traceparent %q, want the upstream span's %q", seen.Get("Traceparent"), want)
			}
		})
	}
}

// A request that waits for a pod has an activation span, marked cold when the
// revision had none.
func TestTracedActivation(t *testing.T) {
	g, rcv := startTracedGateway(t, 1)
	g.serveRevision(revisionService("cold-1", 0, 0))
	g.route("cold.example.com", "cold-1")
	got := g.send(context.Background(), "cold.example.com", "/")
	svc := g.service("cold-1")
	eventually(t, "the request to be held", func() bool { return svc.Room.Waiting.Load() == 1 })
	g.serveRevision(revisionService("cold-1", 0, 0), newEchoBackend(t, "cold-1"))
	if a := <-got; a.code != http.StatusOK {
		t.Fatalf("held request: %d %q %v", a.code, a.body, a.err)
	}
	spans := waitSpans(t, rcv, 4)
	act, server := spans["ferry.gateway.activation"], spans["GET"]
	if act.ParentID != server.SpanID || act.Attributes["ferry.activation.cold"] != "true" || act.StatusCode == 2 {
		t.Errorf("activation span %+v, server span %s", act, server.SpanID)
	}
	if server.ParentID != "" {
		t.Errorf("a request without traceparent has a parent: %+v", server)
	}
}

// At rate 0 nothing is recorded, and the pod is told not to sample either; probes
// are not traced at all, and pass the caller's traceparent untouched as when
// tracing is off.
func TestUnsampledAndProbes(t *testing.T) {
	g, rcv := startTracedGateway(t, 0)
	backend := newEchoBackend(t, "quiet-1")
	g.serveRevision(revisionService("quiet-1", 0, 0), backend)
	g.route("quiet.example.com", "quiet-1")
	_, _, e := get(t, g.externalURL("/"), "quiet.example.com", http.Header{"Traceparent": {inboundTraceparent}})
	// Knative's rule at 0 is NeverSample, not ParentBased: even a sampled caller's
	// trace is dropped, and the pod is told so.
	if tp := e.Header.Get("Traceparent"); !strings.HasPrefix(tp, "00-"+inboundTrace+"-") || !strings.HasSuffix(tp, "-00") {
		t.Errorf("at rate 0 the pod got traceparent %q, want trace %s unsampled", tp, inboundTrace)
	}
	_, _, e = get(t, g.externalURL("/"), "quiet.example.com", http.Header{"Traceparent": {inboundTraceparent}, "User-Agent": {"kube-probe/1.37"}})
	if tp := e.Header.Get("Traceparent"); tp != inboundTraceparent {
		t.Errorf("a probe's traceparent became %q", tp)
	}
	time.Sleep(300 * time.Millisecond)
	if spans := rcv.Spans(); len(spans) != 0 {
		t.Errorf("rate 0 and a probe recorded %+v", spans)
	}
}

// lockedBuffer is a request log's writer that a test reads while requests write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The request log, inside the server span, names the request's trace: the caller's
// when it sent one, the trace the gateway started when it did not, sampled or not
// (unsampled, it comes from the traceparent the pod is sent).
func TestRequestLogNamesTheTrace(t *testing.T) {
	for _, rate := range []float64{1, 0} {
		t.Run(fmt.Sprint("rate ", rate), func(t *testing.T) {
			t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
			rcv := otlptest.Start(t)
			tel := telemetry.New(telemetry.Options{ServiceName: "ferry-gateway"})
			t.Cleanup(tel.Shutdown)
			if err := tel.Apply(&config.Observability{Tracing: config.Tracing{Protocol: config.ProtocolGRPC, Endpoint: rcv.Endpoint(), SamplingRate: rate}}); err != nil {
				t.Fatal(err)
			}
			log := &lockedBuffer{}
			g := startGateway(t, Options{Stats: &recordingSink{}, Telemetry: tel, RequestLog: log})
			c := config.Default()
			c.Observability = config.DefaultObservability()
			c.Observability.EnableRequestLog = true
			g.applyConfig(c)
			backend := newEchoBackend(t, "logged-1")
			g.serveRevision(revisionService("logged-1", 0, 0), backend)
			g.route("logged.example.com", "logged-1")

			_, _, e := get(t, g.externalURL("/"), "logged.example.com", http.Header{"Traceparent": {inboundTraceparent}})
			_, _, fresh := get(t, g.externalURL("/fresh"), "logged.example.com", nil)
			started := strings.Split(fresh.Header.Get("Traceparent"), "-")
			if e == nil || len(started) != 4 {
				t.Fatalf("the pod got traceparents %v and %v", e, started)
			}
			eventually(t, "two request log lines", func() bool { return strings.Count(log.String(), "\n") == 2 })
			// Either line may come first: each is written once its handler returns.
			for _, want := range []string{inboundTrace, started[1]} {
				if !strings.Contains(log.String(), `"traceId": "`+want+`"`) {
					t.Errorf("request log %q has no line with traceId %s", log.String(), want)
				}
			}
		})
	}
}

// An upgraded connection goes through the server span's response recorder: the
// hijack reaches the connection, and the span ends with 101 when it closes.
func TestTracedUpgrade(t *testing.T) {
	g, rcv := startTracedGateway(t, 1)
	backend := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		rw.Flush()
		if line, err := rw.ReadString('\n'); err == nil {
			rw.WriteString("echo " + line)
			rw.Flush()
		}
	})
	g.serveRevision(revisionService("ws-1", 0, 0), backend)
	g.route("ws.example.com", "ws-1")
	conn, err := net.Dial("tcp", g.ExternalAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET /chat HTTP/1.1\r\nHost: ws.example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", res, err)
	}
	fmt.Fprintln(conn, "hello")
	if got, err := br.ReadString('\n'); err != nil || got != "echo hello\n" {
		t.Fatalf("read %q, %v", got, err)
	}
	conn.Close() // the upgraded exchange ends when both sides have
	spans := waitSpans(t, rcv, 3)
	if server := spans["GET"]; server.Attributes["http.response.status_code"] != "101" || server.StatusCode == 2 {
		t.Errorf("server span %+v, want 101 without error", server)
	}
}
