package config

import (
	"sync/atomic"
	"time"
)

// Overrides are command-line flags (and tests' settings) that win over the ConfigMaps.
// The reconcilers read the configuration through Source (reconciler.Options.Overrides);
// admission, which reads none of what they override, reads the Store as it is. The zero
// value overrides nothing.
type Overrides struct {
	// Domain, if set, is every Route's domain: config-domain is ignored (the
	// cluster-local visibility label still makes a Route cluster-local).
	Domain string
	// GC, if set, replaces config-gc.
	GC *GC
	// ProgressDeadline, if positive, replaces config-deployment's progress-deadline.
	ProgressDeadline time.Duration
}

// IsZero reports whether o overrides nothing.
func (o Overrides) IsZero() bool {
	return o.Domain == "" && o.GC == nil && o.ProgressDeadline <= 0
}

// Apply returns c with the overrides in place: c itself when there are none, else a
// shallow copy sharing c's unchanged parts.
func (o Overrides) Apply(c *Config) *Config {
	if o.IsZero() || c == nil {
		return c
	}
	out := *c
	if o.Domain != "" {
		out.Domain = &Domain{Domains: map[string]DomainSelector{o.Domain: {Type: DomainTypeWildcard}}}
	}
	if o.GC != nil {
		g := *o.GC
		out.GC = &g
	}
	if o.ProgressDeadline > 0 {
		d := *c.Deployment
		d.ProgressDeadline = o.ProgressDeadline
		out.Deployment = &d
	}
	return &out
}

// Source returns the configuration and the change subscription that load and
// onChange (config.Store's Load and OnChange) give, with the overrides applied to both.
// A nil load is Default() for ever; a nil onChange never calls back.
func (o Overrides) Source(load func() *Config, onChange func(func(old, new *Config))) (func() *Config, func(func(old, new *Config))) {
	if load == nil {
		d := Default()
		load = func() *Config { return d }
	}
	subscribe := func(func(old, new *Config)) {}
	if onChange != nil {
		subscribe = func(f func(old, new *Config)) {
			onChange(func(old, new *Config) { f(o.Apply(old), o.Apply(new)) })
		}
	}
	return o.Wrap(load), subscribe
}

// Wrap returns load with the overrides applied. It applies them once per snapshot, so
// that the same snapshot always gives the same *Config.
func (o Overrides) Wrap(load func() *Config) func() *Config {
	if o.IsZero() {
		return load
	}
	type pair struct{ in, out *Config }
	var last atomic.Pointer[pair]
	return func() *Config {
		in := load()
		if p := last.Load(); p != nil && p.in == in {
			return p.out
		}
		p := &pair{in, o.Apply(in)}
		last.Store(p)
		return p.out
	}
}
