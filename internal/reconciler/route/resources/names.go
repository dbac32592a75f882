// Package resources builds the objects a Route owns and the names it publishes. Every
// function is pure: the reconciler decides what to do with the result.
package resources

import (
	"maps"
	"slices"
	"strings"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
)

// ClusterDomain is the cluster's DNS suffix for Services.
const ClusterDomain = config.ClusterLocalDomain

// DefaultDomain is the external domain when none is configured (Ferry's; Knative's is
// svc.cluster.local).
const DefaultDomain = config.DefaultDomainName

// IsClusterLocal reports whether the Route is labelled reachable only from inside the
// cluster. (Hosts.ClusterLocal also counts a config-domain entry of svc.cluster.local.)
func IsClusterLocal(r *v1.Route) bool {
	return r.Labels[v1.VisibilityLabelKey] == v1.VisibilityClusterLocal
}

// Hosts are a Route's names under one configuration, for the Route itself (tag "") and
// for each of its tags, computed as Knative does: config-domain picks the domain by the
// Route's labels, tag-template names each tag, and domain-template makes the host
// (Knative's default template for cluster-local Routes); every host must be a fully
// qualified domain name. A tag (or the Route itself) whose placeholder Service the user
// labelled cluster-local (WithClusterLocal) has only its in-cluster host.
type Hosts struct {
	// ClusterLocal: the Route has no external hosts (the visibility label, or
	// config-domain gave it svc.cluster.local).
	ClusterLocal bool
	namespace    string
	domain       string
	scheme       string
	names        map[string]string // tag → first label: the Route's name or tag-template's output
	hosts        map[string]string // tag → the external host, or the in-cluster one if ClusterLocal
	local        map[string]bool   // tags made cluster-local by their placeholder Service
}

// MakeHosts computes the Route's hosts for itself and for every tag in traffic. An
// error (a template that fails, a host that is no valid FQDN) is a configuration
// problem: Knative marks the Route ErrorConfig.
func MakeHosts(cfg *config.Config, r *v1.Route, traffic []v1.TrafficTarget) (*Hosts, error) {
	domain := cfg.Domain.LookupDomainForLabels(r.Labels)
	h := &Hosts{
		ClusterLocal: IsClusterLocal(r) || domain == ClusterDomain,
		namespace:    r.Namespace,
		scheme:       cfg.Network.DefaultExternalScheme,
		names:        map[string]string{},
		hosts:        map[string]string{},
	}
	if h.ClusterLocal {
		domain, h.scheme = ClusterDomain, "http"
	}
	h.domain = domain
	if h.scheme == "" {
		h.scheme = "http"
	}
	tags := []string{""}
	for _, t := range traffic {
		if t.Tag != "" {
			tags = append(tags, t.Tag)
		}
	}
	for _, tag := range tags {
		name, err := cfg.Network.HostName(r.Name, tag)
		if err != nil {
			return nil, err
		}
		host, err := cfg.Network.DomainName(config.DomainTemplateValues{
			Name: name, Namespace: r.Namespace, Domain: domain, Annotations: r.Annotations, Labels: r.Labels,
		}, h.ClusterLocal)
		if err != nil {
			return nil, err
		}
		h.names[tag], h.hosts[tag] = name, host
	}
	return h, nil
}

// DefaultHosts are the hosts under Ferry's default configuration (tests).
func DefaultHosts(r *v1.Route, traffic []v1.TrafficTarget) *Hosts {
	h, err := MakeHosts(config.Default(), r, traffic)
	if err != nil {
		panic(err)
	}
	return h
}

// WithClusterLocal returns the hosts with the tags of local ("" for the Route itself)
// made cluster-local, as Knative's visibility resolver does for a tag whose placeholder
// Service carries the visibility label: the tag's host becomes its in-cluster name
// <name>.<ns>.svc.cluster.local (Knative's default domain-template, whatever
// config-network's is), its URL http, and its KIngress rules the cluster-local one
// alone. A cluster-local Route is so for all its tags already.
func (h *Hosts) WithClusterLocal(local map[string]bool) *Hosts {
	out := *h
	out.local = map[string]bool{}
	out.hosts = maps.Clone(h.hosts)
	for tag, on := range local {
		if _, ok := h.hosts[tag]; !ok || !on || h.ClusterLocal {
			continue
		}
		out.local[tag] = true
		out.hosts[tag] = join(h.names[tag], h.namespace, ClusterDomain)
	}
	return &out
}

// IsClusterLocal reports whether the host of tag ("" for the Route itself) is served
// only in the cluster: the whole Route is, or the tag's placeholder Service says so.
func (h *Hosts) IsClusterLocal(tag string) bool { return h.ClusterLocal || h.local[tag] }

// AnyExternal reports whether any of the hosts is external: a Route whose hosts are
// all cluster-local has no external-domain Certificate, as in Knative.
func (h *Hosts) AnyExternal() bool {
	for tag := range h.hosts {
		if !h.IsClusterLocal(tag) {
			return true
		}
	}
	return false
}

// ServiceName is the name of the placeholder Service of tag ("" for the Route itself):
// the first label of its hosts, the Route's name or tag-template's output, as Knative
// names it (domains.HostnameFromTemplate).
func (h *Hosts) ServiceName(tag string) string { return h.names[tag] }

// Host is the Route's host for a tag ("" for the Route itself): the external one, or
// the in-cluster one for a cluster-local Route or tag.
func (h *Hosts) Host(tag string) string { return h.hosts[tag] }

// Domain is the config-domain domain of the Route's hosts (the cluster domain for a
// cluster-local Route).
func (h *Hosts) Domain() string { return h.domain }

// Tags are the tags the hosts were made for, the Route itself ("") first, then
// sorted.
func (h *Hosts) Tags() []string {
	tags := make([]string, 0, len(h.hosts))
	for t := range h.hosts {
		tags = append(tags, t)
	}
	slices.Sort(tags)
	return tags
}

// URL is the Route's URL (status.url) or a tag's (status.traffic[].url): with
// default-external-scheme for external hosts, http for cluster-local ones.
func (h *Hosts) URL(tag string) string {
	if h.local[tag] {
		return "http://" + h.hosts[tag]
	}
	return h.scheme + "://" + h.hosts[tag]
}

// ClusterLocalHosts are all the names an in-cluster client may use, as Knative lists
// them: name.ns, name.ns.svc, name.ns.svc.cluster.local.
func (h *Hosts) ClusterLocalHosts(tag string) []string {
	n := h.names[tag]
	return []string{join(n, h.namespace), join(n, h.namespace, "svc"), join(n, h.namespace, ClusterDomain)}
}

// ClusterLocalHost is the fully qualified in-cluster host of the Route (no tag).
func ClusterLocalHost(r *v1.Route) string { return join(r.Name, r.Namespace, ClusterDomain) }

// AddressURL is status.address.url: always the in-cluster name.
func AddressURL(r *v1.Route) string { return "http://" + ClusterLocalHost(r) }

func join(parts ...string) string { return strings.Join(parts, ".") }
