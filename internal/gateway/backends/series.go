package backends

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Series are the metric children of the requests routed to one Service, kept with
// the Service so that counting a request neither formats its code nor hashes and
// looks up labels: a few comparisons, no lock and no allocation once the children
// exist. The vectors are the caller's; Series only remembers what it made of them.
type Series struct {
	requests requestCounters
	// upstream is the latency child of the Service's revision, replaced if the
	// revision label changes.
	upstream atomic.Pointer[upstreamObserver]
}

// Requests is the counter of vec for a request of host answered with code.
func (s *Series) Requests(vec *prometheus.CounterVec, host string, code int, namespace, revision string) prometheus.Counter {
	return s.requests.get(vec, host, code, namespace, revision)
}

// Upstream is the latency observer of vec for revision, made again if the
// Service's revision changes.
func (s *Series) Upstream(vec *prometheus.HistogramVec, namespace, revision string) prometheus.Observer {
	o := s.upstream.Load()
	if o == nil || o.revision != revision {
		o = &upstreamObserver{revision: revision, observer: vec.WithLabelValues(namespace, revision)}
		s.upstream.Store(o)
	}
	return o.observer
}

// Delete deletes from the vectors the children made through s.
func (s *Series) Delete(requests *prometheus.CounterVec, upstream *prometheus.HistogramVec, namespace string) {
	if p := s.requests.entries.Load(); p != nil {
		for _, e := range *p {
			requests.DeleteLabelValues(e.host, CodeLabel(e.code), namespace, e.revision)
		}
	}
	if o := s.upstream.Load(); o != nil {
		upstream.DeleteLabelValues(namespace, o.revision)
	}
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
