package config

import (
	"testing"
	"time"
)

func TestOverridesSource(t *testing.T) {
	stored := Default()
	var subscribers []func(old, new *Config)
	load, subscribe := Overrides{
		Domain: "flag.test", GC: &GC{MinNonActiveRevisions: 1, MaxNonActiveRevisions: GCDisabled}, ProgressDeadline: time.Minute,
	}.Source(func() *Config { return stored }, func(f func(old, new *Config)) { subscribers = append(subscribers, f) })
	c := load()
	if c.Domain.LookupDomainForLabels(nil) != "flag.test" || c.GC.MinNonActiveRevisions != 1 || c.GC.MaxNonActiveRevisions != GCDisabled ||
		c.Deployment.ProgressDeadline != time.Minute || c.Network != stored.Network {
		t.Errorf("overridden config = %+v", c)
	}
	if load() != c {
		t.Error("the same snapshot gave another *Config")
	}
	// Subscribers see the overridden configurations: a config-domain change under
	// --domain changes nothing for Routes.
	var sawDomain string
	subscribe(func(_, new *Config) { sawDomain = new.Domain.LookupDomainForLabels(nil) })
	next := *stored
	next.Domain = &Domain{Domains: map[string]DomainSelector{"cm.test": {}}}
	subscribers[0](stored, &next)
	if sawDomain != "flag.test" {
		t.Errorf("subscriber saw domain %q", sawDomain)
	}

	// No Config: the defaults, and no change ever.
	load, subscribe = Overrides{}.Source(nil, nil)
	if load().Domain.LookupDomainForLabels(nil) != DefaultDomainName {
		t.Error("no Config: not the defaults")
	}
	subscribe(func(_, _ *Config) { t.Error("called") })
}
