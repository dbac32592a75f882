package config

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
	return &Domain{Domains: map[string]DomainSelector{"example.com": {}}}
}
