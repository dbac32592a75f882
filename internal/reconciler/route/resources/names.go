// Package resources builds the objects a Route owns and the names it publishes. Every
// function is pure: the reconciler decides what to do with the result.
package resources

import (
	"strings"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// ClusterDomain is the cluster's DNS suffix for Services.
const ClusterDomain = "svc.cluster.local"

// DefaultDomain is the external domain when none is configured, as in Knative.
const DefaultDomain = "example.com"

// IsClusterLocal reports whether the Route is reachable only from inside the cluster.
func IsClusterLocal(r *v1.Route) bool {
	return r.Labels[v1.VisibilityLabelKey] == v1.VisibilityClusterLocal
}

// Host is the Route's host for a tag ("" for the Route itself): Knative's templates
// {{.Name}}.{{.Namespace}}.{{.Domain}} and {{.Tag}}-{{.Name}}, with the cluster domain
// for a cluster-local Route.
func Host(r *v1.Route, tag, domain string) string {
	if IsClusterLocal(r) {
		return ClusterLocalHost(r, tag)
	}
	return join(hostName(r, tag), r.Namespace, domain)
}

// ClusterLocalHost is the fully qualified in-cluster host for a tag ("" for the Route).
func ClusterLocalHost(r *v1.Route, tag string) string {
	return join(hostName(r, tag), r.Namespace, ClusterDomain)
}

// clusterLocalHosts are all the names an in-cluster client may use, as Knative lists
// them: name.ns, name.ns.svc, name.ns.svc.cluster.local.
func clusterLocalHosts(r *v1.Route, tag string) []string {
	n := hostName(r, tag)
	return []string{join(n, r.Namespace), join(n, r.Namespace, "svc"), join(n, r.Namespace, ClusterDomain)}
}

func hostName(r *v1.Route, tag string) string {
	if tag == "" {
		return r.Name
	}
	return tag + "-" + r.Name
}

// URL is the Route's URL (status.url) or a tag's (status.traffic[].url).
func URL(r *v1.Route, tag, domain string) string { return "http://" + Host(r, tag, domain) }

// AddressURL is status.address.url: always the in-cluster name.
func AddressURL(r *v1.Route) string { return "http://" + ClusterLocalHost(r, "") }

func join(parts ...string) string { return strings.Join(parts, ".") }
