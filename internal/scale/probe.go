package scale

// Probing the gateway for each Ready Service until a request is routed: Ready is
// the control plane's word, routed is what a user sees.

import (
	"context"
	"time"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/explain"
)

// observe records the first time a Service is seen Ready and starts its probe.
func (r *runner) observe(ctx context.Context, svc *v1.Service) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	i, ok := r.index[svc.Name]
	if !ok || svc.Namespace != r.nsOf(i) || !r.readyAt[i].IsZero() || !svc.IsReady() {
		return
	}
	r.readyAt[i] = now
	r.reached[i][ServiceReady] = now
	if r.o.GatewayURL == "" || r.probing[i] || r.closed {
		return
	}
	r.probing[i] = true
	start := r.start[i]
	if start.IsZero() { // the watch beat the create's bookkeeping
		start = now
	}
	deadline := start.Add(r.o.TimeoutPerService)
	host := hostOf(svc.Status.URL)
	r.probes.Go(func() {
		routed, attempts, answer := r.probe(ctx, host, deadline)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.attempts[i], r.probeDone[i] = attempts, true
		if routed.IsZero() {
			r.lastAnswer[i] = answer
		} else {
			r.routedAt[i] = routed
		}
	})
}

func hostOf(u string) string { return explain.HostOf(u) }

// maxProbeAttempts bounds the requests sent to one Service.
const maxProbeAttempts = 200

// probe sends requests to the gateway with the Service's host until one is routed
// to a revision, the deadline passes or the attempts run out. It returns when the
// routed answer came (zero if none), the attempts and the last answer.
func (r *runner) probe(ctx context.Context, host string, deadline time.Time) (time.Time, int, string) {
	if host == "" {
		return time.Time{}, 0, "the Ready Service has no status.url"
	}
	select {
	case r.probeSem <- struct{}{}:
	case <-ctx.Done():
		return time.Time{}, 0, ctx.Err().Error()
	}
	defer func() { <-r.probeSem }()
	delay := 10 * time.Millisecond
	var last string
	for attempt := 1; ; attempt++ {
		ok, answer := r.probeOnce(ctx, host)
		if ok {
			return time.Now(), attempt, ""
		}
		last = answer
		if attempt >= maxProbeAttempts || time.Now().Add(delay).After(deadline) {
			return time.Time{}, attempt, last
		}
		select {
		case <-ctx.Done():
			return time.Time{}, attempt, last
		case <-time.After(delay):
		}
		delay = min(delay*2, 500*time.Millisecond)
	}
}

func (r *runner) probeOnce(ctx context.Context, host string) (bool, string) {
	return explain.Probe(ctx, r.http, r.o.GatewayURL, host)
}

// Routed says whether a gateway answer means the request reached a revision (see
// explain.Routed).
func Routed(status int, body string) bool { return explain.Routed(status, body) }
