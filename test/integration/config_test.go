package integration

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/config/configmaps"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/reconciler"
)

// TestConfigMapsLive runs the reconcilers on a config.Store of the ConfigMaps in
// ferry-system and changes them under running Routes. ferry-system is cluster-wide
// state: the test does not run in parallel (no t.Parallel, so no other test runs while
// it does), takes away any of the six ConfigMaps for its duration and puts them back.
func TestConfigMapsLive(t *testing.T) {
	ctx := context.Background()
	c := testClient
	setAsideConfigMaps(t)
	store := startConfigStore(t)
	ns := testNamespace(t)
	startFerry(t, ns, reconciler.Options{Config: store.Load, OnConfigChange: store.OnChange})
	dumpOnFailure(t, c, ns)

	hello := ksvc(ns, "hello", "ferry.test/hello")
	special := ksvc(ns, "special", "ferry.test/special")
	special.Labels = map[string]string{"app": "special"}
	for _, s := range []*v1.Service{hello, special} {
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	waitCondition(t, c, hello, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	waitCondition(t, c, special, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	// No ConfigMap: Ferry's default domain.
	waitRouteURL(t, ns, "hello", "http://hello."+ns+".example.com")

	// config-domain: a catch-all and a label selector; the Routes that exist move.
	applyConfigMap(t, config.DomainConfigName, map[string]string{
		"ferry.test":   "",
		"special.test": "selector:\n  app: special\n",
	})
	waitRouteURL(t, ns, "hello", "http://hello."+ns+".ferry.test")
	waitRouteURL(t, ns, "special", "http://special."+ns+".special.test")
	waitIngressHost(t, ns, "hello", "hello."+ns+".ferry.test")

	// config-network: domain-template and scheme.
	applyConfigMap(t, config.NetworkConfigName, map[string]string{
		"domain-template":         "{{.Name}}-{{.Namespace}}.{{.Domain}}",
		"default-external-scheme": "https",
	})
	waitRouteURL(t, ns, "hello", "https://hello-"+ns+".ferry.test")
	waitIngressHost(t, ns, "hello", "hello-"+ns+".ferry.test")
	waitCondition(t, c, hello, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)

	// A template that loads but gives no valid host: ErrorConfig, the URL stays.
	applyConfigMap(t, config.NetworkConfigName, map[string]string{
		"domain-template":         "{{.Name}}-{{.Namespace}}.X{{.Domain}}",
		"default-external-scheme": "https",
	})
	rt := &v1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"}}
	waitCondition(t, c, rt, v1.RouteConditionAllTrafficAssigned, corev1.ConditionFalse, v1.ReasonErrorConfig, readyTimeout)
	if rt.Status.URL != "https://hello-"+ns+".ferry.test" {
		t.Errorf("URL after a bad template = %q", rt.Status.URL)
	}
	waitIngressHost(t, ns, "hello", "hello-"+ns+".ferry.test")
	// A good template again: the Routes recover.
	applyConfigMap(t, config.NetworkConfigName, map[string]string{"domain-template": "{{.Name}}.{{.Namespace}}.{{.Domain}}"})
	waitCondition(t, c, rt, v1.RouteConditionAllTrafficAssigned, corev1.ConditionTrue, "", readyTimeout)
	waitRouteURL(t, ns, "hello", "http://hello."+ns+".ferry.test")

	// A bad config-gc value: a Warning Event on the ConfigMap, the last good value stays.
	applyConfigMap(t, config.GCConfigName, map[string]string{"min-non-active-revisions": "5"})
	eventually(t, 10*time.Second, func() (bool, string) {
		return store.Load().GC.MinNonActiveRevisions == 5, "config-gc not loaded"
	})
	applyConfigMap(t, config.GCConfigName, map[string]string{"min-non-active-revisions": "five"})
	waitConfigEvent(t, config.GCConfigName, "min-non-active-revisions")
	if got := store.Load().GC.MinNonActiveRevisions; got != 5 {
		t.Errorf("min-non-active-revisions after a bad value = %d, want the last good 5", got)
	}

	// config-gc "delete at once": the change alone runs the collection again.
	for _, image := range []string{"ferry.test/special:2", "ferry.test/special:3"} {
		cfgSetImage(t, special, image)
		waitCondition(t, c, special, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	}
	if n := len(cfgRevisions(t, ns, "special")); n != 3 {
		t.Fatalf("%d Revisions before the collection, want 3", n)
	}
	applyConfigMap(t, config.GCConfigName, map[string]string{"retain-since-create-time": "disabled",
		"retain-since-last-active-time": "disabled", "min-non-active-revisions": "0", "max-non-active-revisions": "0"})
	eventually(t, readyTimeout, func() (bool, string) {
		revs := cfgRevisions(t, ns, "special")
		return len(revs) == 1 && revs[0] == "special-00003", fmt.Sprintf("Revisions %v, want only special-00003", revs)
	})

	// Deleted ConfigMaps: the defaults again.
	for _, name := range []string{config.DomainConfigName, config.NetworkConfigName, config.GCConfigName} {
		deleteConfigMap(t, name)
	}
	waitRouteURL(t, ns, "hello", "http://hello."+ns+".example.com")
	waitRouteURL(t, ns, "special", "http://special."+ns+".example.com")
	eventually(t, readyTimeout, func() (bool, string) {
		svc := &v1.Service{}
		get(t, c, ns, "hello", svc)
		return svc.Status.URL == "http://hello."+ns+".example.com" && svc.IsReady(), "Service URL " + svc.Status.URL
	})
	eventually(t, 10*time.Second, func() (bool, string) {
		return *store.Load().GC == *config.DefaultGC(), "config-gc still in force"
	})
}

// TestShippedConfigMapsCreated: what ferry up does before Ferry starts. The ConfigMaps
// missing from ferry-system are created with their _example blocks, the one the user
// has is left alone (also on a second run, as on a restart), and the Store loads them
// all. Not parallel, as TestConfigMapsLive.
func TestShippedConfigMapsCreated(t *testing.T) {
	setAsideConfigMaps(t)
	applyConfigMap(t, config.DomainConfigName, map[string]string{"mine.test": ""})
	cs := kubernetes.NewForConfigOrDie(testConfig)
	for range 2 {
		if err := configmaps.CreateMissing(context.Background(), cs.CoreV1()); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range config.Names {
		cm := &corev1.ConfigMap{}
		if !get(t, testClient, config.SystemNamespace, name, cm) {
			t.Errorf("no %s", name)
			continue
		}
		_, mine := cm.Data["mine.test"]
		switch {
		case name == config.DomainConfigName && (!mine || len(cm.Data) != 1):
			t.Errorf("the user's %s was changed: %v", name, cm.Data)
		case name != config.DomainConfigName && cm.Data[config.ExampleKey] == "":
			t.Errorf("%s has no %s", name, config.ExampleKey)
		}
	}
	got := startConfigStore(t).Load()
	if _, ok := got.Domain.Domains["mine.test"]; !ok {
		t.Errorf("domains %v, want the user's mine.test", got.Domain.Domains)
	}
	want := *config.Default()
	want.Domain = got.Domain
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("loaded %+v, want the defaults %+v", *got, want)
	}
}

// setAsideConfigMaps makes sure ferry-system exists, takes away the six ConfigMaps for
// the test, and puts back what was there when it ends.
func setAsideConfigMaps(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: config.SystemNamespace}}
	if err := testClient.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var saved []*corev1.ConfigMap
	for _, name := range config.Names {
		cm := &corev1.ConfigMap{}
		if get(t, testClient, config.SystemNamespace, name, cm) {
			saved = append(saved, cm)
			deleteConfigMap(t, name)
		}
	}
	t.Cleanup(func() {
		for _, name := range config.Names {
			deleteConfigMap(t, name)
		}
		for _, cm := range saved {
			cm.ResourceVersion, cm.UID, cm.CreationTimestamp, cm.ManagedFields = "", "", metav1.Time{}, nil
			if err := testClient.Create(ctx, cm); err != nil {
				t.Errorf("putting back %s: %v", cm.Name, err)
			}
		}
	})
}

// startConfigStore runs a Store of ferry-system's ConfigMaps, recording its Events
// through the API server, until the test ends.
func startConfigStore(t *testing.T) *config.Store {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(testConfig)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	ctx, cancel := context.WithCancel(context.Background())
	broadcaster.StartRecordingToSink(ctx.Done())
	store := config.NewStore(cs, config.StoreOptions{Recorder: broadcaster.NewRecorder(testScheme, "ferry-config"), Logger: logr.Discard()})
	done := make(chan error, 1)
	go func() { done <- store.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("config store: %v", err)
		}
		broadcaster.Shutdown()
	})
	if !store.WaitForSync(ctx) {
		t.Fatal("config store did not sync")
	}
	return store
}

// applyConfigMap creates or replaces the data of a ConfigMap in ferry-system.
func applyConfigMap(t *testing.T, name string, data map[string]string) {
	t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{}
	if get(t, testClient, config.SystemNamespace, name, cm) {
		cm.Data = data
		if err := testClient.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		return
	}
	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: config.SystemNamespace, Name: name}, Data: data}
	if err := testClient.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
}

func deleteConfigMap(t *testing.T, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: config.SystemNamespace, Name: name}}
	if err := testClient.Delete(context.Background(), cm); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// waitRouteURL waits until the Route's status.url is url.
func waitRouteURL(t *testing.T, ns, name, url string) {
	t.Helper()
	eventually(t, readyTimeout, func() (bool, string) {
		rt := &v1.Route{}
		if !get(t, testClient, ns, name, rt) {
			return false, "no Route " + name
		}
		return rt.Status.URL == url, "Route " + name + " url " + rt.Status.URL + ", want " + url
	})
}

// waitIngressHost waits until the KIngress's external rule serves host.
func waitIngressHost(t *testing.T, ns, name, host string) {
	t.Helper()
	eventually(t, readyTimeout, func() (bool, string) {
		ing := &netv1alpha1.Ingress{}
		if !get(t, testClient, ns, name, ing) {
			return false, "no KIngress " + name
		}
		var hosts []string
		for _, r := range ing.Spec.Rules {
			if r.Visibility == netv1alpha1.IngressVisibilityExternalIP {
				hosts = append(hosts, r.Hosts...)
			}
		}
		return len(hosts) > 0 && hosts[0] == host, "KIngress external hosts " + strings.Join(hosts, ",") + ", want " + host
	})
}

// waitConfigEvent waits for the Store's Warning Event on a ConfigMap in ferry-system
// whose message names key.
func waitConfigEvent(t *testing.T, name, key string) {
	t.Helper()
	eventually(t, 20*time.Second, func() (bool, string) {
		list := &corev1.EventList{}
		if err := testClient.List(context.Background(), list, client.InNamespace(config.SystemNamespace)); err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "ConfigMap" && e.InvolvedObject.Name == name && e.Type == corev1.EventTypeWarning &&
				e.Reason == duck.ReasonInvalidConfig && strings.Contains(e.Message, key) {
				return true, ""
			}
		}
		return false, "no InvalidConfig Event on " + name
	})
}

// cfgSetImage changes a Service's image, retrying on conflicts.
func cfgSetImage(t *testing.T, svc *v1.Service, image string) {
	t.Helper()
	eventually(t, 10*time.Second, func() (bool, string) {
		get(t, testClient, svc.Namespace, svc.Name, svc)
		svc.Spec.Template.Spec.Containers[0].Image = image
		err := testClient.Update(context.Background(), svc)
		if err != nil && !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
		return err == nil, fmt.Sprint(err)
	})
}

// cfgRevisions lists the names of a Configuration's Revisions that are not being deleted.
func cfgRevisions(t *testing.T, ns, cfg string) []string {
	t.Helper()
	list := &v1.RevisionList{}
	if err := testClient.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{v1.ConfigurationLabelKey: cfg}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range list.Items {
		if r.DeletionTimestamp == nil {
			names = append(names, r.Name)
		}
	}
	return names
}
