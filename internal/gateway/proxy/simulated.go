package proxy

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ferry-serving/ferry/internal/gateway/backends"
)

// On ferry up, kwok's pods have no process; the gateway answers for them. So that
// load on ferry up looks like load on real pods (and the autoscaler has something to
// scale), a simulated pod can take time to answer and serve a bounded number of
// requests at once, as Knative's autoscale test image does with ?sleep=. The request
// keeps its slot on the pod and stays in flight for its revision meanwhile: the
// autoscaler sees it as concurrency, and containerConcurrency applies.

// parseSleep reads ?sleep= as Knative's autoscale image does: milliseconds, or a Go
// duration; not negative. ok is false without the parameter.
func parseSleep(r *http.Request) (d time.Duration, ok bool, err error) {
	q := r.URL.Query()
	if !q.Has("sleep") {
		return 0, false, nil
	}
	v := q.Get("sleep")
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		d = time.Duration(ms) * time.Millisecond
	} else if d, err = time.ParseDuration(v); err != nil {
		return 0, true, fmt.Errorf("sleep=%q is neither milliseconds nor a duration", v)
	}
	if d < 0 {
		return 0, true, fmt.Errorf("sleep=%q is negative", v)
	}
	return d, true, nil
}

// answerSimulated answers for a kwok-simulated pod, which has no process to forward
// to: after the request's service time and a free seat on the pod, within the
// revision's timeout (then 504, as for a real pod that did not answer in time). The
// answer names the revision and the pod, so that a client sees where the request was
// routed.
func answerSimulated(w http.ResponseWriter, r *http.Request, rr *routedRequest) {
	var sim backends.Simulation
	if se := rr.split.Service.Endpoints(); se != nil {
		sim = se.Simulation
	}
	sleep, asked, err := parseSleep(r)
	if err != nil {
		rr.code = http.StatusBadRequest
		writeError(w, rr.code, "ferry: %v\n", err)
		return
	}
	if !asked {
		sleep = sim.ServiceTime
	}
	ctx := r.Context() // ended by the revision's timeouts (timeouts.go) or the client
	if sim.Capacity > 0 {
		seats := rr.target.Pod.Seats(sim.Capacity)
		if err := seats.Acquire(ctx, 1); err != nil {
			simulatedGaveUp(w, r, rr)
			return
		}
		defer seats.Release(1)
	}
	if sleep > 0 {
		t := time.NewTimer(sleep)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			simulatedGaveUp(w, r, rr)
			return
		}
	}
	rr.code = http.StatusOK
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Ferry-Simulated", "true")
	w.WriteHeader(rr.code)
	fmt.Fprintf(w, "Hello from revision %s (pod %s is simulated by kwok; no process serves it)\n", rr.revision, rr.target.IP)
	if sleep > 0 {
		fmt.Fprintf(w, "Slept for %v.\n", sleep)
	}
}

// simulatedGaveUp ends a simulated answer that the client left (499) or that the
// revision's timeout cut (504).
func simulatedGaveUp(w http.ResponseWriter, r *http.Request, rr *routedRequest) {
	kind := rr.timer.fired()
	if kind == running {
		rr.code = 499 // the client went away; nobody reads an answer
		return
	}
	rr.code = http.StatusGatewayTimeout
	writeError(w, rr.code, "ferry: revision %s did not answer in time: %s (%s) passed (pod %s)\n",
		rr.revision, timeoutNames[kind], rr.timer.limit(kind), rr.target.IP)
}
