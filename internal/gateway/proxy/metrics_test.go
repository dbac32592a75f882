package proxy

import (
	"strconv"
	"testing"

	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Counting is on every request's path: once a host, code and revision have been seen,
// it must not allocate.
func TestCountingARoutedRequestDoesNotAllocate(t *testing.T) {
	m := NewMetrics()
	svc := &backends.Service{Key: gatewaytest.Key("app-1")}
	m.countRequest(svc, "app.example.com", 200, "app-1")
	m.observeUpstream(svc, "app-1", 0.001)
	if n := testing.AllocsPerRun(100, func() {
		m.countRequest(svc, "app.example.com", 200, "app-1")
		m.observeUpstream(svc, "app-1", 0.001)
	}); n != 0 {
		t.Errorf("%v allocations per request", n)
	}
	if got := testutil.ToFloat64(m.Requests.WithLabelValues("app.example.com", "200", "ns", "app-1")); got != 102 {
		t.Errorf("counted %v requests, want 102", got)
	}
	// A new revision label on the same Service gets its own series.
	m.countRequest(svc, "app.example.com", 200, "app-2")
	if got := testutil.ToFloat64(m.Requests.WithLabelValues("app.example.com", "200", "ns", "app-2")); got != 1 {
		t.Errorf("revision app-2 counted %v requests, want 1", got)
	}
}

// BenchmarkCountRequest compares the vector's lookup, which every request paid before
// the per-Service children, with them.
func BenchmarkCountRequest(b *testing.B) {
	m := NewMetrics()
	svc := &backends.Service{Key: gatewaytest.Key("app-1")}
	hosts := []string{"app.ns.example.com", "app.ns.svc.cluster.local", "app.ns.svc", "app.ns"}
	b.Run("vector", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			m.Requests.WithLabelValues(hosts[i%len(hosts)], strconv.Itoa(200), "ns", "app-1").Inc()
		}
	})
	b.Run("per-service", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			m.countRequest(svc, hosts[i%len(hosts)], 200, "app-1")
		}
	})
}
