package gateway

import (
	"net/http"
	"testing"

	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
)

// A DomainMapping's KIngress, as Knative builds it, rewrites the mapped domain to the
// Route's cluster-local host and names the Route's placeholder Service: the request
// must reach the Route's Revision, with the Route's headers and K-Original-Host.
func TestRewriteHostReentersRouting(t *testing.T) {
	g := startGateway(t, Options{})
	g.serve("hello-00001", newEchoBackend(t, "hello-00001"))
	g.serve("other", newEchoBackend(t, "other"))
	revSplit := gatewaytest.SplitTo("hello-00001", 100)
	revSplit.AppendHeaders = map[string]string{"Knative-Serving-Revision": "hello-00001"}
	g.program(gatewaytest.NewIngress("hello", 0,
		gatewaytest.ExternalRule([]string{"hello.ns.example.com"}, gatewaytest.Path("", revSplit)),
		gatewaytest.LocalRule([]string{"hello.ns.svc.cluster.local"}, gatewaytest.Path("", revSplit)),
	))
	mapped := gatewaytest.Path("", gatewaytest.SplitTo("hello", 100))
	mapped.RewriteHost = "hello.ns.svc.cluster.local"
	mapped.Splits[0].AppendHeaders = map[string]string{"K-Original-Host": "www.example.org"}
	unserved := gatewaytest.Path("", gatewaytest.SplitTo("other", 100))
	unserved.RewriteHost = "nobody.ns.svc.cluster.local"
	loop := gatewaytest.Path("", gatewaytest.SplitTo("other", 100))
	loop.RewriteHost = "loop.example.org"
	g.program(gatewaytest.NewIngress("www.example.org", 0,
		gatewaytest.ExternalRule([]string{"www.example.org"}, mapped),
		gatewaytest.ExternalRule([]string{"unserved.example.org"}, unserved),
		gatewaytest.ExternalRule([]string{"loop.example.org"}, loop),
	))

	code, body, e := get(t, g.externalURL("/x"), "www.example.org", nil)
	if code != http.StatusOK {
		t.Fatalf("mapped domain: %d %q", code, body)
	}
	for _, c := range [][2]string{
		{e.Backend, "hello-00001"},
		{e.Host, "hello.ns.svc.cluster.local"},
		{e.Path, "/x"},
		{e.Header.Get("K-Original-Host"), "www.example.org"},
		{e.Header.Get("Knative-Serving-Revision"), "hello-00001"},
		{e.Header.Get("X-Forwarded-Host"), "www.example.org"},
	} {
		if c[0] != c[1] {
			t.Errorf("mapped domain: got %q, want %q (%+v)", c[0], c[1], e)
		}
	}
	// A rewritten host the gateway does not serve: the split's own Service, as before.
	if _, _, e := get(t, g.externalURL("/"), "unserved.example.org", nil); e == nil || e.Backend != "other" || e.Host != "nobody.ns.svc.cluster.local" {
		t.Errorf("unserved rewritten host: %+v", e)
	}
	// A path that rewrites to its own host ends after a bounded number of rounds.
	if _, _, e := get(t, g.externalURL("/"), "loop.example.org", nil); e == nil || e.Backend != "other" {
		t.Errorf("self-rewrite: %+v", e)
	}
	// The Route's host itself is not served on the external listener.
	if code, _, _ := get(t, g.externalURL("/"), "hello.ns.svc.cluster.local", nil); code != http.StatusNotFound {
		t.Errorf("cluster-local host on the external listener: %d", code)
	}
}
