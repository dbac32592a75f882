package gateway

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestRequestsAreCountedPerRevisionAndCode(t *testing.T) {
	g := startGateway(t, Options{})
	teapot := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(teapot.Close)
	g.serve("app-1", newEchoBackend(t, "app-1"))
	g.serve("app-2", teapot)
	g.program(gatewaytest.NewIngress("app", 0, gatewaytest.ExternalRule([]string{"app.example.com"},
		gatewaytest.Path("/two", gatewaytest.SplitTo("app-2", 100)),
		gatewaytest.Path("", gatewaytest.SplitTo("app-1", 100)))))

	for range 3 {
		if code, body, _ := get(t, g.externalURL("/"), "app.example.com", nil); code != 200 {
			t.Fatalf("GET / = %d %q", code, body)
		}
	}
	if code, _, _ := get(t, g.externalURL("/two"), "app.example.com", nil); code != http.StatusTeapot {
		t.Fatalf("GET /two = %d, want 418", code)
	}
	for _, c := range []struct {
		code, revision string
		want           float64
	}{{"200", "app-1", 3}, {"418", "app-2", 1}, {"200", "app-2", 0}} {
		if got := testutil.ToFloat64(g.metrics.Requests.WithLabelValues("app.example.com", c.code, "ns", c.revision)); got != c.want {
			t.Errorf("requests of revision %s answered %s: %v, want %v", c.revision, c.code, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(g.metrics.Upstream); n != 2 {
		t.Errorf("upstream latency series: %d, want one per revision (2)", n)
	}
}

// A revision's series go once the gateway no longer routes to it and its pods are
// gone; another revision's stay.
func TestSeriesGoWithTheirRevision(t *testing.T) {
	g := startGateway(t, Options{})
	g.serve("app-1", newEchoBackend(t, "app-1"))
	g.serve("app-2", newEchoBackend(t, "app-2"))
	g.program(gatewaytest.NewIngress("app", 0, gatewaytest.ExternalRule([]string{"app.example.com"},
		gatewaytest.Path("/two", gatewaytest.SplitTo("app-2", 100)),
		gatewaytest.Path("", gatewaytest.SplitTo("app-1", 100)))))
	for _, p := range []string{"/", "/two"} {
		if code, body, _ := get(t, g.externalURL(p), "app.example.com", nil); code != 200 {
			t.Fatalf("GET %s = %d %q", p, code, body)
		}
	}
	series := func() (requests, upstream int) {
		return testutil.CollectAndCount(g.metrics.Requests), testutil.CollectAndCount(g.metrics.Upstream)
	}
	if r, u := series(); r != 2 || u != 2 {
		t.Fatalf("%d request and %d latency series, want 2 of each", r, u)
	}

	// app-2 leaves the route: its series stay while its pods are there.
	g.program(gatewaytest.NewIngress("app", 0, gatewaytest.ExternalRule([]string{"app.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("app-1", 100)))))
	if r, u := series(); r != 2 || u != 2 {
		t.Errorf("unrouted but not gone: %d request and %d latency series, want 2 of each", r, u)
	}
	g.services.Update(gatewaytest.Key("app-2"), nil) // the Revision is deleted
	if r, u := series(); r != 1 || u != 1 {
		t.Errorf("after app-2 is gone: %d request and %d latency series, want app-1's only", r, u)
	}
	if got := testutil.ToFloat64(g.metrics.Requests.WithLabelValues("app.example.com", "200", "ns", "app-1")); got != 1 {
		t.Errorf("app-1's requests: %v, want 1", got)
	}
}
