package proxy

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/requestctx"
	"github.com/ferry-serving/ferry/internal/gateway/requestlog"
	"github.com/ferry-serving/ferry/internal/gateway/routing"
	"github.com/ferry-serving/ferry/internal/telemetry"
	"go.opentelemetry.io/otel/trace"
)

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

// routedRequest is the routing decision for one request, and the request's context
// from there on: cancelled with the client's request, by the revision's timer, or
// when the request ends; the forwarder's hooks find it as the value of
// routedRequestKey. One context where there were three (docs/gateway.md, "One context
// per request").
type routedRequest struct {
	requestctx.Context
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

// begin makes rr the request's context under parent and starts its timer.
func (rr *routedRequest) begin(parent context.Context) {
	rr.Init(parent)
	rr.timer.arm(&rr.Context)
}

func (rr *routedRequest) Value(key any) any {
	if _, ok := key.(routedRequestKey); ok {
		return rr
	}
	return rr.Context.Value(key)
}

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
	rr.begin(r.Context())
	var ctx context.Context = rr
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
	rr.Cancel()
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
