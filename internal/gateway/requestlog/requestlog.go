package requestlog

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ferry-serving/ferry/internal/config"
)

// Revision names what served a request, as the template's .Revision.
type Revision struct {
	Name, Namespace, Service, Configuration, PodName, PodIP string
}

// Response is the template's .Response.
type Response struct {
	// Code is the status sent to the client (200 if the handler set none).
	Code int
	// Size is the bytes of body written.
	Size int
	// Latency is the seconds from the request's arrival to the end of its response.
	Latency float64
}

// input is what the template renders; its field names are Knative's.
type input struct {
	Request  *http.Request
	Response Response
	Revision Revision
	TraceID  string
}

// invalidTemplateLine is written instead of a line the template fails to render, as
// Knative does, so a broken template shows in the log rather than silencing it.
const invalidTemplateLine = "Invalid request log template: "

// Logger renders request log lines to its writer.
type Logger struct {
	out io.Writer
	// mu makes each line one Write, whole, whatever the writer.
	mu       sync.Mutex
	settings atomic.Pointer[settings]
}

// settings are the parts of config-observability the Logger acts on; nil is off.
type settings struct {
	source string
	tmpl   *template.Template
	probes bool
	// knative says the template is Knative's default, rendered without the engine.
	knative bool
}

// buffers are the lines being rendered, reused.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// New returns a Logger writing to out, off until Apply turns it on.
func New(out io.Writer) *Logger { return &Logger{out: out} }

// Apply takes in a configuration: logging.enable-request-log with a template turns
// the log on, logging.enable-probe-request-log adds probes. The Store has checked
// that the template parses; one that does not leaves the log as it was.
func (l *Logger) Apply(o *config.Observability) {
	if o == nil || !o.EnableRequestLog || o.RequestLogTemplate == "" {
		l.settings.Store(nil)
		return
	}
	if cur := l.settings.Load(); cur != nil && cur.source == o.RequestLogTemplate {
		if cur.probes != o.EnableProbeRequestLog {
			next := *cur
			next.probes = o.EnableProbeRequestLog
			l.settings.Store(&next)
		}
		return
	}
	tmpl, err := template.New("requestLog").Parse(o.RequestLogTemplate)
	if err != nil {
		return
	}
	l.settings.Store(&settings{source: o.RequestLogTemplate, tmpl: tmpl, probes: o.EnableProbeRequestLog,
		knative: o.RequestLogTemplate == config.DefaultRequestLogTemplate})
}

// Start begins the log line of a request arriving at start: it returns the writer to
// answer through, which counts the status and the bytes, and the Entry to Finish once
// the answer is written. With the log off, or for a probe while probes are not logged,
// it returns w and a nil Entry, whose Finish does nothing.
func (l *Logger) Start(w http.ResponseWriter, r *http.Request, start time.Time) (http.ResponseWriter, *Entry) {
	if l == nil {
		return w, nil
	}
	s := l.settings.Load()
	if s == nil || !s.probes && isProbe(r) {
		return w, nil
	}
	e := &Entry{logger: l, settings: s, start: start, recorder: recorder{ResponseWriter: w}}
	return &e.recorder, e
}

// Entry is one request's line in the making.
type Entry struct {
	logger   *Logger
	settings *settings
	start    time.Time
	recorder recorder
	// Revision is filled in by the request path once it knows what serves the request.
	Revision Revision
}

// Finish renders and writes the line for r.
func (e *Entry) Finish(r *http.Request) {
	if e == nil {
		return
	}
	code := e.recorder.code
	if code == 0 {
		code = http.StatusOK
	}
	in := input{
		Request:  r,
		Response: Response{Code: code, Size: e.recorder.size, Latency: time.Since(e.start).Seconds()},
		Revision: e.Revision,
		TraceID:  traceID(r),
	}
	bp := buffers.Get().(*[]byte)
	b := e.settings.render((*bp)[:0], &in)
	if len(b) == 0 || b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	e.logger.mu.Lock()
	_, _ = e.logger.out.Write(b)
	e.logger.mu.Unlock()
	*bp = b
	buffers.Put(bp)
}

// render appends the line of in to b.
func (s *settings) render(b []byte, in *input) []byte {
	if s.knative {
		return appendKnativeDefault(b, in)
	}
	buf := bytes.NewBuffer(b)
	if err := s.tmpl.Execute(buf, in); err != nil {
		return append(b[:0], invalidTemplateLine+"method, response code, latency, url\n"...)
	}
	return buf.Bytes()
}

// traceID is the request's W3C trace ID: the gateway's own span when it traces the
// request, else the caller's traceparent, else the caller's X-B3-TraceId (Knative
// reads only the two headers).
func traceID(r *http.Request) string {
	if sc := trace.SpanContextFromContext(r.Context()); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	if tp := r.Header.Get("Traceparent"); tp != "" {
		// version-traceid-parentid-flags
		if parts := strings.Split(tp, "-"); len(parts) >= 4 && len(parts[1]) == 32 {
			return parts[1]
		}
	}
	return r.Header.Get("X-B3-Traceid")
}

// isProbe says whether r is a probe rather than a user's request, as Knative tells
// them apart: the kubelet's (its user agent, or K-Kubelet-Probe) or Knative's
// networking probe (K-Network-Probe).
func isProbe(r *http.Request) bool {
	h := r.Header
	return strings.HasPrefix(h.Get("User-Agent"), "kube-probe/") || h.Get("K-Kubelet-Probe") != "" || h.Get("K-Network-Probe") != ""
}

// recorder counts what a handler writes. Unwrap lets http.ResponseController reach
// the connection's own writer, for flushing and for hijacking (WebSockets).
type recorder struct {
	http.ResponseWriter
	code int
	size int
}

func (w *recorder) WriteHeader(code int) {
	// 1xx are interim responses; the final status comes after them.
	if w.code == 0 && code >= 200 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.size += n
	return n, err
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack hands the connection over (an upgrade to WebSocket): the status then went out
// on the connection itself, 101 Switching Protocols.
func (w *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.code == 0 {
		w.code = http.StatusSwitchingProtocols
	}
	return conn, rw, err
}
