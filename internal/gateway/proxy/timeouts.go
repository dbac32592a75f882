package proxy

import (
	"io"
	"sync/atomic"
	"time"

	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/requestctx"
)

// Knative's three request timeouts, enforced as its queue-proxy and activator do
// (knative/serving pkg/http/handler/timeout.go), all counted from the request's
// arrival, the time it was held for a pod included:
//   - timeoutSeconds bounds the wait for the response to start, as Knative's handler
//     times a request out only while nothing was written (its conformance test
//     RevisionTimeout streams for 15 s under a 10 s timeout and wants a 200); a
//     response under way, a stream, is bounded by idleTimeoutSeconds alone;
//   - responseStartTimeoutSeconds bounds the wait for the response headers;
//   - idleTimeoutSeconds bounds a stretch without a byte either way (Knative counts
//     only what the pod writes; a WebSocket whose client alone talks is not idle here).
//
// An upgraded connection (a WebSocket) is the exception. Knative's reverse proxy
// writes the 101 and every byte after it on the hijacked connection, around the
// timeout handler's writer, so the handler times it as a request that never
// answered: when timeoutSeconds or responseStartTimeoutSeconds passes it returns,
// its context ends, and the proxy closes both connections, however busy they are
// (knative/serving issues 16169, 16638). The same holds here: a 101 does not count as
// the response's start, and either timeout closes the connection, counted from the
// arrival. The idle timeout stays Ferry's, counting bytes both ways: Knative's, which
// sees none of them, closes every upgraded connection at idleTimeoutSeconds.
//
// One timer per request, an AfterFunc with no goroutine of its own, enforces them:
// it fires at the earliest deadline, and if that one no longer holds (the response
// started, bytes flowed) sets itself for the next. A timeout cancels the request's
// context (the routed request); the handler's goroutine, which alone writes the
// answer, then answers 504 naming the Revision and the timeout, or cuts a response
// already under way.

// timeoutKind is the state of a request's timer: running, finished, or the timeout
// that ended the request.
type timeoutKind int32

const (
	running timeoutKind = iota
	finished
	timeoutTotal
	timeoutResponseStart
	timeoutIdle
)

// timeoutNames are the Revision fields, for answers and the metric's label.
var timeoutNames = [...]string{
	timeoutTotal:         "timeoutSeconds",
	timeoutResponseStart: "responseStartTimeoutSeconds",
	timeoutIdle:          "idleTimeoutSeconds",
}

// requestTimer is a routed request's share of the timeouts. Its fields other than
// limits are shared with the timer's callback.
type requestTimer struct {
	limits backends.Timeouts
	start  time.Time
	ctx    *requestctx.Context // the request's, cancelled by a timeout
	timer  atomic.Pointer[time.Timer]
	state  atomic.Int32
	// started is set when the response headers arrive.
	started atomic.Bool
	// active is when the last byte went either way, as time since start; kept only
	// with an idle timeout.
	active atomic.Int64
}

// arm starts the timer; a timeout cancels ctx.
func (rt *requestTimer) arm(ctx *requestctx.Context) {
	rt.ctx = ctx
	_, next := rt.due(0)
	rt.timer.Store(time.AfterFunc(next, rt.expire))
}

// stop ends the timer with the request; it reports the timeout that fired, if one
// did.
func (rt *requestTimer) stop() timeoutKind {
	if rt.state.CompareAndSwap(int32(running), int32(finished)) {
		rt.timer.Load().Stop()
		return running
	}
	return rt.fired()
}

// fired is the timeout that ended the request, or running.
func (rt *requestTimer) fired() timeoutKind {
	if k := timeoutKind(rt.state.Load()); k >= timeoutTotal {
		return k
	}
	return running
}

func (rt *requestTimer) expire() {
	if timeoutKind(rt.state.Load()) != running {
		return
	}
	elapsed := time.Since(rt.start)
	kind, next := rt.due(elapsed)
	if kind == running && next == noDeadline {
		return // the response started, and there is no idle timeout
	}
	if kind == running {
		// The response started or bytes flowed since the timer was set: a fresh
		// timer for the next deadline (stop loads whichever is current).
		rt.timer.Store(time.AfterFunc(next, rt.expire))
		return
	}
	if rt.state.CompareAndSwap(int32(running), int32(kind)) {
		rt.ctx.Cancel()
	}
}

// noDeadline is due's "nothing left to time": the response started and no idle
// timeout applies.
const noDeadline time.Duration = -1

// due returns the timeout whose deadline has passed at elapsed since the arrival
// (the earliest one), or running and the time left until the next deadline
// (noDeadline if none is left).
func (rt *requestTimer) due(elapsed time.Duration) (timeoutKind, time.Duration) {
	kind, at := running, noDeadline
	if !rt.started.Load() {
		kind, at = timeoutTotal, rt.limits.Total
		if rt.limits.ResponseStart > 0 && rt.limits.ResponseStart < at {
			kind, at = timeoutResponseStart, rt.limits.ResponseStart
		}
	}
	if rt.limits.Idle > 0 {
		if idleAt := time.Duration(rt.active.Load()) + rt.limits.Idle; at == noDeadline || idleAt < at {
			kind, at = timeoutIdle, idleAt
		}
	}
	switch {
	case at == noDeadline:
		return running, noDeadline
	case at <= elapsed:
		return kind, 0
	}
	return running, at - elapsed
}

// limit is the duration of a timeout, for answers.
func (rt *requestTimer) limit(k timeoutKind) time.Duration {
	switch k {
	case timeoutResponseStart:
		return rt.limits.ResponseStart
	case timeoutIdle:
		return rt.limits.Idle
	}
	return rt.limits.Total
}

// responseStarted marks the headers' arrival (which is also activity).
func (rt *requestTimer) responseStarted() {
	rt.started.Store(true)
	rt.touch()
}

func (rt *requestTimer) touch() {
	if rt.limits.Idle > 0 {
		rt.active.Store(int64(time.Since(rt.start)))
	}
}

// activeBody counts a body's bytes as activity for the idle timeout.
type activeBody struct {
	io.ReadCloser
	rt *requestTimer
}

func (b *activeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.rt.touch()
	}
	return n, err
}

// activeConn is an upgraded connection to the pod whose bytes, both ways, count as
// activity; ReverseProxy copies between it and the client's.
type activeConn struct {
	io.ReadWriteCloser
	rt *requestTimer
}

func (c *activeConn) Read(p []byte) (int, error) {
	n, err := c.ReadWriteCloser.Read(p)
	if n > 0 {
		c.rt.touch()
	}
	return n, err
}

func (c *activeConn) Write(p []byte) (int, error) {
	n, err := c.ReadWriteCloser.Write(p)
	if n > 0 {
		c.rt.touch()
	}
	return n, err
}
