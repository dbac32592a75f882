// Package defaulting holds the configuration the API's defaulting reads, as Knative's
// pkg/apis/config does: config-defaults and config-features. It is typed here, beside
// the types, because api/ must not import internal/; internal/config parses the
// ConfigMaps into these types and puts them into the context the defaulting runs with
// (config.ToContext there).
package defaulting

import "context"

// Config is what the defaulting of serving.knative.dev objects reads.
type Config struct {
	Defaults *Defaults
	Features *Features
}

type configKey struct{}

// ToContext returns ctx carrying c for SetDefaults.
func ToContext(ctx context.Context, c *Config) context.Context {
	return context.WithValue(ctx, configKey{}, c)
}

// FromContextOrDefaults returns the Config in ctx, or Knative's defaults when there is
// none: defaulting without the ConfigMaps behaves as with empty ones.
func FromContextOrDefaults(ctx context.Context) *Config {
	if c, ok := ctx.Value(configKey{}).(*Config); ok && c != nil {
		return c
	}
	return &Config{Defaults: DefaultDefaults(), Features: DefaultFeatures()}
}
