package gateway

import (
	"errors"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the gateway's Prometheus series. The host label only ever holds hosts of
// the routing table: a request for an unknown host is counted with host="", so clients
// cannot mint series by sending arbitrary Host headers.
type metrics struct {
	requests *prometheus.CounterVec
	upstream *prometheus.HistogramVec
}

func newMetrics() *metrics {
	return &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ferry_gateway_requests_total",
			Help: "Requests served by the gateway, by routed host, response code and revision.",
		}, []string{"host", "code", "revision"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ferry_gateway_upstream_latency_seconds",
			Help:    "Time from sending a request upstream to receiving the response headers, by revision.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5ms to 16s
		}, []string{"revision"}),
	}
}

// register adds the series to reg. Collectors that reg already holds, from another
// Gateway in the same process (tests, or a restart in place), are reused.
func (m *metrics) register(reg prometheus.Registerer) error {
	var err error
	if m.requests, err = registerOrReuse(reg, m.requests); err != nil {
		return err
	}
	m.upstream, err = registerOrReuse(reg, m.upstream)
	return err
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

func (m *metrics) countRequest(host string, code int, revision string) {
	m.requests.WithLabelValues(host, strconv.Itoa(code), revision).Inc()
}
