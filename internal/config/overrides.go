package config

import (
	"sync/atomic"
	"time"
)

// Overrides are command-line flags that win over the ConfigMaps. The reconcilers apply
// them to each snapshot they read (reconciler.Options); admission, which reads none of
// what they override, reads the Store as it is. The zero value overrides nothing.
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
