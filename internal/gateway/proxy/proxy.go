package proxy

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/requestlog"
	"github.com/ferry-serving/ferry/internal/gateway/routing"
	"github.com/ferry-serving/ferry/internal/telemetry"
	"go.opentelemetry.io/otel/trace"
)

// Config is what the request path takes from the gateway's Options.
type Config struct {
	// RequestTimeout is the timeoutSeconds of backends that set none.
	RequestTimeout time.Duration
	// MaxQueued bounds the requests held per revision; negative holds none.
	MaxQueued int
	// Stats is poked when a request is held for a revision without a ready pod; nil:
	// nobody is.
	Stats stats.Sink
	// IdleTimeout closes idle upstream connections.
	IdleTimeout time.Duration
	// DialTimeout bounds connecting to an endpoint; DialContext connects.
	DialTimeout time.Duration
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// Telemetry gives the tracer while tracing is on (tracing.go); nil: never.
	Telemetry *telemetry.Telemetry
	// RequestLog writes a line per request while config-observability turns it on;
	// nil: never.
	RequestLog *requestlog.Logger
}

// Proxy is the request path that the listeners share: the activator's holding state
// and the forwarder's pool of upstream connections.
type Proxy struct {
	table     func() *routing.Table
	forwarder *forwarder
	activator *activator
	metrics   *Metrics
	telemetry *telemetry.Telemetry
	log       *requestlog.Logger
}

// New returns the request path over the routing tables that table returns, counting
// into m. active, if not nil, receives the revisions that come out of idleness, for
// a backends.Reporter.
func New(cfg Config, table func() *routing.Table, m *Metrics, active *backends.ActiveSet) *Proxy {
	a := newActivator(cfg, m)
	a.active = active
	return &Proxy{table: table, forwarder: newForwarder(cfg, m), activator: a, metrics: m, log: cfg.RequestLog, telemetry: cfg.Telemetry}
}

// Handler is one listener's handler; the external one serves ExternalIP routes only.
func (p *Proxy) Handler(external bool) http.Handler {
	return &listenerHandler{
		external:  external,
		table:     p.table,
		roll:      rand.IntN,
		forwarder: p.forwarder,
		activator: p.activator,
		metrics:   p.metrics,
		telemetry: p.telemetry,
		log:       p.log,
	}
}

// ShareWith has every pod's containerConcurrency shared with the replicas of rs.
func (p *Proxy) ShareWith(rs *backends.ReplicaSet) { p.activator.replicas = rs }

// Drain answers the held requests at once (503), and those that would be held: the
// listeners are shutting down, and the client can retry on another replica.
func (p *Proxy) Drain() { p.activator.drain() }

// listenerHandler is the handler of one listener: it routes a request through the current table
// and hands it to the shared forwarder.
type listenerHandler struct {
	// external selects the ExternalIP routes only.
	external bool
	table    func() *routing.Table
	// roll returns a uniform int in [0,n) for split selection; tests fix it.
	roll      func(n int) int
	forwarder *forwarder
	activator *activator
	metrics   *Metrics
	telemetry *telemetry.Telemetry
	log       *requestlog.Logger
}

// routedRequest is the routing decision for one request, carried in its context to
// the forwarder's hooks.
type routedRequest struct {
	route    *routing.Route
	split    *routing.Split
	target   *backends.Target
	revision string
	// start is the arrival.
	start time.Time
	sent  time.Time
	// timer enforces the revision's timeouts, from the arrival.
	timer requestTimer
	// code is the status returned to the client, for metrics.
	code int
	// upstreamSpan is the call to the pod's span while tracing, which finish ends;
	// serverSpan is the request's.
	upstreamSpan, serverSpan trace.Span
}

type routedRequestKey struct{}

func (p *listenerHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	tr := p.requestTracer(r)
	w, logged := p.log.Start(w, r, start)
	if logged != nil {
		defer logged.Finish(r)
	}
	host, ok := routing.CanonicalHost(r.Host)
	if !ok {
		p.reject(w, nil, "", "", http.StatusBadRequest, "ferry: malformed Host header %q\n", r.Host)
		return
	}
	t := p.table()
	routes := t.Lookup(host).Routes(p.external)
	if len(routes) == 0 {
		p.reject(w, nil, "", "", http.StatusNotFound, "ferry: no route for host %q\n", host)
		return
	}
	rt := routing.Follow(t, routing.MatchRoute(routes, r), r, p.roll)
	if rt == nil {
		p.reject(w, nil, host, "", http.StatusNotFound, "ferry: no route for %s%s\n", host, r.URL.Path)
		return
	}
	sp := rt.Pick(p.roll)
	svc := sp.Service
	se := svc.Endpoints()
	rr := &routedRequest{route: rt, split: sp, revision: svc.RevisionName(se), start: start}
	rr.timer.limits, rr.timer.start = se.Limits(p.activator.timeout), start
	// From here until finish the request counts as in flight for its revision, held
	// or not: it is demand. Deferred, as the forwarder aborts the handler with a
	// panic when the upstream body breaks off after the headers went out.
	svc.Load.Begin(backends.Micros(start), p.activator.active)
	defer p.finish(svc, host, rr)
	if logged != nil {
		logged.Revision = revisionOf(svc, se, rr)
	}
	ctx := context.WithValue(rr.timer.arm(r.Context()), routedRequestKey{}, rr)
	if tr != nil {
		traceRouted(tr, ctx, start, rr, se)
	}
	targets := se.Targets(sp.Port)
	if rr.target = targets.Acquire(se.Limit(), p.activator.replicas.Members()); rr.target != nil {
		rr.target.Pod.Began(backends.Micros(start))
	} else {
		cold, held := targets.Empty(), time.Time{}
		if tr != nil {
			held = time.Now()
		}
		rr.target = p.activator.hold(w, r.WithContext(ctx), rr, cold)
		if tr != nil {
			traceActivation(tr, ctx, held, rr, cold)
		}
		if rr.target == nil {
			return
		}
	}
	if tr != nil {
		ctx = startUpstream(tr, ctx, r, rr)
	}
	if logged != nil {
		logged.Revision.PodName, logged.Revision.PodIP = rr.target.Pod.Name(), rr.target.IP
	}
	switch {
	case rr.target.Simulated:
		answerSimulated(w, r.WithContext(ctx), rr)
	case direct(r, rr):
		// With the context apart: the request's copy that WithContext makes is one
		// allocation of the few left on this path.
		p.forwarder.forwardDirect(ctx, w, r, rr)
	default:
		p.forwarder.ServeHTTP(w, r.WithContext(ctx))
	}
}

// finish ends a routed request: its slot on the endpoint is given back (waking a
// waiter if one waits for it), its time in flight is accounted, and its answer
// counted.
func (p *listenerHandler) finish(svc *backends.Service, host string, rr *routedRequest) {
	if kind := rr.timer.stop(); kind != running {
		p.metrics.Timeouts.WithLabelValues(timeoutNames[kind]).Inc()
	}
	rr.timer.cancel(nil)
	end := backends.Micros(time.Now())
	if rr.target != nil {
		rr.target.Release(end)
		// One atomic load while nobody waits, which is nearly always.
		if svc.Room.Waiting.Load() > 0 {
			svc.Room.SlotFreed()
		}
	}
	svc.Load.End(end)
	p.metrics.countRequest(svc, host, rr.code, rr.revision)
	if rr.upstreamSpan != nil {
		endUpstream(rr)
	}
}

// revisionOf names, for the request log, the revision a request is routed to; the
// pod is added once one is picked.
func revisionOf(svc *backends.Service, se *backends.Endpoints, rr *routedRequest) requestlog.Revision {
	service, configuration := se.Owners()
	return requestlog.Revision{Name: rr.revision, Namespace: svc.Key.Namespace, Service: service, Configuration: configuration}
}

// reject answers a request the gateway cannot forward with a short plain-text body.
func (p *listenerHandler) reject(w http.ResponseWriter, svc *backends.Service, host, revision string, code int, format string, args ...any) {
	p.metrics.countRequest(svc, host, code, revision)
	writeError(w, code, format, args...)
}

func writeError(w http.ResponseWriter, code int, format string, args ...any) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintf(w, format, args...)
}

// forwarder is the reverse proxy both listeners share, and with it the pool of
// upstream connections.
type forwarder struct {
	httputil.ReverseProxy
	// upstream is ReverseProxy's Transport, which the direct path uses itself.
	upstream *upstream
	metrics  *Metrics
}

func newForwarder(opts Config, m *Metrics) *forwarder {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		// The deadline ends the dial only; an established connection outlives it.
		ctx, cancel := context.WithTimeout(ctx, opts.DialTimeout)
		defer cancel()
		return opts.DialContext(ctx, network, addr)
	}
	f := &forwarder{metrics: m, upstream: &upstream{
		fallback:    newFallbackTransport(opts, dial),
		h2c:         newH2CTransport(opts, dial),
		dial:        dial,
		idleTimeout: opts.IdleTimeout,
	}}
	f.ReverseProxy = httputil.ReverseProxy{
		Rewrite:        f.rewrite,
		ModifyResponse: f.received,
		ErrorHandler:   f.failed,
		BufferPool:     newBufferPool(),
		Transport:      f.upstream,
	}
	return f
}

func newFallbackTransport(opts Config, dial func(context.Context, string, string) (net.Conn, error)) *http.Transport {
	return &http.Transport{
		// Never an environment proxy: endpoints are pod addresses.
		Proxy:       nil,
		DialContext: dial,
		// The default of 2 idle connections per endpoint makes every burst beyond
		// that pay a TCP handshake.
		MaxIdleConnsPerHost: maxIdlePerAddr,
		IdleConnTimeout:     opts.IdleTimeout,
		// No ResponseHeaderTimeout: the revision timeouts differ per revision, and
		// each request's timer enforces them.
		// Pass the client's Accept-Encoding through instead of negotiating gzip
		// and decompressing on the client's behalf.
		DisableCompression:    true,
		ExpectContinueTimeout: time.Second,
	}
}

// newH2CTransport speaks HTTP/2 without TLS, with prior knowledge, to pods whose
// port says h2c: net/http's own HTTP/2, many streams over one connection per pod.
func newH2CTransport(opts Config, dial func(context.Context, string, string) (net.Conn, error)) *http.Transport {
	t := &http.Transport{
		Proxy:              nil,
		DialContext:        dial,
		IdleConnTimeout:    opts.IdleTimeout,
		DisableCompression: true,
		Protocols:          new(http.Protocols),
	}
	t.Protocols.SetUnencryptedHTTP2(true)
	return t
}

func (f *forwarder) rewrite(pr *httputil.ProxyRequest) {
	rr := pr.In.Context().Value(routedRequestKey{}).(*routedRequest)
	pr.Out.URL.Scheme = "http"
	pr.Out.URL.Host = rr.target.Addr
	if rr.route.RewriteHost != "" {
		pr.Out.Host = rr.route.RewriteHost
	}
	// The gateway is the edge: Rewrite has dropped any X-Forwarded-* the client sent,
	// and these are set from what the gateway itself saw.
	pr.SetXForwarded()
	clientIP, _, _ := net.SplitHostPort(pr.In.RemoteAddr)
	pr.Out.Header.Set("Forwarded", string(appendForwarded(nil, clientIP, pr.In.Host, pr.Out.Header.Get("X-Forwarded-Proto"))))
	for _, h := range rr.route.AppendHeaders {
		pr.Out.Header.Set(h.Name, h.Value)
	}
	for _, h := range rr.split.AppendHeaders {
		pr.Out.Header.Set(h.Name, h.Value)
	}
	if rr.timer.limits.Idle > 0 && pr.Out.Body != nil && pr.Out.Body != http.NoBody {
		pr.Out.Body = &activeBody{ReadCloser: pr.Out.Body, rt: &rr.timer}
	}
	rr.sent = time.Now()
}

// appendForwarded appends RFC 7239's Forwarded header value for what the gateway saw,
// `for=<client>;host=<host>;proto=<http|https>` (an IPv6 client quoted in brackets),
// as Knative's queue-proxy makes it from the X-Forwarded-* headers: the runtime
// contract says a container MUST get it, and Ferry has no queue-proxy. It appends so
// that the direct path writes it into its buffer without an allocation.
func appendForwarded(b []byte, clientIP, host, proto string) []byte {
	if clientIP != "" {
		b = append(b, "for="...)
		if strings.Contains(clientIP, ":") {
			b = append(b, `"[`...)
			b = append(b, clientIP...)
			b = append(b, `]"`...)
		} else {
			b = append(b, clientIP...)
		}
		b = append(b, ';')
	}
	b = append(b, "host="...)
	b = append(b, host...)
	b = append(b, ";proto="...)
	return append(b, proto...)
}

func (f *forwarder) received(res *http.Response) error {
	f.receivedBy(res.Request.Context().Value(routedRequestKey{}).(*routedRequest), res)
	return nil
}

// receivedBy notes the response headers' arrival for rr and wraps the body for the
// idle timeout. A 101 does not start the response as the timeouts count it: an
// upgraded connection stays bounded by timeoutSeconds and responseStartTimeoutSeconds
// from its arrival, as in Knative (timeouts.go).
func (f *forwarder) receivedBy(rr *routedRequest, res *http.Response) {
	rr.code = res.StatusCode
	if res.StatusCode == http.StatusSwitchingProtocols {
		rr.timer.touch()
	} else {
		rr.timer.responseStarted()
	}
	if rr.timer.limits.Idle > 0 {
		if rwc, ok := res.Body.(io.ReadWriteCloser); ok && res.StatusCode == http.StatusSwitchingProtocols {
			res.Body = &activeConn{ReadWriteCloser: rwc, rt: &rr.timer}
		} else {
			res.Body = &activeBody{ReadCloser: res.Body, rt: &rr.timer}
		}
	}
	f.metrics.observeUpstream(rr.split.Service, rr.revision, time.Since(rr.sent).Seconds())
}

func (f *forwarder) failed(w http.ResponseWriter, r *http.Request, err error) {
	rr := r.Context().Value(routedRequestKey{}).(*routedRequest)
	switch kind := rr.timer.fired(); {
	case kind != running:
		rr.code = http.StatusGatewayTimeout
		writeError(w, rr.code, "ferry: revision %s did not answer in time: %s (%s) passed (pod %s)\n",
			rr.revision, timeoutNames[kind], rr.timer.limit(kind), rr.target.IP)
	case r.Context().Err() != nil:
		// The client went away; nobody reads an answer. 499 is nginx's code for it.
		rr.code = 499
	case grpcDeadlinePassed(r.Header.Get("Grpc-Timeout"), rr.start, time.Now()):
		// A gRPC server ends a call at the deadline its client sent (grpc-timeout) by
		// resetting the stream, often a moment before the client's own timer fires:
		// the client gets what the pod would have said, not a 502 it cannot read.
		rr.code = http.StatusOK
		h := w.Header()
		h.Set("Content-Type", "application/grpc")
		h.Set("Grpc-Status", "4") // DEADLINE_EXCEEDED
		h.Set("Grpc-Message", "ferry: revision "+rr.revision+" ended the call at its deadline")
		w.WriteHeader(http.StatusOK)
	default:
		rr.code = http.StatusBadGateway
		writeError(w, rr.code, "ferry: revision %s: upstream %s failed: %v\n", rr.revision, rr.target.Addr, err)
	}
}

// bufferPool recycles the ReverseProxy's copy buffers, which would otherwise be
// allocated per request.
type bufferPool struct{ pool sync.Pool }

func newBufferPool() *bufferPool {
	return &bufferPool{pool: sync.Pool{New: func() any { return new([32 << 10]byte) }}}
}

func (b *bufferPool) Get() []byte { return b.pool.Get().(*[32 << 10]byte)[:] }

func (b *bufferPool) Put(buf []byte) {
	if len(buf) == 32<<10 {
		b.pool.Put((*[32 << 10]byte)(buf))
	}
}

// grpcTimeoutUnits are the units of gRPC's grpc-timeout header.
var grpcTimeoutUnits = map[byte]time.Duration{'H': time.Hour, 'M': time.Minute, 'S': time.Second,
	'm': time.Millisecond, 'u': time.Microsecond, 'n': time.Nanosecond}

// grpcDeadlinePassed says a gRPC call with the grpc-timeout header timeout, sent at
// start, is past its deadline at now. The header is at most 8 digits and a unit.
func grpcDeadlinePassed(timeout string, start, now time.Time) bool {
	if len(timeout) < 2 || len(timeout) > 9 {
		return false
	}
	n, err := strconv.ParseInt(timeout[:len(timeout)-1], 10, 64)
	if err != nil || n < 0 {
		return false
	}
	unit, ok := grpcTimeoutUnits[timeout[len(timeout)-1]]
	if !ok {
		return false
	}
	return !now.Before(start.Add(time.Duration(n) * unit))
}
