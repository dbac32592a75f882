package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// wake is the control plane's share of a cold start: from the gateway's poke for a
// Revision at zero to the scale write that asks for its first pod. (The gateway's
// share, from the pod's readiness to the held request's release, is
// ferry_gateway_release_delay_seconds.)
var wake = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "ferry_autoscaler_wake_seconds",
	Help:    "Seconds from the gateway's poke for a Revision at zero to the scale write that asks for its first pod.",
	Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
})

func init() { ctrlmetrics.Registry.MustRegister(wake) }

// ObserveWake records one wake-up's latency.
func ObserveWake(d time.Duration) { wake.Observe(d.Seconds()) }
