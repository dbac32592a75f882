package metrics

import (
	"context"
	"iter"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferry-serving/ferry/internal/tracker"
)

// trackers exports the size of the live trackers, read at scrape time so that
// tracking costs nothing extra. A process normally runs one.
var trackers = &liveCollector[*tracker.Tracker]{
	descs:   []*prometheus.Desc{trackerObservers, trackerReferences},
	collect: collectTrackers,
}

var (
	trackerObservers = prometheus.NewDesc("ferry_tracker_observers",
		"Objects (Routes) that the tracker wakes when something they read changes.", nil, nil)
	trackerReferences = prometheus.NewDesc("ferry_tracker_references",
		"Distinct objects and label selectors the tracker watches on behalf of observers.", nil, nil)
)

// ExportTracker exports t's size until ctx is done. Run it from a manager
// runnable that starts with the controllers that fill t, so that a replica
// that is not the leader exports nothing rather than an empty tracker.
func ExportTracker(ctx context.Context, t *tracker.Tracker) { trackers.while(ctx, t) }

func collectTrackers(ch chan<- prometheus.Metric, live iter.Seq[*tracker.Tracker]) {
	var sum tracker.Size
	n := 0
	for t := range live {
		s := t.Size()
		sum.Observers += s.Observers
		sum.References += s.References
		n++
	}
	if n == 0 {
		return
	}
	ch <- prometheus.MustNewConstMetric(trackerObservers, prometheus.GaugeValue, float64(sum.Observers))
	ch <- prometheus.MustNewConstMetric(trackerReferences, prometheus.GaugeValue, float64(sum.References))
}
