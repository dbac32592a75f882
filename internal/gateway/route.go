package gateway

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// virtualHost holds what one host serves on each listener. It is immutable once
// compiled, so tables share it and compare it by pointer.
type virtualHost struct {
	// external holds the paths of ExternalIP rules: all the external listener serves.
	external []*route
	// local holds the paths of every rule: the cluster-local listener serves both
	// visibilities, as a Kubernetes Service does for in-cluster callers.
	local []*route
}

// routes returns the paths a listener serves for this host, most specific first.
func (vh *virtualHost) routes(external bool) []*route {
	if vh == nil {
		return nil
	}
	if external {
		return vh.external
	}
	return vh.local
}

// route is one compiled HTTPIngressPath.
type route struct {
	prefix        string
	headers       []header // all must match, names in canonical form
	appendHeaders []header
	rewriteHost   string
	splits        []split
	// total is the sum of the split weights; a roll in [0,total) picks a split.
	total int
}

type header struct{ name, value string }

// split is one weighted backend of a route.
type split struct {
	service *service
	port    intstr.IntOrString
	// upTo is the exclusive upper bound of this split's slice of [0,total).
	upTo          int
	appendHeaders []header
}

// matchRoute returns the first route that matches r; routes are sorted most specific
// first, so that is the longest matching prefix, preferring header matches.
func matchRoute(routes []*route, r *http.Request) *route {
	for _, rt := range routes {
		if rt.matches(r) {
			return rt
		}
	}
	return nil
}

func (rt *route) matches(r *http.Request) bool {
	if !strings.HasPrefix(r.URL.Path, rt.prefix) {
		return false
	}
	for _, h := range rt.headers {
		// Direct map access: names are canonical, and Get would canonicalize again.
		v := r.Header[h.name]
		if len(v) == 0 || v[0] != h.value {
			return false
		}
	}
	return true
}

// pick chooses a split by weight; roll returns a uniform int in [0,n).
func (rt *route) pick(roll func(n int) int) *split {
	if len(rt.splits) == 1 {
		return &rt.splits[0]
	}
	n := roll(rt.total)
	for i := range rt.splits {
		if n < rt.splits[i].upTo {
			return &rt.splits[i]
		}
	}
	// Unreachable for a roll in range; keeps a bad roll function from panicking.
	return &rt.splits[len(rt.splits)-1]
}

// maxHostRewrites bounds how often one request re-enters routing, so that ingresses
// whose paths rewrite hosts into each other cannot loop.
const maxHostRewrites = 4

// follow returns the route that serves r when rt rewrites the Host to one this gateway
// serves: the request is routed again under that host, as the cluster-local listener
// would route it. This is how Knative's ingresses serve a DomainMapping: its KIngress
// rewrites the mapped domain to the target's cluster-local host and sends the request
// to the target's Kubernetes Service, which leads back into the ingress. The result is
// a copy of the final route carrying what the rewriting routes add: their paths' and
// splits' headers (Knative's K-Original-Host) and the rewritten Host, which the pod
// sees. A host this gateway does not serve leaves rt as it is: its split's Service
// gets the request with the Host rewritten.
func follow(t *table, rt *route, r *http.Request, roll func(n int) int) *route {
	if rt == nil || rt.rewriteHost == "" {
		return rt
	}
	cur, rewritten := rt, ""
	var headers []header
	for range maxHostRewrites {
		host, ok := canonicalHost(cur.rewriteHost)
		if !ok {
			break
		}
		next := matchRoute(t.lookup(host).routes(false), r)
		if next == nil {
			break
		}
		headers = append(append(headers, cur.appendHeaders...), cur.pick(roll).appendHeaders...)
		rewritten, cur = cur.rewriteHost, next
		if cur.rewriteHost == "" {
			break
		}
	}
	if cur == rt {
		return rt
	}
	out := *cur
	if out.rewriteHost == "" {
		out.rewriteHost = rewritten
	}
	// Set in order by the forwarder: the final route's own headers win.
	out.appendHeaders = append(headers, cur.appendHeaders...)
	return &out
}
