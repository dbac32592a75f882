package backends

import (
	"sync"
	"sync/atomic"
	"time"
)

// Load accounting. Every request routed to a Service is counted from its arrival to
// the end of its answer, held time included: that is the demand the autoscaler
// scales for. Each Service keeps a revisionLoad; the reporter reads the ones that saw
// traffic once per ReportInterval and sends a stats.Report. Each pod's slot keeps the
// same accounting of the requests on the pod, from the moment one took a slot there
// (not while held), for the report's per-pod breakdown.
//
// The time-weighted average concurrency over a period is the growth of the
// cumulative area A(t) = ∫ concurrency dt, divided by the period's length. With N
// requests in flight that started at t_i, and the areas of the completed ones summed
// in C,
//
//	A(t) = C + Σ (t − t_i) = (C − Σ t_i) + N·t = W + N·t
//
// A request's start subtracts its t from W and adds 1 to N; its end adds its t to W
// and subtracts 1 from N. Kept as two atomics, a reader could see one half of an
// update and be off by t itself (hours of area); so both live in one word,
// W·2^loadCountBits + N, and each update is a single atomic add, which keeps the
// packing exact. W is taken modulo 2^44 microseconds: the reporter only ever uses the
// difference of two readings, which is exact as long as one period's area stays under
// 2^44 µs (17 million request-seconds), and N stays under 2^20 (a million requests of
// one revision in flight in one gateway replica).
const (
	loadCountBits = 20
	loadCountMask = 1<<loadCountBits - 1
	loadAreaMask  = 1<<(64-loadCountBits) - 1
)

// clockBase is the origin of the microsecond times of the accounting. Differences
// of time.Time values with monotonic readings, as time.Now gives, are monotonic.
var clockBase = time.Now()

// Micros is t in microseconds since clockBase.
func Micros(t time.Time) uint64 { return uint64(t.Sub(clockBase) / time.Microsecond) }

// loadArea is the packed word W·2^loadCountBits + N of a set of requests.
type loadArea struct{ v atomic.Uint64 }

// begin counts a request that began at t (µs).
func (a *loadArea) begin(t uint64) { a.v.Add(1 - t<<loadCountBits) }

// end counts the end, at t (µs), of a request that began.
func (a *loadArea) end(t uint64) { a.v.Add(t<<loadCountBits - 1) }

// read returns the cumulative area at t (µs, modulo 2^44) and the requests in flight.
func (a *loadArea) read(t uint64) (area uint64, inflight uint64) {
	v := a.v.Load()
	n := v & loadCountMask
	return (v>>loadCountBits + n*t) & loadAreaMask, n
}

// advanceArea returns the growth of the area since *last, two readings modulo 2^44,
// and moves *last to area. When the area shrank it returns 0 and leaves *last: a
// request that began after the reading's time t (its clock read after the
// reporter's, its count added before the reporter looked) counts t − t_i < 0 until
// the next reading, which then measures both periods from the older origin, exactly.
// Read as an unsigned difference, the shrinking is close to 2^44 µs, 17 million
// request-seconds: a decision for a thousand times the pods (the soak saw a quiet
// Revision scaled to 238 pods on a loaded machine).
func advanceArea(last *uint64, area uint64) uint64 {
	grown := (area - *last) & loadAreaMask
	if grown >= 1<<(63-loadCountBits) {
		return 0
	}
	*last = area
	return grown
}

// RevisionLoad is the demand accounting of the requests routed to one backend (a
// Revision, or a Service). Requests update it with atomic adds
// only; the reporter's fields are its own.
type RevisionLoad struct {
	area loadArea
	// arrivals counts the requests that arrived since the reporter last looked.
	arrivals atomic.Uint64
	// active says the load is in the reporter's set, or on its way there: the first
	// request after an idle period puts it there, the reporter takes it out when it
	// finds a period without load.
	active atomic.Bool
	// id names the revision, nil for a Service that names none: tracked, not
	// reported.
	id atomic.Pointer[revisionID]

	// pods are the slots of the Service's endpoints, set with each snapshot, for the
	// reporter.
	pods atomic.Pointer[[]*PodSlot]

	// lastArea is A at the reporter's previous reading; the reporter's alone.
	lastArea uint64
	// lastPods are the slots the reporter read last time: one that left pods gets a
	// last reading, for the requests it had since. The reporter's alone.
	lastPods []*PodSlot
}

type revisionID struct{ namespace, revision string }

// Begin counts a request that arrived at t (µs). set, when reporting, is where a
// load that was idle announces itself.
func (l *RevisionLoad) Begin(t uint64, set *ActiveSet) {
	l.arrivals.Add(1)
	l.area.begin(t)
	if set != nil && !l.active.Load() && l.active.CompareAndSwap(false, true) {
		set.add(l)
	}
}

// End counts the end, at t (µs), of a request that began.
func (l *RevisionLoad) End(t uint64) { l.area.end(t) }

// Read returns the cumulative area at t (µs, modulo 2^44) and the requests in flight.
func (l *RevisionLoad) Read(t uint64) (area uint64, inflight uint64) { return l.area.read(t) }

// ActiveSet collects the loads that came out of idleness, for the reporter.
type ActiveSet struct {
	mu      sync.Mutex
	pending []*RevisionLoad
}

func (s *ActiveSet) add(l *RevisionLoad) {
	s.mu.Lock()
	s.pending = append(s.pending, l)
	s.mu.Unlock()
}

// take returns the pending loads and keeps spare, emptied, for the next ones.
func (s *ActiveSet) take(spare []*RevisionLoad) []*RevisionLoad {
	s.mu.Lock()
	defer s.mu.Unlock()
	taken := s.pending
	s.pending = spare[:0]
	return taken
}
