package config

// Network is the part of config-network that Ferry's control plane and gateway use.
type Network struct {
	DomainTemplate        string
	TagTemplate           string
	DefaultExternalScheme string
	// RolloutDurationSeconds is rollout-duration (Ferry does not do gradual rollouts yet;
	// it is parsed and validated so a Knative ConfigMap loads).
	RolloutDurationSeconds int
}

// DefaultNetwork is Knative's config-network defaults.
func DefaultNetwork() *Network {
	return &Network{
		DomainTemplate:        "{{.Name}}.{{.Namespace}}.{{.Domain}}",
		TagTemplate:           "{{.Tag}}-{{.Name}}",
		DefaultExternalScheme: "http",
	}
}
