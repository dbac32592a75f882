package reconciler

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/internal/config"
)

func TestConfigChangePredicates(t *testing.T) {
	base := config.Default()
	with := func(f func(c *config.Config)) *config.Config {
		c := *base
		f(&c)
		return &c
	}
	domain := func(data map[string]string) *config.Domain {
		d, err := config.NewDomainFromConfigMap(&corev1.ConfigMap{Data: data})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	network := func(data map[string]string) *config.Network {
		n, err := config.NewNetworkFromConfigMap(&corev1.ConfigMap{Data: data})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	tests := []struct {
		name        string
		new         *config.Config
		routing, gc bool
	}{
		{"same", base, false, false},
		{"same domains, new pointer", with(func(c *config.Config) { c.Domain = domain(nil) }), false, false},
		{"new catch-all", with(func(c *config.Config) { c.Domain = domain(map[string]string{"a.test": ""}) }), true, false},
		{"new selector", with(func(c *config.Config) {
			c.Domain = domain(map[string]string{"example.com": "", "b.test": "selector: {app: b}"})
		}), true, false},
		{"same network, new pointer", with(func(c *config.Config) { c.Network = network(nil) }), false, false},
		{"domain-template", with(func(c *config.Config) {
			c.Network = network(map[string]string{"domain-template": "{{.Name}}.{{.Domain}}"})
		}), true, false},
		{"tag-template", with(func(c *config.Config) { c.Network = network(map[string]string{"tag-template": "{{.Name}}-{{.Tag}}"}) }), true, false},
		{"scheme", with(func(c *config.Config) { c.Network = network(map[string]string{"default-external-scheme": "https"}) }), true, false},
		{"rollout-duration only", with(func(c *config.Config) { c.Network = network(map[string]string{"rollout-duration": "10"}) }), false, false},
		{"gc", with(func(c *config.Config) { g := *c.GC; g.MinNonActiveRevisions = 1; c.GC = &g }), false, true},
		{"features only", with(func(c *config.Config) { f := *c.Features; f.PodSpecAffinity = config.Enabled; c.Features = &f }), false, false},
		{"tag-header-based-routing", with(func(c *config.Config) {
			f := *c.Features
			f.TagHeaderBasedRouting = config.Enabled
			c.Features = &f
		}), true, false},
	}
	for _, tc := range tests {
		if got := routingChanged(base, tc.new); got != tc.routing {
			t.Errorf("%s: routingChanged = %v", tc.name, got)
		}
		if got := gcChanged(base, tc.new); got != tc.gc {
			t.Errorf("%s: gcChanged = %v", tc.name, got)
		}
	}
}

func TestConfigChangesSource(t *testing.T) {
	var notify func(old, new *config.Config)
	want := reconcile.Request{}
	want.Namespace, want.Name = "ns", "hello"
	src := &configChanges{
		name:     "test",
		register: func(f func(old, new *config.Config)) { notify = f },
		matters:  routingChanged,
		list:     func(context.Context) ([]reconcile.Request, error) { return []reconcile.Request{want}, nil },
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	if err := src.Start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	base := config.Default()
	notify(base, base) // nothing that matters
	if q.Len() != 0 {
		t.Fatalf("queue has %d after an irrelevant change", q.Len())
	}
	next := *base
	next.Domain = &config.Domain{Domains: map[string]config.DomainSelector{"a.test": {}}}
	notify(base, &next)
	if got, _ := q.Get(); got != want || q.Len() != 0 {
		t.Errorf("queue got %v", got)
	}
	if src.String() == "" {
		t.Error("no name")
	}
}
