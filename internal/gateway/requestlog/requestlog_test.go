package requestlog

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"text/template"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ferry-serving/ferry/internal/config"
)

func on(template string, probes bool) *config.Observability {
	o := config.DefaultObservability()
	o.EnableRequestLog, o.EnableProbeRequestLog = true, probes
	if template != "" {
		o.RequestLogTemplate = template
	}
	return o
}

// serve runs h behind the logger as the gateway does and returns the log.
func serve(t *testing.T, l *Logger, r *http.Request, rev Revision, h http.HandlerFunc) string {
	t.Helper()
	var out bytes.Buffer
	l.out = &out
	w, e := l.Start(httptest.NewRecorder(), r, time.Now().Add(-1500*time.Millisecond))
	if e != nil {
		e.Revision = rev
	}
	h(w, r)
	e.Finish(r)
	return out.String()
}

// TestKnativeDefaultTemplate: a line in Knative's default template is one JSON object
// with the request's and the answer's values.
func TestKnativeDefaultTemplate(t *testing.T) {
	l := New(nil)
	l.Apply(on("", false))
	r := httptest.NewRequest(http.MethodPost, "/a?b=\"c\"", strings.NewReader("12345"))
	r.Host = "hello.default.example.com"
	r.RemoteAddr = "10.0.0.9:51234"
	r.Header.Set("User-Agent", "curl/8")
	r.Header.Set("Referer", "http://x/")
	r.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	line := serve(t, l, r, Revision{Name: "hello-00001", Namespace: "default", Service: "hello", Configuration: "hello",
		PodName: "hello-00001-deployment-abc", PodIP: "10.1.2.3"}, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte("created!"))
	})
	if !strings.HasSuffix(line, "}\n") || strings.Count(line, "\n") != 1 {
		t.Fatalf("want one line ending in a newline, got %q", line)
	}
	var got struct {
		HTTPRequest map[string]any `json:"httpRequest"`
		TraceID     string         `json:"traceId"`
	}
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("not JSON: %v: %s", err, line)
	}
	want := map[string]any{"requestMethod": "POST", "requestUrl": "/a?b=\"c\"", "requestSize": "5", "status": float64(201),
		"responseSize": "8", "userAgent": "curl/8", "remoteIp": "10.0.0.9:51234", "serverIp": "10.1.2.3",
		"referer": "http://x/", "protocol": "HTTP/1.1"}
	for k, v := range want {
		if got.HTTPRequest[k] != v {
			t.Errorf("%s = %#v, want %#v", k, got.HTTPRequest[k], v)
		}
	}
	if lat, _ := got.HTTPRequest["latency"].(string); !strings.HasPrefix(lat, "1.5") || !strings.HasSuffix(lat, "s") {
		t.Errorf("latency = %q, want about 1.5s", lat)
	}
	if got.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("traceId = %q, want the caller's traceparent's", got.TraceID)
	}
}

func TestTemplateFields(t *testing.T) {
	l := New(nil)
	l.Apply(on(`{{.Revision.Namespace}}/{{.Revision.Name}} svc={{.Revision.Service}} cfg={{.Revision.Configuration}} pod={{.Revision.PodName}} {{.Response.Code}} {{.Response.Size}} {{.TraceID}}`, false))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("X-B3-TraceId", "80f198ee56343ba864fe8b2a57d3eff7")
	got := serve(t, l, r, Revision{Name: "r", Namespace: "ns", Service: "s", Configuration: "c", PodName: "p"},
		func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("hi")) })
	if want := "ns/r svc=s cfg=c pod=p 200 2 80f198ee56343ba864fe8b2a57d3eff7\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestTraceIDFromTheGatewaysSpan(t *testing.T) {
	l := New(nil)
	l.Apply(on("{{.TraceID}}", false))
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled})
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	r = r.WithContext(trace.ContextWithSpanContext(r.Context(), sc))
	if got := serve(t, l, r, Revision{}, func(http.ResponseWriter, *http.Request) {}); got != "0af7651916cd43dd8448eb211c80319c\n" {
		t.Errorf("got %q, want the span's trace ID", got)
	}
}

func TestOffAndProbes(t *testing.T) {
	l := New(&bytes.Buffer{})
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	if got, e := l.Start(w, r, time.Now()); got != http.ResponseWriter(w) || e != nil {
		t.Error("a Logger never turned on wraps the writer")
	}
	l.Apply(on("", false))
	probe := httptest.NewRequest(http.MethodGet, "/", nil)
	probe.Header.Set("K-Network-Probe", "queue")
	kubelet := httptest.NewRequest(http.MethodGet, "/", nil)
	kubelet.Header.Set("User-Agent", "kube-probe/1.37")
	for _, p := range []*http.Request{probe, kubelet} {
		if _, e := l.Start(w, p, time.Now()); e != nil {
			t.Errorf("probe %v logged without logging.enable-probe-request-log", p.Header)
		}
	}
	if _, e := l.Start(w, r, time.Now()); e == nil {
		t.Error("a user's request not logged")
	}
	l.Apply(on("", true))
	if _, e := l.Start(w, probe, time.Now()); e == nil {
		t.Error("probe not logged with logging.enable-probe-request-log")
	}
	off := on("", true)
	off.EnableRequestLog = false
	l.Apply(off)
	if _, e := l.Start(w, r, time.Now()); e != nil {
		t.Error("logged after logging.enable-request-log turned false")
	}
}

func TestTemplateThatFailsToRender(t *testing.T) {
	l := New(nil)
	l.Apply(on("{{.Request.NoSuchField}}", false))
	got := serve(t, l, httptest.NewRequest(http.MethodGet, "/", nil), Revision{}, func(http.ResponseWriter, *http.Request) {})
	if !strings.HasPrefix(got, invalidTemplateLine) || !strings.HasSuffix(got, "\n") {
		t.Errorf("got %q, want Knative's invalid-template line", got)
	}
}

func TestAppliedTemplateChangesLive(t *testing.T) {
	l := New(nil)
	l.Apply(on("a", false))
	first := serve(t, l, httptest.NewRequest(http.MethodGet, "/", nil), Revision{}, func(http.ResponseWriter, *http.Request) {})
	l.Apply(on("b {{.Response.Code}}", false))
	second := serve(t, l, httptest.NewRequest(http.MethodGet, "/", nil), Revision{}, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
	})
	if first != "a\n" || second != "b 404\n" {
		t.Errorf("got %q then %q", first, second)
	}
}

// TestKnativeDefaultRenderedAsTheTemplate: the default template's direct rendering
// is byte for byte what text/template makes of it, for awkward values too.
func TestKnativeDefaultRenderedAsTheTemplate(t *testing.T) {
	tmpl := template.Must(template.New("requestLog").Parse(config.DefaultRequestLogTemplate))
	for i, c := range []struct {
		uri, ua, remote, referer, proto, podIP, traceID string
		length                                          int64
		code, size                                      int
		latency                                         float64
	}{
		{uri: "/", ua: "curl/8", remote: "10.0.0.1:5", proto: "HTTP/1.1", podIP: "10.1.1.1", code: 200, size: 5, latency: 0.000412},
		{uri: `/a?b="c"&d=<e>&f='g'\h`, ua: "Mozilla/5.0 (X11; \"quoted\") é ü 日本", remote: "[::1]:443", referer: "http://x/?a=1&b=</script>",
			proto: "HTTP/2.0", length: -1, code: 503, size: 0, latency: 1e-05, traceID: "4bf92f3577b34da6a3ce929d0e0e4736"},
		{uri: "/\n\r\t\u2028\u2029", ua: "\x00\x1f", remote: "", proto: "HTTP/1.0", length: 123456789, code: 101, latency: 123456789.125},
		{uri: "/x", latency: 2e21, code: 200},
		{uri: "/y", latency: 0, code: 404, size: 1 << 40},
		{uri: "/z", latency: 1.5, code: 200},
	} {
		r := httptest.NewRequest(http.MethodPatch, "/", nil)
		r.RequestURI, r.RemoteAddr, r.Proto, r.ContentLength = c.uri, c.remote, c.proto, c.length
		r.Header.Set("User-Agent", c.ua)
		if c.referer != "" {
			r.Header.Set("Referer", c.referer)
		}
		in := input{Request: r, Response: Response{Code: c.code, Size: c.size, Latency: c.latency},
			Revision: Revision{PodIP: c.podIP}, TraceID: c.traceID}
		var want bytes.Buffer
		if err := tmpl.Execute(&want, in); err != nil {
			t.Fatal(err)
		}
		if got := string(appendKnativeDefault(nil, &in)); got != want.String() {
			t.Errorf("case %d:\n got %s\nwant %s", i, got, want.String())
		}
	}
}

// BenchmarkRequestLog is one logged request's cost, to io.Discard: Knative's default
// template (rendered directly) and the same template through text/template.
func BenchmarkRequestLog(b *testing.B) {
	for _, bc := range []struct{ name, template string }{
		{"knative-default", config.DefaultRequestLogTemplate},
		{"text-template", " " + config.DefaultRequestLogTemplate},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l := New(io.Discard)
			l.Apply(on(bc.template, false))
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header.Set("User-Agent", "wrk")
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				rw, e := l.Start(w, r, time.Now())
				rw.Write([]byte("hello"))
				e.Revision = Revision{Name: "hello-00001", Namespace: "default", PodIP: "10.244.0.5"}
				e.Finish(r)
			}
		})
	}
}
