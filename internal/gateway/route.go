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
