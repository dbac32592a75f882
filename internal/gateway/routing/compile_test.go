package routing

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
)

func TestCompileValidation(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rules      []v1alpha1.IngressRule
		wantReason string
		wantInMsg  string
	}{{
		name:  "valid split",
		rules: []v1alpha1.IngressRule{gatewaytest.ExternalRule([]string{"a.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("a-1", 90), gatewaytest.SplitTo("a-2", 10)))},
	}, {
		name:  "lone split without percent takes all",
		rules: []v1alpha1.IngressRule{gatewaytest.ExternalRule([]string{"a.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("a-1", 0)))},
	}, {
		name:       "percents below 100",
		rules:      []v1alpha1.IngressRule{gatewaytest.ExternalRule([]string{"a.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("a-1", 50), gatewaytest.SplitTo("a-2", 40)))},
		wantReason: reasonInvalidSplit, wantInMsg: "sum to 90, not 100",
	}, {
		name:       "negative percent",
		rules:      []v1alpha1.IngressRule{gatewaytest.ExternalRule([]string{"a.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("a-1", 110), gatewaytest.SplitTo("a-2", -10)))},
		wantReason: reasonInvalidSplit, wantInMsg: "negative percent",
	}, {
		name:       "no splits",
		rules:      []v1alpha1.IngressRule{gatewaytest.ExternalRule([]string{"a.example.com"}, gatewaytest.Path("/x"))},
		wantReason: reasonInvalidSplit, wantInMsg: "no splits",
	}, {
		name:       "no service name",
		rules:      []v1alpha1.IngressRule{gatewaytest.ExternalRule([]string{"a.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("", 100)))},
		wantReason: reasonInvalidSplit, wantInMsg: "no serviceName",
	}, {
		name:       "bad host",
		rules:      []v1alpha1.IngressRule{gatewaytest.ExternalRule([]string{"a b"}, gatewaytest.Path("", gatewaytest.SplitTo("a-1", 100)))},
		wantReason: reasonInvalidHost, wantInMsg: `"a b" is not a valid host`,
	}, {
		name:       "no hosts",
		rules:      []v1alpha1.IngressRule{gatewaytest.ExternalRule(nil, gatewaytest.Path("", gatewaytest.SplitTo("a-1", 100)))},
		wantReason: reasonInvalidHost, wantInMsg: "no hosts",
	}, {
		name:       "relative path",
		rules:      []v1alpha1.IngressRule{gatewaytest.ExternalRule([]string{"a.example.com"}, gatewaytest.Path("api", gatewaytest.SplitTo("a-1", 100)))},
		wantReason: reasonInvalidPath, wantInMsg: "does not start with /",
	}, {
		name:       "no paths",
		rules:      []v1alpha1.IngressRule{{Hosts: []string{"a.example.com"}}},
		wantReason: reasonInvalidPath, wantInMsg: "no HTTP paths",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			services := backends.NewRegistry()
			ci := compileIngress(gatewaytest.NewIngress("a", 0, tc.rules...), services)
			if tc.wantReason == "" {
				if ci.invalid != nil {
					t.Fatalf("invalid: %v", ci.invalid)
				}
				return
			}
			if ci.invalid == nil || ci.invalid.reason != tc.wantReason || !strings.Contains(ci.invalid.message, tc.wantInMsg) {
				t.Fatalf("invalid = %+v; want reason %s and a message with %q", ci.invalid, tc.wantReason, tc.wantInMsg)
			}
			if len(ci.hosts) != 0 || len(ci.services) != 0 || services.Len() != 0 {
				t.Errorf("an invalid ingress holds hosts %v or services %v (%d registered)", ci.hosts, ci.services, services.Len())
			}
		})
	}
}

func TestCompileVisibilityAndOrder(t *testing.T) {
	ing := gatewaytest.NewIngress("a", 0,
		gatewaytest.ExternalRule([]string{"A.example.com", "a.ns.svc.cluster.local"},
			gatewaytest.Path("", gatewaytest.SplitTo("catch-all", 100)),
			v1alpha1.HTTPIngressPath{Headers: map[string]v1alpha1.HeaderMatch{"knative-serving-tag": {Exact: "blue"}}, Splits: []v1alpha1.IngressBackendSplit{gatewaytest.SplitTo("blue", 100)}},
			gatewaytest.Path("/api", gatewaytest.SplitTo("api", 100)),
			gatewaytest.Path("/api/v2", gatewaytest.SplitTo("api-v2", 100)),
		),
		gatewaytest.LocalRule([]string{"a.ns.svc.cluster.local", "a.ns"}, gatewaytest.Path("/internal", gatewaytest.SplitTo("internal", 100))),
	)
	ci := compileIngress(ing, backends.NewRegistry())
	if ci.invalid != nil {
		t.Fatal(ci.invalid)
	}
	names := func(routes []*Route) (out []string) {
		for _, rt := range routes {
			out = append(out, rt.splits[0].Service.Key.Name)
		}
		return out
	}
	for _, tc := range []struct {
		host     string
		external bool
		want     []string
	}{
		{host: "a.example.com", external: true, want: []string{"api-v2", "api", "blue", "catch-all"}},
		{host: "a.example.com", external: false, want: []string{"api-v2", "api", "blue", "catch-all"}},
		{host: "a.ns.svc.cluster.local", external: true, want: []string{"api-v2", "api", "blue", "catch-all"}},
		{host: "a.ns.svc.cluster.local", external: false, want: []string{"internal", "api-v2", "api", "blue", "catch-all"}},
		{host: "a.ns", external: true, want: nil},
		{host: "a.ns", external: false, want: []string{"internal"}},
	} {
		if got := names(ci.hosts[tc.host].Routes(tc.external)); strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s external=%v: routes %v, want %v", tc.host, tc.external, got, tc.want)
		}
	}

	// The header-matched path wins over the catch-all only when the header is there.
	routes := ci.hosts["a.example.com"].external
	r := httptest.NewRequest("GET", "http://a.example.com/", nil)
	if got := MatchRoute(routes, r).splits[0].Service.Key.Name; got != "catch-all" {
		t.Errorf("without header: %s", got)
	}
	r.Header.Set("Knative-Serving-Tag", "blue")
	if got := MatchRoute(routes, r).splits[0].Service.Key.Name; got != "blue" {
		t.Errorf("with header: %s", got)
	}
	r = httptest.NewRequest("GET", "http://a.example.com/api/v2/x", nil)
	if got := MatchRoute(routes, r).splits[0].Service.Key.Name; got != "api-v2" {
		t.Errorf("/api/v2/x: %s", got)
	}
}

func TestSplitDistribution(t *testing.T) {
	ci := compileIngress(gatewaytest.NewIngress("a", 0, gatewaytest.ExternalRule([]string{"a.example.com"},
		gatewaytest.Path("", gatewaytest.SplitTo("a-1", 90), gatewaytest.SplitTo("a-0", 0), gatewaytest.SplitTo("a-2", 10)))), backends.NewRegistry())
	rt := ci.hosts["a.example.com"].external[0]

	// Every roll lands on the split that owns it: 0..89 the first, 90..99 the last,
	// none on the 0% split.
	counts := map[string]int{}
	for roll := range 100 {
		counts[rt.Pick(func(int) int { return roll }).Service.Key.Name]++
	}
	if counts["a-1"] != 90 || counts["a-2"] != 10 || counts["a-0"] != 0 {
		t.Errorf("picks per roll = %v", counts)
	}

	// With a seeded source the observed split is close to the weights.
	rng := gatewaytest.SeededRoll(1)
	counts = map[string]int{}
	const n = 20000
	for range n {
		counts[rt.Pick(rng).Service.Key.Name]++
	}
	if share := float64(counts["a-2"]) / n; share < 0.09 || share > 0.11 {
		t.Errorf("a-2 got %.3f of %d picks, want 0.10±0.01", share, n)
	}
}
