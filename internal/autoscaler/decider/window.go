package decider

import (
	"math"
	"sort"
	"time"
)

// maxRetention is the longest history a Window keeps unless NewWindow asks for
// more: Knative's longest stable window (WindowMax, 1h).
const maxRetention = time.Hour

// averagePrecision: averages are rounded to 6 decimals, as Knative's buckets do, so
// that summing per-second fractions cannot turn an exact 70/70 into ceil(1.0000001)=2.
const averagePrecision = 1e6

// second is one 1-s bucket that had at least one Record.
type second struct {
	at  int64 // Unix seconds
	sum float64
}

// Window is one Revision's load (concurrency or requests per second) in 1-second
// buckets. Every gateway replica's report for a second is added into that second's
// bucket, so the buckets hold the Revision's total. Only seconds that were recorded
// are stored: an idle Revision costs nothing, a busy one at most one entry per
// second of retention.
//
// The zero value is ready to use. It keeps the history of the longest duration
// Average or IsEmpty has been asked about (1h until the first question); NewWindow
// fixes the retention instead. A Window is not safe for concurrent use.
type Window struct {
	secs      []second // ascending by at
	first     int64    // the second of the first Record since creation or Reset
	hasFirst  bool
	retention time.Duration // fixed by NewWindow; 0: learned from the questions asked
	asked     time.Duration // the longest duration asked about
}

// NewWindow returns a Window that keeps retention of history, for a caller that
// knows its longest window up front.
func NewWindow(retention time.Duration) *Window {
	return &Window{retention: retention}
}

// keep is how much history the Window holds behind its newest second.
func (w *Window) keep() time.Duration {
	switch {
	case w.retention > 0:
		return w.retention
	case w.asked > 0:
		return w.asked
	default:
		return maxRetention
	}
}

func (w *Window) ask(d time.Duration) {
	if d > w.asked {
		w.asked = min(d, maxRetention)
	}
}

// buckets is how many 1-s buckets d spans (a partial second counts as a whole one).
func buckets(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + bucket - 1) / bucket)
}

// Record adds v to the bucket of the second t falls in. v is that second's value:
// a concurrency averaged over the second, or the requests that arrived in it.
// A Record older than the retention behind the newest second is dropped.
func (w *Window) Record(t time.Time, v float64) {
	at := t.Unix()
	n := len(w.secs)
	if n > 0 && at <= w.secs[n-1].at-buckets(w.keep()) {
		return // too old to matter to any window asked about
	}
	if !w.hasFirst || at < w.first {
		w.first, w.hasFirst = at, true
	}
	switch {
	case n == 0 || at > w.secs[n-1].at:
		w.secs = append(w.secs, second{at: at, sum: v})
		w.prune()
	case at == w.secs[n-1].at:
		w.secs[n-1].sum += v
	default: // a late report from a slower gateway replica
		i := sort.Search(n, func(i int) bool { return w.secs[i].at >= at })
		if w.secs[i].at == at {
			w.secs[i].sum += v
			return
		}
		w.secs = append(w.secs, second{})
		copy(w.secs[i+1:], w.secs[i:])
		w.secs[i] = second{at: at, sum: v}
	}
}

// prune drops the seconds that fell out of the retention behind the newest one.
func (w *Window) prune() {
	n := len(w.secs)
	oldest := w.secs[n-1].at - buckets(w.keep()) // exclusive
	i := sort.Search(n, func(i int) bool { return w.secs[i].at > oldest })
	if i > 0 {
		w.secs = w.secs[i:]
	}
}

// Reset forgets everything, as if the Window were new. Call it when the Revision
// has been at zero pods: Knative's buckets restart their partial window on the
// first stat after a silence, because nothing is scraped at zero, so the first
// requests after a scale from zero are averaged over the seconds that saw them,
// not diluted by a window of zeros.
func (w *Window) Reset() {
	w.secs = w.secs[:0]
	w.first, w.hasFirst = 0, false
}

// span returns the first second of the d-long window ending at now (inclusive) and
// how many seconds it spans, cut to the seconds since the first Record.
func (w *Window) span(now time.Time, d time.Duration) (from int64, n int64) {
	end := now.Unix()
	n = buckets(d)
	if !w.hasFirst || n == 0 || w.first > end {
		return end + 1, 0
	}
	if since := end - w.first + 1; since < n {
		n = since
	}
	return end - n + 1, n
}

// Average is the mean over the 1-second buckets in (now-d, now]. A second with no
// Record counts as 0: the gateway reports every Revision that had load, so a
// missing second had none. A window reaching back before the first Record is
// averaged over the seconds since the first Record only, as Knative averages a
// partial window over the data it has. The result is rounded to 6 decimals.
func (w *Window) Average(now time.Time, d time.Duration) float64 {
	w.ask(d)
	from, n := w.span(now, d)
	if n == 0 {
		return 0
	}
	end := from + n - 1
	i := sort.Search(len(w.secs), func(i int) bool { return w.secs[i].at >= from })
	var sum float64
	for ; i < len(w.secs) && w.secs[i].at <= end; i++ {
		sum += w.secs[i].sum
	}
	return math.Round(sum/float64(n)*averagePrecision) / averagePrecision
}

// Knative's weighted-exponential aggregation: the weight of the newest second is
// the smoothing coefficient sc, and each older second's is (1-sc) times the next
// one's, with sc such that a window's weights add up to weightPrecision, but never
// below minSmoothing (pkg/autoscaler/aggregation, WeightedFloat64Buckets).
const (
	weightPrecision = 0.9999
	minSmoothing    = 0.2
)

// WeightedAverage is Knative's weighted-exponential average over the 1-second
// buckets in (now-d, now]: the newest second weighs most, a second with no Record
// counts as 0, and, as in Knative, the result is not rounded and a window reaching
// back before the first Record is not shortened.
func (w *Window) WeightedAverage(now time.Time, d time.Duration) float64 {
	w.ask(d)
	n := buckets(d)
	if n == 0 {
		return 0
	}
	sc := math.Max(1-math.Pow(1-weightPrecision, 1/float64(n)), minSmoothing)
	end := now.Unix()
	from := end - n + 1
	var sum float64
	for i := sort.Search(len(w.secs), func(i int) bool { return w.secs[i].at >= from }); i < len(w.secs) && w.secs[i].at <= end; i++ {
		sum += w.secs[i].sum * sc * math.Pow(1-sc, float64(end-w.secs[i].at))
	}
	return sum
}

// IsEmpty reports that nothing was recorded in (now-d, now]: the decider has no
// data for this window, which is not the same as an average of 0 (a Revision
// nobody reported yet has no desired scale, Scale's Desired -1).
func (w *Window) IsEmpty(now time.Time, d time.Duration) bool {
	w.ask(d)
	end := now.Unix()
	from := end - buckets(d) + 1
	i := sort.Search(len(w.secs), func(i int) bool { return w.secs[i].at >= from })
	return i == len(w.secs) || w.secs[i].at > end
}
