package gateway

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the gateway's Prometheus series. The host label only ever holds hosts of
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
	// timeouts counts the requests that a Knative timeout ended, by the Revision
	// field that set it; rare, so without the revision.
	Timeouts *prometheus.CounterVec
	// replicas is how many gateway replicas this one counts, itself included.
	Replicas prometheus.Gauge
	// tlsRefused counts the HTTPS handshakes refused for want of a certificate, by
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

// register adds the series to reg. Collectors that reg already holds, from another
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
func (m *Metrics) countRequest(svc *Service, host string, code int, revision string) {
	if svc == nil {
		m.Requests.WithLabelValues(host, CodeLabel(code), "", revision).Inc()
		return
	}
	svc.Series.requests.get(m.Requests, host, code, svc.Key.Namespace, revision).Inc()
}

// observeUpstream records the time to response headers of a request routed to svc.
func (m *Metrics) observeUpstream(svc *Service, revision string, seconds float64) {
	o := svc.Series.upstream.Load()
	if o == nil || o.revision != revision {
		o = &upstreamObserver{revision: revision, observer: m.Upstream.WithLabelValues(svc.Key.Namespace, revision)}
		svc.Series.upstream.Store(o)
	}
	o.observer.Observe(seconds)
}

// forget deletes the series of the requests routed to svc, which the gateway no
// longer holds. A request still in flight to it counts on a child no longer exported,
// or, the first of its host and code, makes one that stays: rare enough to leave.
func (m *Metrics) Forget(svc *Service) {
	if p := svc.Series.requests.entries.Load(); p != nil {
		for _, e := range *p {
			m.Requests.DeleteLabelValues(e.host, CodeLabel(e.code), svc.Key.Namespace, e.revision)
		}
	}
	if o := svc.Series.upstream.Load(); o != nil {
		m.Upstream.DeleteLabelValues(svc.Key.Namespace, o.revision)
	}
}

// serviceMetrics are the series children of the requests routed to one Service, so
// that counting a request neither formats its code nor hashes and looks up labels: a
// few comparisons, no lock and no allocation once the children exist.
type Series struct {
	requests requestCounters
	// upstream is the latency child of the Service's revision, replaced if the
	// revision label changes.
	upstream atomic.Pointer[upstreamObserver]
}

type upstreamObserver struct {
	revision string
	observer prometheus.Observer
}

// requestCounters are copy-on-write: readers load the slice, writers (the first
// request of a host, code and revision) copy it under mu. A Service has a handful of
// entries, its Route's hosts times the codes its revision answers.
type requestCounters struct {
	mu      sync.Mutex
	entries atomic.Pointer[[]requestCounter]
}

type requestCounter struct {
	host, revision string
	code           int
	counter        prometheus.Counter
}

func (rc *requestCounters) get(vec *prometheus.CounterVec, host string, code int, namespace, revision string) prometheus.Counter {
	if c := rc.find(host, code, revision); c != nil {
		return c
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if c := rc.find(host, code, revision); c != nil {
		return c
	}
	var next []requestCounter
	if p := rc.entries.Load(); p != nil {
		next = append(make([]requestCounter, 0, len(*p)+1), *p...)
	}
	c := vec.WithLabelValues(host, CodeLabel(code), namespace, revision)
	next = append(next, requestCounter{host: host, revision: revision, code: code, counter: c})
	rc.entries.Store(&next)
	return c
}

func (rc *requestCounters) find(host string, code int, revision string) prometheus.Counter {
	p := rc.entries.Load()
	if p == nil {
		return nil
	}
	for i := range *p {
		if e := &(*p)[i]; e.code == code && e.host == host && e.revision == revision {
			return e.counter
		}
	}
	return nil
}

// codeLabels are the label values of the valid HTTP status codes, made once.
var codeLabels = func() (labels [600]string) {
	for code := 100; code < len(labels); code++ {
		labels[code] = strconv.Itoa(code)
	}
	return labels
}()

func CodeLabel(code int) string {
	if code >= 100 && code < len(codeLabels) {
		return codeLabels[code]
	}
	return strconv.Itoa(code)
}
