package proxy

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
)

// The gateway is Ferry's activator: a request routed to a revision that has no ready
// endpoint, or none below its containerConcurrency, is held here until one can take
// it, within the revision's timeout and a per-revision bound, instead of being
// refused. Nothing polls: an endpoints swap closes the Service's changed channel, and a
// request that gives back a slot hands a token to the waiters.

// activator is the holding state the two listeners share.
type activator struct {
	sink      stats.Sink
	maxQueued int64
	// timeout is the revision timeout of Services without the annotation.
	timeout time.Duration
	metrics *Metrics
	// active receives the revisions that come out of idleness; nil without a
	// reporter.
	active *backends.ActiveSet
	// draining is closed when the listeners stop accepting: held requests are
	// answered then, so that clients retry elsewhere instead of waiting for the
	// drain timeout.
	draining  chan struct{}
	drainOnce sync.Once
	// replicas split containerConcurrency among the gateway replicas; nil: alone.
	replicas *backends.ReplicaSet
}

func newActivator(opts Config, m *Metrics) *activator {
	return &activator{sink: opts.Stats, maxQueued: int64(opts.MaxQueued), timeout: opts.RequestTimeout, metrics: m,
		draining: make(chan struct{})}
}

// drain answers the held requests and those that would be.
func (a *activator) drain() { a.drainOnce.Do(func() { close(a.draining) }) }

// hold waits until a ready endpoint of the split's Service has a free slot for the
// request, and returns it with the slot taken, counted on the pod from now; or answers
// the request itself (503, 504, or nothing for a client that left: 499) and returns
// nil. cold says the request found no ready endpoint at all, rather than none below
// the limit.
func (a *activator) hold(w http.ResponseWriter, r *http.Request, rr *routedRequest, cold bool) *backends.Target {
	svc := rr.split.Service
	room := &svc.Room
	queued := room.Waiting.Add(1)
	if queued > a.maxQueued {
		room.Waiting.Add(-1)
		rr.code = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "1")
		writeError(w, rr.code, "ferry: revision %s has %d requests waiting; try again\n", rr.revision, queued-1)
		return nil
	}
	line := room.Join(rr.split.Port)
	a.metrics.Queued.Inc()
	passOn := false
	defer func() {
		room.Leave(line, passOn)
		room.Waiting.Add(-1)
		a.metrics.Queued.Dec()
	}()
	if cold && queued == 1 && a.sink != nil {
		// The first request to wait for a revision without a pod tells the
		// autoscaler at once; the others are in the next report. Not under a lock.
		a.sink.Poke(svc.Key.Namespace, rr.revision)
	}

	for {
		// changed before endpoints: a swap after this load closes ch.
		changed := svc.Changed()
		se := svc.Endpoints()
		targets := se.Targets(rr.split.Port)
		limit, m := se.Limit(), a.replicas.Members()
		if t := targets.Acquire(limit, m); t != nil {
			passOn = limit > 0
			now := time.Now()
			t.Pod.Began(backends.Micros(now))
			waited := now.Sub(rr.start)
			if cold {
				// From the swap that brought the pod (or the arrival, if the
				// swap came first) to here: the gateway's own share of the cold
				// start.
				from := se.Published
				if from.Before(rr.start) {
					from = rr.start
				}
				a.metrics.ReleaseDelay.Observe(now.Sub(from).Seconds())
			}
			a.metrics.ActivationWait.Observe(waited.Seconds())
			w.Header().Set("X-Ferry-Activation-Wait", formatWait(waited))
			rr.revision = svc.RevisionName(se)
			return t
		}
		select {
		case <-changed:
		case <-line.Tokens:
		case <-r.Context().Done():
			kind := rr.timer.fired()
			if kind == running {
				rr.code = 499 // the client went away; nobody reads an answer
				return nil
			}
			// A revision timeout (each counts from the arrival, see timeouts.go).
			rr.code = http.StatusGatewayTimeout
			within := fmt.Sprintf("%s (%s)", rr.timer.limit(kind), timeoutNames[kind])
			w.Header().Set("X-Ferry-Activation-Wait", formatWait(time.Since(rr.start)))
			if targets.Empty() {
				writeError(w, rr.code, "ferry: revision %s did not get a ready pod within %s\n", rr.revision, within)
			} else if m.Count > 1 {
				writeError(w, rr.code, "ferry: revision %s had no pod free for the request (containerConcurrency %d, shared by %d gateway replicas) within %s\n",
					rr.revision, limit, m.Count, within)
			} else {
				writeError(w, rr.code, "ferry: revision %s had no pod free for the request (containerConcurrency %d) within %s\n",
					rr.revision, limit, within)
			}
			return nil
		case <-a.draining:
			rr.code = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Connection", "close")
			writeError(w, rr.code, "ferry: the gateway is shutting down; try again\n")
			return nil
		}
	}
}

// formatWait is the X-Ferry-Activation-Wait value: seconds, to the millisecond.
func formatWait(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) + "s"
}
