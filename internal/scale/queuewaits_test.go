package scale

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// queueWaitRegistry has controller-runtime's queue-wait histogram, with its buckets.
func queueWaitRegistry() (*prometheus.Registry, *prometheus.HistogramVec) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "queue_duration_seconds",
		Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12)}, []string{"name", "controller"})
	reg.MustRegister(h)
	return reg, h
}

func TestQueueWaitsCountOnlyTheRun(t *testing.T) {
	reg, h := queueWaitRegistry()
	route := h.WithLabelValues("route", "route")
	// Before the run: waits that must not count.
	route.Observe(100)
	h.WithLabelValues("gc", "gc").Observe(5)
	before, err := readQueueWaits(reg)
	if err != nil {
		t.Fatal(err)
	}
	// The run: the route queue took four items, one over 10 s and one over 1 s; the
	// revision queue one, quickly; gc nothing.
	for _, s := range []float64{0.001, 0.5, 2, 20} {
		route.Observe(s)
	}
	h.WithLabelValues("revision", "revision").Observe(0.01)
	after, err := readQueueWaits(reg)
	if err != nil {
		t.Fatal(err)
	}

	got := queueWaitsBetween(before, after)
	if len(got) != 2 || got[0].Controller != "route" || got[1].Controller != "revision" {
		t.Fatalf("queue waits %+v, want route then revision (busiest first), and no gc", got)
	}
	r := got[0]
	if r.Items != 4 || math.Abs(r.MeanSeconds-22.501/4) > 1e-9 || r.OverOneSecond != 0.5 || r.OverTenSeconds != 0.25 {
		t.Errorf("route %+v, want 4 items, mean %.4f s, 50%% over 1 s, 25%% over 10 s", r, 22.501/4)
	}
	if got[1].Items != 1 || got[1].OverOneSecond != 0 {
		t.Errorf("revision %+v, want 1 item, none over 1 s", got[1])
	}
}

func TestQueueWaitsFromAnotherProcess(t *testing.T) {
	reg, h := queueWaitRegistry()
	h.WithLabelValues("service", "service").Observe(3)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	waits, err := readQueueWaits(MetricsAt(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	got := queueWaitsBetween(nil, waits)
	if len(got) != 1 || got[0].Controller != "service" || got[0].Items != 1 || got[0].MeanSeconds != 3 || got[0].OverOneSecond != 1 {
		t.Errorf("scraped queue waits %+v, want the service queue's one item of 3 s", got)
	}
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	if _, err := readQueueWaits(MetricsAt(missing.URL)); err == nil || !strings.Contains(err.Error(), missing.URL) {
		t.Errorf("a wrong URL gave %v, want an error that names it", err)
	}
}
