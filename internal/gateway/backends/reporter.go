package backends

import (
	"context"
	"time"

	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
)

// Reporter sends, every interval, one stats.Report with a Stat for each revision that
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
			r.sink.Report(r.Collect(r.now()))
		}
	}
}

// NeedLeaderElection is false: every replica reports its own traffic.
func (r *Reporter) NeedLeaderElection() bool { return false }

// Collect reads the tracked loads at now and returns the period's report. A load
// without traffic in the period leaves the tracked set: it costs nothing until its
// next request.
func (r *Reporter) Collect(now time.Time) stats.Report {
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
		grown := advanceArea(&l.lastArea, area)
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
		grown := advanceArea(&p.lastArea, area)
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
