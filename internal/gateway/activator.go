package gateway

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
	"k8s.io/apimachinery/pkg/util/intstr"
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
	active *ActiveSet
	// draining is closed when the listeners stop accepting: held requests are
	// answered then, so that clients retry elsewhere instead of waiting for the
	// drain timeout.
	draining  chan struct{}
	drainOnce sync.Once
	// replicas split containerConcurrency among the gateway replicas; nil: alone.
	replicas *ReplicaSet
}

func newActivator(opts Options, m *Metrics) *activator {
	return &activator{sink: opts.Stats, maxQueued: int64(opts.MaxQueued), timeout: opts.RequestTimeout, metrics: m,
		draining: make(chan struct{})}
}

// drain answers the held requests and those that would be.
func (a *activator) drain() { a.drainOnce.Do(func() { close(a.draining) }) }

// waitRoom is where a Service's held requests wait. waiting is read on every release
// of a slot, so that releases cost one atomic load while nobody waits.
type WaitRoom struct {
	// waiting counts the held requests of the Service, for its bound and its poke.
	Waiting atomic.Int64

	mu sync.Mutex
	// lines are the waiters by the split port they route to: a slot freed on one
	// port's endpoint is of no use to the others', so each line gets its own token.
	lines []*WaitLine
}

// waitLine is the requests waiting for one port of a Service. tokens holds at most
// one wake-up: a release that finds the line waiting leaves one, and the waiter that
// takes it and gets a slot passes another on if others still wait, so that no freed
// slot goes unnoticed while none is wasted on a herd.
type WaitLine struct {
	port    intstr.IntOrString
	waiters int // guarded by waitRoom.mu
	Tokens  chan struct{}
}

func (wr *WaitRoom) Join(port intstr.IntOrString) *WaitLine {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	for _, l := range wr.lines {
		if l.port == port {
			l.waiters++
			return l
		}
	}
	l := &WaitLine{port: port, waiters: 1, Tokens: make(chan struct{}, 1)}
	wr.lines = append(wr.lines, l)
	return l
}

// leave takes a waiter out of its line; one that got a limited slot wakes the next
// (passOn), since more slots may have been freed than tokens left.
func (wr *WaitRoom) Leave(l *WaitLine, passOn bool) {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	l.waiters--
	if l.waiters > 0 {
		if passOn {
			wake(l)
		}
		return
	}
	for i, other := range wr.lines {
		if other == l {
			wr.lines = append(wr.lines[:i], wr.lines[i+1:]...)
			break
		}
	}
}

// slotFreed wakes one waiter of each line; a release calls it after giving back its
// slot, when waiting says someone waits.
func (wr *WaitRoom) SlotFreed() {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	for _, l := range wr.lines {
		wake(l)
	}
}

func wake(l *WaitLine) {
	select {
	case l.Tokens <- struct{}{}:
	default: // a token is already there
	}
}

// hold waits until a ready endpoint of the split's Service has a free slot for the
// request, and returns it with the slot taken, counted on the pod from now; or answers
// the request itself (503, 504, or nothing for a client that left: 499) and returns
// nil. cold says the request found no ready endpoint at all, rather than none below
// the limit.
func (a *activator) hold(w http.ResponseWriter, r *http.Request, rr *routedRequest, cold bool) *Target {
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
		changed := *svc.changed.Load()
		se := svc.endpoints.Load()
		targets := se.targets(rr.split.Port)
		limit, m := se.limit(), a.replicas.Members()
		if t := targets.Acquire(limit, m); t != nil {
			passOn = limit > 0
			now := time.Now()
			t.Pod.Began(Micros(now))
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
			rr.revision = svc.revisionName(se)
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
