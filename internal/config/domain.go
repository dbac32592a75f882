package config

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
)

// ClusterLocalDomain is the domain of in-cluster names. A Route whose config-domain
// entry is this domain, or that carries the cluster-local visibility label, is
// cluster-local: it gets no external host.
const ClusterLocalDomain = "svc.cluster.local"

// DefaultDomainName is Ferry's catch-all domain when config-domain has none.
const DefaultDomainName = "example.com"

// DomainTypeWildcard is the type of catch-all entries (and of entries that say so).
const DomainTypeWildcard = "wildcard"

// Domain is config-domain: the domain suffix of each Route's URL, chosen by the Route's
// labels.
type Domain struct {
	// Domains maps a domain suffix to the labels a Route must carry to get it; an empty
	// selector is a catch-all.
	Domains map[string]DomainSelector
}

// DomainSelector is one config-domain entry.
type DomainSelector struct {
	Selector map[string]string
	Type     string
}

// DefaultDomain is Ferry's domain with no config-domain: example.com for every Route.
// (Knative's default is svc.cluster.local, which makes every Route cluster-local; Ferry
// keeps its --domain flag's default so that the tour works without a ConfigMap.)
func DefaultDomain() *Domain {
	return &Domain{Domains: map[string]DomainSelector{DefaultDomainName: {Type: DomainTypeWildcard}}}
}

// domainEntry is the YAML of one config-domain value.
type domainEntry struct {
	Selector map[string]string `json:"selector,omitempty"`
	Type     string            `json:"type,omitempty"`
}

// NewDomainFromConfigMap parses config-domain as Knative does: every key but _example
// is a domain, its value YAML `selector: {label: value}` (optionally `type: wildcard`);
// an empty value or selector makes a catch-all. A value of any other shape is an
// error. Without a catch-all, Ferry adds example.com as one (Knative adds
// svc.cluster.local, which makes every unmatched Route cluster-local).
func NewDomainFromConfigMap(cm *corev1.ConfigMap) (*Domain, error) {
	d := &Domain{Domains: map[string]DomainSelector{}}
	catchAll := false
	for k, v := range cm.Data {
		if k == ExampleKey {
			continue
		}
		var e domainEntry
		if err := yaml.Unmarshal([]byte(v), &e); err != nil {
			return nil, fmt.Errorf("domain %q: %w", k, err)
		}
		if len(e.Selector) == 0 {
			e.Type = DomainTypeWildcard
			catchAll = true
		}
		d.Domains[k] = DomainSelector{Selector: e.Selector, Type: e.Type}
	}
	if !catchAll {
		d.Domains[DefaultDomainName] = DomainSelector{Type: DomainTypeWildcard}
	}
	return d, nil
}

// LookupDomainForLabels returns the domain for a Route with these labels, by Knative's
// rules: the cluster-local visibility label always gives svc.cluster.local; otherwise
// the matching entry (every selector label present and equal) with the most selector
// labels wins, ties going to the smallest domain.
func (d *Domain) LookupDomainForLabels(labels map[string]string) string {
	if labels[netv1alpha1.VisibilityLabelKey] == netv1alpha1.VisibilityClusterLocal {
		return ClusterLocalDomain
	}
	domain, specificity := "", -1
	for k, v := range d.Domains {
		if !matches(v.Selector, labels) || len(v.Selector) < specificity {
			continue
		}
		if len(v.Selector) > specificity || k < domain {
			domain, specificity = k, len(v.Selector)
		}
	}
	return domain
}

func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if lv, ok := labels[k]; !ok || lv != v {
			return false
		}
	}
	return true
}
