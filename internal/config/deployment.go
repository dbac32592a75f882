package config

import "time"

// Deployment is the part of config-deployment that applies to Ferry (no queue-proxy
// sidecar, so its queue-sidecar-* keys are accepted and ignored).
type Deployment struct {
	ProgressDeadline               time.Duration
	RegistriesSkippingTagResolving []string
	DigestResolutionTimeout        time.Duration
	PodIsAlwaysSchedulable         bool
}

// DefaultDeployment is Knative's config-deployment defaults.
func DefaultDeployment() *Deployment {
	return &Deployment{
		ProgressDeadline:               600 * time.Second,
		RegistriesSkippingTagResolving: []string{"kind.local", "ko.local", "dev.local"},
		DigestResolutionTimeout:        10 * time.Second,
	}
}
