package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
)

// Load accounting. Every request routed to a Service is counted from its arrival to
// the end of its answer, held time included: that is the demand the autoscaler
// scales for. Each Service keeps a revisionLoad; the reporter reads the ones that saw
// traffic once per ReportInterval and sends a stats.Report.
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

// micros is t in microseconds since clockBase.
func micros(t time.Time) uint64 { return uint64(t.Sub(clockBase) / time.Microsecond) }

// revisionLoad is the demand accounting of the requests routed to one backend (a
// Revision, or a Service). Requests update it with atomic adds
// only; the reporter's fields are its own.
type revisionLoad struct {
	// area packs W (microseconds, modulo 2^44) and N; see above.
	area atomic.Uint64
	// arrivals counts the requests that arrived since the reporter last looked.
	arrivals atomic.Uint64
	// active says the load is in the reporter's set, or on its way there: the first
	// request after an idle period puts it there, the reporter takes it out when it
	// finds a period without load.
	active atomic.Bool
	// id names the revision, nil for a Service that names none: tracked, not
	// reported.
	id atomic.Pointer[revisionID]

	// lastArea is A at the reporter's previous reading; the reporter's alone.
	lastArea uint64
}

type revisionID struct{ namespace, revision string }

// begin counts a request that arrived at t (µs). set, when reporting, is where a
// load that was idle announces itself.
func (l *revisionLoad) begin(t uint64, set *activeSet) {
	l.arrivals.Add(1)
	l.area.Add(1 - t<<loadCountBits)
	if set != nil && !l.active.Load() && l.active.CompareAndSwap(false, true) {
		set.add(l)
	}
}

// end counts the end, at t (µs), of a request that began.
func (l *revisionLoad) end(t uint64) {
	l.area.Add(t<<loadCountBits - 1)
}

// read returns the cumulative area at t (µs, modulo 2^44) and the requests in flight.
func (l *revisionLoad) read(t uint64) (area uint64, inflight uint64) {
	v := l.area.Load()
	n := v & loadCountMask
	return (v>>loadCountBits + n*t) & loadAreaMask, n
}

// activeSet collects the loads that came out of idleness, for the reporter.
type activeSet struct {
	mu      sync.Mutex
	pending []*revisionLoad
}

func (s *activeSet) add(l *revisionLoad) {
	s.mu.Lock()
	s.pending = append(s.pending, l)
	s.mu.Unlock()
}

// take returns the pending loads and keeps spare, emptied, for the next ones.
func (s *activeSet) take(spare []*revisionLoad) []*revisionLoad {
	s.mu.Lock()
	defer s.mu.Unlock()
	taken := s.pending
	s.pending = spare[:0]
	return taken
}

// reporter sends, every interval, one stats.Report with a Stat for each revision that
// had load in the period. It is a manager Runnable on every replica: each gateway
// reports what it saw, and the autoscaler sums them.
type reporter struct {
	sink     stats.Sink
	source   string
	interval time.Duration
	set      *activeSet
	now      func() time.Time

	// tracked are the loads that had traffic lately; the reporter's alone.
	tracked map[*revisionLoad]struct{}
	spare   []*revisionLoad
	last    time.Time
}

func newReporter(sink stats.Sink, source string, interval time.Duration, set *activeSet) *reporter {
	return &reporter{sink: sink, source: source, interval: interval, set: set, now: time.Now,
		tracked: map[*revisionLoad]struct{}{}}
}

func (r *reporter) Start(ctx context.Context) error {
	r.last = r.now()
	ticker := time.NewTicker(r.interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			r.sink.Report(r.collect(r.now()))
		}
	}
}

// NeedLeaderElection is false: every replica reports its own traffic.
func (r *reporter) NeedLeaderElection() bool { return false }

// collect reads the tracked loads at now and returns the period's report. A load
// without traffic in the period leaves the tracked set: it costs nothing until its
// next request.
func (r *reporter) collect(now time.Time) stats.Report {
	pending := r.set.take(r.spare)
	for _, l := range pending {
		r.tracked[l] = struct{}{}
	}
	clear(pending)
	r.spare = pending
	t := micros(now)
	period := t - micros(r.last)
	report := stats.Report{Source: r.source, Time: now, Period: now.Sub(r.last)}
	r.last = now
	for l := range r.tracked {
		area, _ := l.read(t)
		grown := (area - l.lastArea) & loadAreaMask
		l.lastArea = area
		arrived := l.arrivals.Swap(0)
		if grown == 0 && arrived == 0 {
			// Idle: untrack, then look again, since a request that arrived
			// between the reading and the unmarking found the mark still set and
			// did not announce itself. While untracked, A stays constant (nothing
			// in flight), so lastArea remains the right origin.
			delete(r.tracked, l)
			l.active.Store(false)
			if _, n := l.read(t); (n > 0 || l.arrivals.Load() > 0) && l.active.CompareAndSwap(false, true) {
				r.tracked[l] = struct{}{}
			}
			continue
		}
		id := l.id.Load()
		if id == nil || period == 0 {
			continue // not a revision: tracked, for lastArea, but not reported
		}
		report.Stats = append(report.Stats, stats.Stat{Namespace: id.namespace, Revision: id.revision,
			AverageConcurrency: float64(grown) / float64(period), Requests: float64(arrived)})
	}
	return report
}
