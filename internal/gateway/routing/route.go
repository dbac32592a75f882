package routing

import (
	"net/http"
	"strings"

	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// VirtualHost holds what one host serves on each listener. It is immutable once
// compiled, so tables share it and compare it by pointer.
type VirtualHost struct {
	// external holds the paths of ExternalIP rules: all the external listener serves.
	external []*Route
	// local holds the paths of every rule: the cluster-local listener serves both
	// visibilities, as a Kubernetes Service does for in-cluster callers.
	local []*Route
}

// Routes returns the paths a listener serves for this host, most specific first.
func (vh *VirtualHost) Routes(external bool) []*Route {
	if vh == nil {
		return nil
	}
	if external {
		return vh.external
	}
	return vh.local
}

// Route is one compiled HTTPIngressPath.
type Route struct {
	prefix        string
	headers       []Header // all must match, names in canonical form
	AppendHeaders []Header
	RewriteHost   string
	splits        []Split
	// total is the sum of the split weights; a roll in [0,total) picks a split.
	total int
}

type Header struct{ Name, Value string }

// Split is one weighted backend of a route.
type Split struct {
	Service *backends.Service
	Port    intstr.IntOrString
	// upTo is the exclusive upper bound of this split's slice of [0,total).
	upTo          int
	AppendHeaders []Header
}

// MatchRoute returns the first route that matches r; routes are sorted most specific
// first, so that is the longest matching prefix, preferring header matches.
func MatchRoute(routes []*Route, r *http.Request) *Route {
	for _, rt := range routes {
		if rt.matches(r) {
			return rt
		}
	}
	return nil
}

func (rt *Route) matches(r *http.Request) bool {
	if !strings.HasPrefix(r.URL.Path, rt.prefix) {
		return false
	}
	for _, h := range rt.headers {
		// Direct map access: names are canonical, and Get would canonicalize again.
		v := r.Header[h.Name]
		if len(v) == 0 || v[0] != h.Value {
			return false
		}
	}
	return true
}

// Pick chooses a split by weight; roll returns a uniform int in [0,n).
func (rt *Route) Pick(roll func(n int) int) *Split {
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

// Follow returns the route that serves r when rt rewrites the Host to one this gateway
// serves: the request is routed again under that host, as the cluster-local listener
// would route it. This is how Knative's ingresses serve a DomainMapping: its KIngress
// rewrites the mapped domain to the target's cluster-local host and sends the request
// to the target's Kubernetes Service, which leads back into the ingress. The result is
// a copy of the final route carrying what the rewriting routes add: their paths' and
// splits' headers (Knative's K-Original-Host) and the rewritten Host, which the pod
// sees. A host this gateway does not serve leaves rt as it is: its split's Service
// gets the request with the Host rewritten.
func Follow(t *Table, rt *Route, r *http.Request, roll func(n int) int) *Route {
	if rt == nil || rt.RewriteHost == "" {
		return rt
	}
	cur, rewritten := rt, ""
	var headers []Header
	for range maxHostRewrites {
		host, ok := CanonicalHost(cur.RewriteHost)
		if !ok {
			break
		}
		next := MatchRoute(t.Lookup(host).Routes(false), r)
		if next == nil {
			break
		}
		headers = append(append(headers, cur.AppendHeaders...), cur.Pick(roll).AppendHeaders...)
		rewritten, cur = cur.RewriteHost, next
		if cur.RewriteHost == "" {
			break
		}
	}
	if cur == rt {
		return rt
	}
	out := *cur
	if out.RewriteHost == "" {
		out.RewriteHost = rewritten
	}
	// Set in order by the forwarder: the final route's own headers win.
	out.AppendHeaders = append(headers, cur.AppendHeaders...)
	return &out
}
