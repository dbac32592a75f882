package config

import (
	"context"

	"github.com/ferry-serving/ferry/api/defaulting"
)

// SystemNamespace is where Ferry reads its ConfigMaps (Knative: knative-serving).
const SystemNamespace = "ferry-system"

// The ConfigMaps' names, as in Knative.
const (
	DomainConfigName     = "config-domain"
	NetworkConfigName    = "config-network"
	DefaultsConfigName   = "config-defaults"
	GCConfigName         = "config-gc"
	DeploymentConfigName = "config-deployment"
	FeaturesConfigName   = "config-features"
)

// Config is one consistent snapshot of every ConfigMap. Never modify a Config that a
// Store handed out: take a copy.
type Config struct {
	Domain     *Domain
	Network    *Network
	Defaults   *Defaults
	GC         *GC
	Deployment *Deployment
	Features   *Features
	Autoscaler *Autoscaler
	// CertManager is config-certmanager, read by the cert-manager provider.
	CertManager *CertManager
	// Observability is config-observability, read by the gateway (request logs,
	// traces) and the controller (traces, metrics export, Revisions' logUrl).
	Observability *Observability
}

// Default is the configuration with no ConfigMap present.
func Default() *Config {
	return &Config{
		Domain:        DefaultDomain(),
		Network:       DefaultNetwork(),
		Defaults:      DefaultDefaults(),
		GC:            DefaultGC(),
		Deployment:    DefaultDeployment(),
		Features:      DefaultFeatures(),
		Autoscaler:    DefaultAutoscaler(),
		CertManager:   DefaultCertManager(),
		Observability: DefaultObservability(),
	}
}

// config-defaults and config-features are typed in api/defaulting, where the API's
// defaulting reads them; they are parsed here, with the other ConfigMaps.
type (
	Defaults = defaulting.Defaults
	Features = defaulting.Features
	Flag     = defaulting.Flag
)

// config-features' values.
const (
	Enabled          = defaulting.Enabled
	Disabled         = defaulting.Disabled
	Allowed          = defaulting.Allowed
	AllowRootBounded = defaulting.AllowRootBounded
)

// DefaultDefaults are Knative's config-defaults defaults.
func DefaultDefaults() *Defaults { return defaulting.DefaultDefaults() }

// DefaultFeatures are Knative's config-features defaults.
func DefaultFeatures() *Features { return defaulting.DefaultFeatures() }

// ToContext returns ctx carrying c's config-defaults and config-features for the API
// types' SetDefaults: admission and the reconcilers default with the live
// configuration through it.
func ToContext(ctx context.Context, c *Config) context.Context {
	return defaulting.ToContext(ctx, &defaulting.Config{Defaults: c.Defaults, Features: c.Features})
}

// ToContextFrom is ToContext with the configuration load returns now; a nil load leaves
// ctx as it is, for Knative's defaults.
func ToContextFrom(ctx context.Context, load func() *Config) context.Context {
	if load == nil {
		return ctx
	}
	return ToContext(ctx, load())
}
