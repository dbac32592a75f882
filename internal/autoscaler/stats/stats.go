package stats

import "time"

// Stat is one Revision's load over one reporting period, as one gateway saw it.
type Stat struct {
	Namespace string `json:"namespace"`
	Revision  string `json:"revision"`
	// AverageConcurrency is the time-weighted mean number of requests in flight over
	// the period, requests the gateway held for want of a pod included.
	AverageConcurrency float64 `json:"averageConcurrency"`
	// Requests is how many requests arrived in the period.
	Requests float64 `json:"requests"`
	// Pods is the load of each of the Revision's pods, as Knative's queue-proxies
	// measure it: only the time requests spent on the pod, not held. Absent from
	// the reports of gateways older than the field.
	Pods []PodStat `json:"pods,omitempty"`
}

// PodStat is one pod's share of a Stat.
type PodStat struct {
	// Name is the pod's name (an endpoint without a pod: its address).
	Name string `json:"name"`
	// AverageConcurrency is the time-weighted mean number of requests in flight on
	// the pod over the period.
	AverageConcurrency float64 `json:"averageConcurrency"`
	// Requests is how many requests the pod got in the period.
	Requests float64 `json:"requests"`
}

// Report is one gateway replica's Stats for one period.
type Report struct {
	// Source names the gateway replica (its host name), for logs.
	Source string `json:"source"`
	// Time is the end of the period.
	Time time.Time `json:"time"`
	// Period is the length of the period.
	Period time.Duration `json:"period"`
	Stats  []Stat        `json:"stats"`
}

// Sink receives what a gateway reports. Implementations must not block the caller
// for long: the gateway calls Poke on a request's path.
type Sink interface {
	// Report records one period's load.
	Report(Report)
	// Poke says a request for the Revision arrived while it had no ready pod, and
	// waits; the autoscaler decides for it at once instead of at its next tick.
	Poke(namespace, revision string)
}
