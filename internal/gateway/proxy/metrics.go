package proxy

import (
	"errors"

	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the gateway's Prometheus series. The host label only ever holds hosts of
// the routing table: a request for an unknown host is counted with host="", so clients
// cannot mint series by sending arbitrary Host headers. A revision's series go when the
// gateway forgets its backend (the Revision is gone and no route names it), so that a
// gateway that outlives thousands of Revisions keeps series only for those it serves.
type Metrics struct {
	Requests *prometheus.CounterVec
	Upstream *prometheus.HistogramVec
	// The activator's series have no labels: a held request costs no lookup.
	ActivationWait prometheus.Histogram
	ReleaseDelay   prometheus.Histogram
	Queued         prometheus.Gauge
	// Timeouts counts the requests that a Knative timeout ended, by the Revision
	// field that set it; rare, so without the revision.
	Timeouts *prometheus.CounterVec
	// Replicas is how many gateway replicas this one counts, itself included.
	Replicas prometheus.Gauge
	// TLSRefused counts the HTTPS handshakes refused for want of a certificate, by
	// reason; without the host, which any client could mint.
	TLSRefused *prometheus.CounterVec
}

func NewMetrics() *Metrics {
	return &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ferry_gateway_requests_total",
			Help: "Requests served by the gateway, by routed host, response code and revision.",
		}, []string{"host", "code", "namespace", "revision"}),
		Upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ferry_gateway_upstream_latency_seconds",
			Help:    "Time from sending a request upstream to receiving the response headers, by revision.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5ms to 16s
		}, []string{"namespace", "revision"}),
		ActivationWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ferry_gateway_activation_wait_seconds",
			Help:    "Time requests were held for a ready pod, or a pod below containerConcurrency, before being forwarded.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 19), // 1ms to 262s
		}),
		ReleaseDelay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ferry_gateway_release_delay_seconds",
			Help: "Time from the endpoints update that gave a revision a ready pod to a held request being forwarded: " +
				"the gateway's own share of a cold start.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16), // 0.1ms to 3.3s
		}),
		Queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ferry_gateway_queued_requests",
			Help: "Requests held by the gateway for want of a ready pod or a free containerConcurrency slot.",
		}),
		Timeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ferry_gateway_timeouts_total",
			Help: "Requests ended by a revision timeout (504, or a response cut off), by timeout: " +
				"timeoutSeconds, responseStartTimeoutSeconds or idleTimeoutSeconds.",
		}, []string{"timeout"}),
		Replicas: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ferry_gateway_replicas",
			Help: "Gateway replicas this one counts, itself included, by their live Leases: they share each pod's containerConcurrency.",
		}),
		TLSRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ferry_gateway_tls_handshakes_refused_total",
			Help: "HTTPS handshakes refused for want of a certificate, by reason: no_server_name (the client sent no SNI) " +
				"or no_certificate (no KIngress gives the host a valid one).",
		}, []string{"reason"}),
	}
}

// Register adds the series to reg. Collectors that reg already holds, from another
// Gateway in the same process (tests, or a restart in place), are reused.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	var err error
	if m.Requests, err = registerOrReuse(reg, m.Requests); err != nil {
		return err
	}
	if m.Upstream, err = registerOrReuse(reg, m.Upstream); err != nil {
		return err
	}
	if m.ActivationWait, err = registerOrReuse(reg, m.ActivationWait); err != nil {
		return err
	}
	if m.ReleaseDelay, err = registerOrReuse(reg, m.ReleaseDelay); err != nil {
		return err
	}
	if m.Queued, err = registerOrReuse(reg, m.Queued); err != nil {
		return err
	}
	if m.Replicas, err = registerOrReuse(reg, m.Replicas); err != nil {
		return err
	}
	m.Replicas.Set(1) // until its Lease says otherwise
	if m.Timeouts, err = registerOrReuse(reg, m.Timeouts); err != nil {
		return err
	}
	// Every kind is exported from the start, at 0, so that rate() sees the first one.
	for _, name := range timeoutNames[timeoutTotal:] {
		m.Timeouts.WithLabelValues(name)
	}
	if m.TLSRefused, err = registerOrReuse(reg, m.TLSRefused); err != nil {
		return err
	}
	for _, reason := range []string{refusedNoServerName, refusedNoCertificate} {
		m.TLSRefused.WithLabelValues(reason)
	}
	return nil
}

func registerOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}

// countRequest counts a request's answer. svc is the Service it was routed to, nil for
// requests that matched no route: those take the vector's slower lookup, the others
// the counters svc keeps.
func (m *Metrics) countRequest(svc *backends.Service, host string, code int, revision string) {
	if svc == nil {
		m.Requests.WithLabelValues(host, backends.CodeLabel(code), "", revision).Inc()
		return
	}
	svc.Series.Requests(m.Requests, host, code, svc.Key.Namespace, revision).Inc()
}

// observeUpstream records the time to response headers of a request routed to svc.
func (m *Metrics) observeUpstream(svc *backends.Service, revision string, seconds float64) {
	svc.Series.Upstream(m.Upstream, svc.Key.Namespace, revision).Observe(seconds)
}

// Forget deletes the series of the requests routed to svc, which the gateway no
// longer holds. A request still in flight to it counts on a child no longer exported,
// or, the first of its host and code, makes one that stays: rare enough to leave.
func (m *Metrics) Forget(svc *backends.Service) {
	svc.Series.Delete(m.Requests, m.Upstream, svc.Key.Namespace)
}
