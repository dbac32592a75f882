package proxy

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
	"github.com/ferry-serving/ferry/internal/gateway/routing"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// fuzzRules are served by the fuzzed gateway. Every split goes to its own revision on
// a simulated pod, so the gateway's own answer names the revision that was chosen
// without any network traffic.
var fuzzRules = []v1alpha1.IngressRule{
	gatewaytest.ExternalRule([]string{"app.example.com", "App.Other.example.com"},
		gatewaytest.Path("", gatewaytest.SplitTo("root", 100)),
		gatewaytest.Path("/api", gatewaytest.SplitTo("api", 100)),
		gatewaytest.Path("/api/v2", gatewaytest.SplitTo("api-v2", 100)),
	),
	gatewaytest.ExternalRule([]string{"tag-app.example.com"}, gatewaytest.Path("/", gatewaytest.SplitTo("tag", 100))),
	gatewaytest.LocalRule([]string{"app.ns.svc.cluster.local"}, gatewaytest.Path("", gatewaytest.SplitTo("local", 100))),
}

// referenceRoute is a plain reading of the routing rules: the external rule host equal
// to the request's host up to case, port and trailing dot, and the longest prefix.
func referenceRoute(host, path string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(host, ".")
	best, bestLen := "", -1
	for _, rule := range fuzzRules {
		if rule.Visibility == v1alpha1.IngressVisibilityClusterLocal {
			continue
		}
		for _, h := range rule.Hosts {
			if !strings.EqualFold(h, host) {
				continue
			}
			for _, p := range rule.HTTP.Paths {
				if strings.HasPrefix(path, p.Path) && len(p.Path) > bestLen {
					best, bestLen = p.Splits[0].ServiceName, len(p.Path)
				}
			}
		}
	}
	return best
}

func FuzzRouteHost(f *testing.F) {
	for _, seed := range []struct{ host, path string }{
		{"app.example.com", "/"},
		{"APP.example.com:8080", "/api/v1"},
		{"app.example.com.", "/api/v2/x"},
		{"app.other.example.com", "/apiv2"},
		{"tag-app.example.com", ""},
		{"app.ns.svc.cluster.local", "/"},
		{"[::1]:80", "/"},
		{"", "/"},
		{":", "/"},
		{"app.example.com:", "/API"},
		{"a b", "/"},
		{"app.example.com:99999999", "/"},
		{"xn--bcher-kva.example.com", "/%2e%2e/"},
	} {
		f.Add(seed.host, seed.path)
	}

	services := backends.NewRegistry()
	programmer := routing.NewProgrammer(services)
	p := New(Config{RequestTimeout: 5 * time.Minute, MaxQueued: 1000}, programmer.Table, NewMetrics(), nil).Handler(true).(*listenerHandler)
	p.roll = gatewaytest.SeededRoll(1)
	for _, rule := range fuzzRules {
		for _, path := range rule.HTTP.Paths {
			name := path.Splits[0].ServiceName
			services.Update(gatewaytest.Key(name), backends.BuildEndpoints(gatewaytest.ServiceWithPort(name),
				[]discoveryv1.EndpointSlice{gatewaytest.SliceFor(name, 8012, "10.244.0.1")}, func(string) bool { return true }))
		}
	}
	if err := programmer.Apply(gatewaytest.NewIngress("fuzz", 0, fuzzRules...)); err != nil {
		f.Fatal(err)
	}

	f.Fuzz(func(t *testing.T, host, path string) {
		canonical, ok := routing.CanonicalHost(host)
		if ok {
			if again, ok2 := routing.CanonicalHost(canonical); !ok2 || again != canonical {
				t.Fatalf("canonicalHost(%q) = %q is not canonical: %q, %v", host, canonical, again, ok2)
			}
			if strings.ToLower(canonical) != canonical || strings.HasSuffix(canonical, ".") {
				t.Fatalf("canonicalHost(%q) = %q", host, canonical)
			}
		}

		r := httptest.NewRequest("GET", "/", nil)
		r.Host, r.URL.Path = host, path
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r)

		got := ""
		switch w.Code {
		case http.StatusBadRequest:
			if ok {
				t.Fatalf("Host %q was rejected but is %q", host, canonical)
			}
			return
		case http.StatusOK:
			body := w.Body.String()
			const prefix = "Hello from revision "
			if !strings.HasPrefix(body, prefix) || w.Header().Get("X-Ferry-Simulated") != "true" {
				t.Fatalf("200 body %q, headers %v", body, w.Header())
			}
			got, _, _ = strings.Cut(strings.TrimPrefix(body, prefix), " ")
		case http.StatusNotFound:
		default:
			t.Fatalf("status %d for Host %q path %q", w.Code, host, path)
		}
		if want := referenceRoute(host, path); got != want {
			t.Fatalf("Host %q path %q routed to %q, want %q", host, path, got, want)
		}
	})
}
