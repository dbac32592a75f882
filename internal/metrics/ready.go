package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TimeToReadyBuckets span a status write that follows at once (tens of
// milliseconds) to a Deployment's progress deadline (10 minutes), roughly
// doubling.
var TimeToReadyBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300, 600}

const timeToReadyHelp = "Seconds from an object's creation or generation change, as the controller saw it, " +
	"to the status write that made it Ready=True for that generation, by kind."

var timeToReady = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "ferry_time_to_ready_seconds",
	Help:    timeToReadyHelp,
	Buckets: TimeToReadyBuckets,
}, []string{"kind"})

// Registered like controller-runtime's own series: once per process, however
// many managers it runs (tests run several).
func init() {
	ctrlmetrics.Registry.MustRegister(timeToReady, trackers)
}

// TimeToReady returns the observer of kind's time to Ready, its series created
// now so that a kind that has not become Ready yet shows as an empty histogram.
func TimeToReady(kind string) func(time.Duration) {
	o := timeToReady.WithLabelValues(kind)
	return func(d time.Duration) { o.Observe(d.Seconds()) }
}
