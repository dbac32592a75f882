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

// micros is t in microseconds since clockBase.
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

// revisionLoad is the demand accounting of the requests routed to one backend (a
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

// begin counts a request that arrived at t (µs). set, when reporting, is where a
// load that was idle announces itself.
func (l *RevisionLoad) Begin(t uint64, set *ActiveSet) {
	l.arrivals.Add(1)
	l.area.begin(t)
	if set != nil && !l.active.Load() && l.active.CompareAndSwap(false, true) {
		set.add(l)
	}
}

// end counts the end, at t (µs), of a request that began.
func (l *RevisionLoad) End(t uint64) { l.area.end(t) }

// read returns the cumulative area at t (µs, modulo 2^44) and the requests in flight.
func (l *RevisionLoad) Read(t uint64) (area uint64, inflight uint64) { return l.area.read(t) }

// activeSet collects the loads that came out of idleness, for the reporter.
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

// reporter sends, every interval, one stats.Report with a Stat for each revision that
// had load in the period. It is a manager Runnable on every replica: each gateway
// reports what it saw, and the autoscaler sums them.
type Reporter struct {
	sink     stats.Sink
	source   string
	interval time.Duration
	set      *ActiveSet
	now      func() time.Time

	// tracked are the loads that had traffic lately; the reporter's alone.
	tracked map[*RevisionLoad]struct{}
	spare   []*RevisionLoad
	last    time.Time
	// current and byName are scratch space of podStats.
	current map[*PodSlot]struct{}
	byName  map[string]int
}

func NewReporter(sink stats.Sink, source string, interval time.Duration, set *ActiveSet) *Reporter {
	return &Reporter{sink: sink, source: source, interval: interval, set: set, now: time.Now,
		tracked: map[*RevisionLoad]struct{}{}, current: map[*PodSlot]struct{}{}, byName: map[string]int{}}
}

func (r *Reporter) Start(ctx context.Context) error {
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
func (r *Reporter) NeedLeaderElection() bool { return false }

// collect reads the tracked loads at now and returns the period's report. A load
// without traffic in the period leaves the tracked set: it costs nothing until its
// next request.
func (r *Reporter) collect(now time.Time) stats.Report {
	pending := r.set.take(r.spare)
	for _, l := range pending {
		r.tracked[l] = struct{}{}
	}
	clear(pending)
	r.spare = pending
	t := Micros(now)
	period := t - Micros(r.last)
	report := stats.Report{Source: r.source, Time: now, Period: now.Sub(r.last)}
	r.last = now
	for l := range r.tracked {
		area, _ := l.Read(t)
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
			if _, n := l.Read(t); (n > 0 || l.arrivals.Load() > 0) && l.active.CompareAndSwap(false, true) {
				r.tracked[l] = struct{}{}
			}
			continue
		}
		pods := r.podStats(l, t, period)
		id := l.id.Load()
		if id == nil || period == 0 {
			continue // not a revision: tracked, for lastArea, but not reported
		}
		report.Stats = append(report.Stats, stats.Stat{Namespace: id.namespace, Revision: id.revision,
			AverageConcurrency: float64(grown) / float64(period), Requests: float64(arrived), Pods: pods})
	}
	return report
}

// podStats reads the pods of l at t and returns each one's load over the period, by
// pod name: every pod of the current snapshot, busy or not, and a pod that left it
// since the last reading if it had requests in the meantime.
func (r *Reporter) podStats(l *RevisionLoad, t, period uint64) []stats.PodStat {
	var current []*PodSlot
	if p := l.pods.Load(); p != nil {
		current = *p
	}
	var out []stats.PodStat
	add := func(p *PodSlot, gone bool) {
		area, _ := p.load.read(t)
		grown := (area - p.lastArea) & loadAreaMask
		p.lastArea = area
		arrived := p.arrivals.Swap(0)
		if gone && grown == 0 && arrived == 0 || period == 0 {
			return
		}
		// A pod with several ports has a slot for each.
		i, ok := r.byName[p.name]
		if !ok {
			i = len(out)
			r.byName[p.name] = i
			out = append(out, stats.PodStat{Name: p.name})
		}
		out[i].AverageConcurrency += float64(grown) / float64(period)
		out[i].Requests += float64(arrived)
	}
	for _, p := range current {
		r.current[p] = struct{}{}
		add(p, false)
	}
	for _, p := range l.lastPods {
		if _, ok := r.current[p]; !ok {
			add(p, true)
		}
	}
	clear(r.current)
	clear(r.byName)
	l.lastPods = append(l.lastPods[:0], current...)
	return out
}
