package metrics

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferry-serving/ferry/internal/tracker"
)

// trackers exports the size of the live trackers, read at scrape time so that
// tracking costs nothing extra. A process normally runs one; tests run several
// managers in turn, and each adds its tracker only while it runs.
var trackers = &trackerCollector{live: map[*tracker.Tracker]struct{}{}}

var (
	trackerObservers = prometheus.NewDesc("ferry_tracker_observers",
		"Objects (Routes) that the tracker wakes when something they read changes.", nil, nil)
	trackerReferences = prometheus.NewDesc("ferry_tracker_references",
		"Distinct objects and label selectors the tracker watches on behalf of observers.", nil, nil)
)

type trackerCollector struct {
	mu   sync.Mutex
	live map[*tracker.Tracker]struct{}
}

// ExportTracker exports t's size until ctx is done. Run it from a manager
// runnable that starts with the controllers that fill t, so that a replica
// that is not the leader exports nothing rather than an empty tracker.
func ExportTracker(ctx context.Context, t *tracker.Tracker) {
	trackers.mu.Lock()
	trackers.live[t] = struct{}{}
	trackers.mu.Unlock()
	<-ctx.Done()
	trackers.mu.Lock()
	delete(trackers.live, t)
	trackers.mu.Unlock()
}

func (c *trackerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- trackerObservers
	ch <- trackerReferences
}

func (c *trackerCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.live) == 0 {
		return
	}
	var sum tracker.Size
	for t := range c.live {
		s := t.Size()
		sum.Observers += s.Observers
		sum.References += s.References
	}
	ch <- prometheus.MustNewConstMetric(trackerObservers, prometheus.GaugeValue, float64(sum.Observers))
	ch <- prometheus.MustNewConstMetric(trackerReferences, prometheus.GaugeValue, float64(sum.References))
}
