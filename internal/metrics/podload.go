package metrics

import (
	"context"
	"iter"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ferry-serving/ferry/internal/autoscaler"
)

// podLoads exports each pod's latest load as the gateways report it, read from the
// live Autoscalers at scrape time: a pod that is no longer reported has no series,
// with nothing to delete, so the series follow the pods that carry load.
var podLoads = &liveCollector[*autoscaler.Autoscaler]{
	descs:   []*prometheus.Desc{podConcurrency, podRequests},
	collect: collectPodLoads,
}

var (
	podConcurrency = prometheus.NewDesc("ferry_autoscaler_pod_concurrency",
		"Time-weighted average number of requests in flight on the pod over the gateways' latest report period, summed over the gateway replicas.",
		[]string{"namespace", "revision", "pod"}, nil)
	podRequests = prometheus.NewDesc("ferry_autoscaler_pod_requests_per_second",
		"Requests per second the pod got over the gateways' latest report period, summed over the gateway replicas.",
		[]string{"namespace", "revision", "pod"}, nil)
)

func init() { ctrlmetrics.Registry.MustRegister(podLoads) }

// ExportPodLoads exports a's per-pod loads until ctx is done. Run it on the leader
// only, like ExportTracker: every replica takes the reports, and one is enough to
// export them.
func ExportPodLoads(ctx context.Context, a *autoscaler.Autoscaler) { podLoads.while(ctx, a) }

func collectPodLoads(ch chan<- prometheus.Metric, live iter.Seq[*autoscaler.Autoscaler]) {
	for a := range live {
		for _, p := range a.PodLoads() {
			ch <- prometheus.MustNewConstMetric(podConcurrency, prometheus.GaugeValue, p.AverageConcurrency,
				p.Revision.Namespace, p.Revision.Name, p.Pod)
			ch <- prometheus.MustNewConstMetric(podRequests, prometheus.GaugeValue, p.RequestsPerSecond,
				p.Revision.Namespace, p.Revision.Name, p.Pod)
		}
	}
}
