package config

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"

	"github.com/ferry-serving/ferry/api/duck"
)

// startStore runs a Store on a fake clientset holding objs until the test ends.
func startStore(t *testing.T, objs ...*corev1.ConfigMap) (*Store, *fake.Clientset, *events.FakeRecorder) {
	t.Helper()
	cs := fake.NewClientset()
	for _, o := range objs {
		if _, err := cs.CoreV1().ConfigMaps(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The fake clientset does not replay what happens between the list and the watch:
	// know when the watch is there, so that the tests' updates reach it.
	watching := make(chan struct{})
	var once sync.Once
	cs.PrependWatchReactor("configmaps", func(a clienttesting.Action) (bool, watch.Interface, error) {
		w, err := cs.Tracker().Watch(a.GetResource(), a.GetNamespace())
		once.Do(func() { close(watching) })
		return true, w, err
	})
	rec := events.NewFakeRecorder(100)
	s := NewStore(cs, StoreOptions{Recorder: rec, Logger: logr.Discard()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	if !s.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("not synced")
	}
	select {
	case <-watching:
	case <-time.After(10 * time.Second):
		t.Fatal("no watch")
	}
	return s, cs, rec
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func update(t *testing.T, cs *fake.Clientset, c *corev1.ConfigMap) {
	t.Helper()
	if _, err := cs.CoreV1().ConfigMaps(c.Namespace).Update(context.Background(), c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestStoreNoConfigMapsIsDefaults(t *testing.T) {
	s, _, rec := startStore(t)
	if got := s.Load(); got.Domain.LookupDomainForLabels(nil) != DefaultDomainName || *got.GC != *DefaultGC() ||
		got.Deployment.ProgressDeadline != 600*time.Second || *got.Features != *DefaultFeatures() || *got.Autoscaler != *DefaultAutoscaler() {
		t.Errorf("Load() = %+v", got)
	}
	if len(rec.Events) != 0 {
		t.Errorf("events: %v", <-rec.Events)
	}
}

func TestStoreLoadsAtStart(t *testing.T) {
	s, _, _ := startStore(t,
		cm(DomainConfigName, map[string]string{"ferry.test": ""}),
		cm(GCConfigName, map[string]string{"min-non-active-revisions": "3"}),
		cm("unrelated", map[string]string{"x": "y"}))
	c := s.Load()
	if c.Domain.LookupDomainForLabels(nil) != "ferry.test" || c.GC.MinNonActiveRevisions != 3 {
		t.Errorf("Load() = %+v %+v", c.Domain, c.GC)
	}
}

func TestStoreBadValueKeepsTheLastGood(t *testing.T) {
	gc := cm(GCConfigName, map[string]string{"min-non-active-revisions": "3"})
	s, cs, rec := startStore(t, gc)
	var mu sync.Mutex
	var changes []*Config
	s.OnChange(func(old, new *Config) {
		mu.Lock()
		defer mu.Unlock()
		if old == new {
			t.Error("OnChange without a change")
		}
		changes = append(changes, new)
	})
	before := s.Load()

	bad := gc.DeepCopy()
	bad.Data["min-non-active-revisions"] = "lots"
	update(t, cs, bad)
	var ev string
	select {
	case ev = <-rec.Events:
	case <-time.After(10 * time.Second):
		t.Fatal("no Event")
	}
	if !strings.Contains(ev, "Warning "+duck.ReasonInvalidConfig) || !strings.Contains(ev, "min-non-active-revisions") || !strings.Contains(ev, GCConfigName) {
		t.Errorf("event %q", ev)
	}
	if s.Load() != before || s.Load().GC.MinNonActiveRevisions != 3 {
		t.Errorf("the bad value replaced the config: %+v", s.Load().GC)
	}

	// A good value again, in another ConfigMap and in this one.
	update(t, cs, cm(GCConfigName, map[string]string{"min-non-active-revisions": "4"}))
	waitFor(t, "min 4", func() bool { return s.Load().GC.MinNonActiveRevisions == 4 })
	if s.Load().Domain != before.Domain {
		t.Error("an unchanged part was replaced")
	}
	mu.Lock()
	if len(changes) != 1 {
		t.Errorf("%d changes, want 1", len(changes))
	}
	mu.Unlock()

	// Deleted: the defaults.
	if err := cs.CoreV1().ConfigMaps(SystemNamespace).Delete(context.Background(), GCConfigName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "defaults", func() bool { return *s.Load().GC == *DefaultGC() })
}

func TestStoreBadValueAtStartIsTheDefaults(t *testing.T) {
	s, _, rec := startStore(t, cm(NetworkConfigName, map[string]string{"domain-template": "{{.Nope}}"}),
		cm(FeaturesConfigName, map[string]string{"kubernetes.podspec-affinity": "enabled"}))
	if s.Load().Network.DomainTemplate != DefaultDomainTemplate || s.Load().Features.PodSpecAffinity != Enabled {
		t.Errorf("Load() = %+v %+v", s.Load().Network, s.Load().Features)
	}
	select {
	case ev := <-rec.Events:
		if !strings.Contains(ev, "domain-template") {
			t.Errorf("event %q", ev)
		}
	case <-time.After(10 * time.Second):
		t.Error("no Event")
	}
}

func TestOverridesApply(t *testing.T) {
	c := Default()
	c.Deployment = &Deployment{ProgressDeadline: 20 * time.Second, DigestResolutionTimeout: time.Second}
	got := Overrides{Domain: "flag.test", ProgressDeadline: time.Minute, GC: &GC{MaxNonActiveRevisions: GCDisabled}}.Apply(c)
	if d := got.Domain.LookupDomainForLabels(nil); d != "flag.test" {
		t.Errorf("domain = %q", d)
	}
	if d := got.Deployment; d.ProgressDeadline != time.Minute || d.DigestResolutionTimeout != time.Second {
		t.Errorf("deployment = %+v, want the flag's progress deadline and the rest of config-deployment", d)
	}
	if *got.GC != (GC{MaxNonActiveRevisions: GCDisabled}) || got.Network != c.Network {
		t.Errorf("gc = %+v, network shared: %v", got.GC, got.Network == c.Network)
	}
	if c.Deployment.ProgressDeadline != 20*time.Second || c.Domain.LookupDomainForLabels(nil) != DefaultDomainName {
		t.Error("Apply changed its input")
	}
	if (Overrides{}).Apply(c) != c {
		t.Error("no overrides: not the same snapshot")
	}
}

func TestOverridesWrap(t *testing.T) {
	c := Default()
	load := func() *Config { return c }
	if got := (Overrides{}).Wrap(load)(); got != c {
		t.Error("no overrides: not the same snapshot")
	}
	w := Overrides{Domain: "x.test"}.Wrap(load)
	a, b := w(), w()
	if a != b || a.Domain.LookupDomainForLabels(nil) != "x.test" || a.Network != c.Network {
		t.Errorf("Wrap: %p %p %+v", a, b, a.Domain)
	}
	if c.Domain.LookupDomainForLabels(nil) != DefaultDomainName {
		t.Error("Wrap changed its input")
	}
}

func TestStoreAutoscaler(t *testing.T) {
	as := cm(AutoscalerConfigName, map[string]string{"stable-window": "30s", "allow-zero-initial-scale": "true", "initial-scale": "0"})
	s, cs, rec := startStore(t, as)
	before := s.Load()
	if before.Autoscaler.StableWindow != 30*time.Second || before.Autoscaler.InitialScale != 0 || !before.Autoscaler.AllowZeroInitialScale {
		t.Fatalf("Load().Autoscaler = %+v", before.Autoscaler)
	}

	// A bad value: the last good config-autoscaler stays, and the Event names the key.
	bad := as.DeepCopy()
	bad.Data["stable-window"] = "5s"
	update(t, cs, bad)
	select {
	case ev := <-rec.Events:
		if !strings.Contains(ev, "Warning "+duck.ReasonInvalidConfig) || !strings.Contains(ev, "stable-window") || !strings.Contains(ev, AutoscalerConfigName) {
			t.Errorf("event %q", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no Event")
	}
	if s.Load() != before || s.Load().Autoscaler.StableWindow != 30*time.Second {
		t.Errorf("the bad value replaced the config: %+v", s.Load().Autoscaler)
	}

	update(t, cs, cm(AutoscalerConfigName, map[string]string{"max-scale": "7"}))
	waitFor(t, "max-scale 7", func() bool { return s.Load().Autoscaler.MaxScale == 7 })
	if got := s.Load().Autoscaler; got.StableWindow != time.Minute || got.InitialScale != 1 {
		t.Errorf("keys left out are not back to their defaults: %+v", got)
	}

	if err := cs.CoreV1().ConfigMaps(SystemNamespace).Delete(context.Background(), AutoscalerConfigName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "defaults", func() bool { return *s.Load().Autoscaler == *DefaultAutoscaler() })
}

// A key Ferry takes without acting on is reported on the ConfigMap, naming the key and
// why; Knative's defaults for those keys are not.
func TestStoreReportsKeysWithNoEffect(t *testing.T) {
	as := cm(AutoscalerConfigName, map[string]string{"target-burst-capacity": "211", "stable-window": "30s"})
	s, cs, rec := startStore(t, as)
	changed := as.DeepCopy()
	changed.Data["activator-capacity"] = "50"
	update(t, cs, changed)
	var ev string
	select {
	case ev = <-rec.Events:
	case <-time.After(10 * time.Second):
		t.Fatal("no Event")
	}
	if !strings.Contains(ev, "Warning "+duck.ReasonNoEffect) || !strings.Contains(ev, `activator-capacity: "50" has no effect`) ||
		strings.Contains(ev, "target-burst-capacity") {
		t.Errorf("event %q", ev)
	}
	waitFor(t, "the new config", func() bool { return s.Load().Autoscaler.ActivatorCapacity == 50 })
	select {
	case ev := <-rec.Events:
		t.Errorf("a second event: %q", ev)
	default:
	}
}

func TestNoEffect(t *testing.T) {
	for _, tc := range []struct {
		name string
		data map[string]string
		want []string
	}{
		{AutoscalerConfigName, map[string]string{"target-burst-capacity": "0", "activator-capacity": "100", "stable-window": "6s"},
			[]string{`target-burst-capacity: "0" has no effect: the gateway is always in the request path, as with -1 in Knative`}},
		{DeploymentConfigName, map[string]string{"queue-sidecar-image": "gcr.io/q", "queue-sidecar-cpu-request": "25m", "progress-deadline": "60s"},
			[]string{`queue-sidecar-cpu-request: "25m" has no effect: Ferry runs no queue-proxy sidecar`}},
		{FeaturesConfigName, map[string]string{"queueproxy.mount-podinfo": "Disabled", "multi-container": "enabled"}, nil},
		{FeaturesConfigName, map[string]string{"queueproxy.mount-podinfo": "enabled"},
			[]string{`queueproxy.mount-podinfo: "enabled" has no effect: Ferry runs no queue-proxy sidecar`}},
		{NetworkConfigName, map[string]string{"internal-encryption": "true", "system-internal-tls": "disabled", "rollout-duration": "120"},
			[]string{`internal-encryption: "true" has no effect: Ferry has no mesh or internal-TLS mode`}},
		{GCConfigName, map[string]string{"min-non-active-revisions": "3"}, nil},
	} {
		if got := NoEffect(tc.name, tc.data); !slices.Equal(got, tc.want) {
			t.Errorf("NoEffect(%s, %v) =\n%q\nwant\n%q", tc.name, tc.data, got, tc.want)
		}
	}
}
