package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/gateway"
	"github.com/ferry-serving/ferry/internal/reconciler"
	"github.com/ferry-serving/ferry/internal/reconciler/route/resources"
)

// startFerryOnConfigMaps runs the reconcilers on a Store of ferry-system's ConfigMaps
// and the gateway (answering for kwok's pods) in one manager until the test ends, and
// returns the gateway.
func startFerryOnConfigMaps(t *testing.T, ns string) *gateway.Gateway {
	t.Helper()
	setLoggerOnce.Do(func() { ctrl.SetLogger(logr.New(errorSink{})) })
	store := startConfigStore(t)
	mgr := newTestManager(t, rest.CopyConfig(testConfig), ns)
	ctrls, err := reconciler.SetupWithManager(mgr, reconciler.Options{Config: store.Load, OnConfigChange: store.OnChange})
	if err != nil {
		t.Fatal(err)
	}
	gw := gateway.New(gateway.Options{ExternalAddr: "127.0.0.1:0", LocalAddr: "127.0.0.1:0", SimulatedPods: true,
		Registry: prometheus.NewRegistry(), Stats: ctrls.Autoscaler})
	if err := gw.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	runTestManager(t, mgr)
	return gw
}

// revisionAnswering sends GET / with Host host (and, unless tag is empty, the header
// Knative-Serving-Tag: tag) and returns the Revision the answer names, or "" with
// the status and body when it names none.
func revisionAnswering(t *testing.T, listener, host, tag string) (string, string) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+listener+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if tag != "" {
		req.Header.Set(resources.RouteTagHeader, tag)
	}
	res, err := gwClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	// The gateway answers for a simulated pod with "Hello from revision <name> (pod ...".
	const prefix = "Hello from revision "
	if res.StatusCode == http.StatusOK && strings.HasPrefix(string(body), prefix) {
		return strings.Fields(strings.TrimPrefix(string(body), prefix))[0], ""
	}
	return "", res.Status + " " + string(body)
}

// waitRouteServing waits until the Route's KIngress satisfies spec and the Route is
// Ready with it: the gateway has programmed what the KIngress says.
func waitRouteServing(t *testing.T, ns, name string, spec func(*netv1alpha1.Ingress) (bool, string)) *netv1alpha1.Ingress {
	t.Helper()
	ing := &netv1alpha1.Ingress{}
	eventually(t, readyTimeout, func() (bool, string) {
		if !get(t, testClient, ns, name, ing) {
			return false, "no KIngress"
		}
		if ok, why := spec(ing); !ok {
			return false, why
		}
		rt := &v1.Route{}
		get(t, testClient, ns, name, rt)
		ready := rt.Status.GetCondition(v1.RouteConditionReady)
		return ing.IsReady() && ing.Status.ObservedGeneration == ing.Generation && rt.Status.ObservedGeneration == rt.Generation && ready.IsTrue(),
			"KIngress or Route not Ready for the new spec"
	})
	return ing
}

// mainRulePaths is how many paths the KIngress's first rule (the Route's own external
// hosts) has: 1 without tag-header routing, 1 + one per tag with it.
func mainRulePaths(want int) func(*netv1alpha1.Ingress) (bool, string) {
	return func(ing *netv1alpha1.Ingress) (bool, string) {
		if n := len(ing.Spec.Rules[0].HTTP.Paths); n != want {
			return false, fmt.Sprintf("the main rule has %d paths, want %d", n, want)
		}
		return true, ""
	}
}

// TestTagHeaderRouting: config-features tag-header-based-routing, flipped live. Disabled,
// the Knative-Serving-Tag header changes nothing; Enabled, every Route is reconciled,
// its KIngress gains Knative's header paths, and the header picks the tag's Revision on
// the Route's own hosts (both listeners), an unknown tag getting the default split;
// Disabled again, the header is ignored again. Not parallel: it changes ferry-system.
func TestTagHeaderRouting(t *testing.T) {
	setAsideConfigMaps(t)
	ns := testNamespace(t)
	gw := startFerryOnConfigMaps(t, ns)
	dumpOnFailure(t, testClient, ns)
	ctx := context.Background()

	svc := ksvc(ns, "tags", "ferry.test/tags")
	if err := testClient.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, testClient, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	updateService(t, testClient, ns, "tags", func(s *v1.Service) {
		s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", Value: "2"}}
		s.Spec.Traffic = []v1.TrafficTarget{
			{Tag: "current", RevisionName: "tags-00001", Percent: ptr(int64(100))},
			{Tag: "candidate", LatestRevision: ptr(true), Percent: ptr(int64(0))},
		}
	})
	waitCondition(t, testClient, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	if len(svc.Status.Traffic) != 2 || svc.Status.Traffic[1].RevisionName != "tags-00002" {
		t.Fatalf("traffic = %+v, want the candidate tag on tags-00002", svc.Status.Traffic)
	}
	external, local := gw.ExternalAddr(), gw.LocalAddr()
	host, localHost := "tags."+ns+".example.com", "tags."+ns+".svc.cluster.local"
	candidateHost := "candidate-tags." + ns + ".example.com"

	type request struct{ listener, host, tag, want string }
	check := func(phase string, reqs []request) {
		t.Helper()
		for _, r := range reqs {
			// The first request to a Revision at zero is held while a pod starts;
			// it is answered by that Revision all the same.
			if got, why := revisionAnswering(t, r.listener, r.host, r.tag); got != r.want {
				t.Errorf("%s: %s with tag %q: answered by %q %s, want %s", phase, r.host, r.tag, got, why, r.want)
			}
		}
	}
	ignored := []request{
		{external, host, "", "tags-00001"},
		{external, host, "candidate", "tags-00001"},
		{local, localHost, "candidate", "tags-00001"},
		{external, candidateHost, "", "tags-00002"},
	}

	// Disabled (no config-features): one path per rule, no headers.
	ing := waitRouteServing(t, ns, "tags", mainRulePaths(1))
	for _, r := range ing.Spec.Rules {
		if p := r.HTTP.Paths[0]; len(p.Headers) > 0 || len(p.AppendHeaders) > 0 {
			t.Errorf("disabled: rule %v has header paths %+v", r.Hosts, p)
		}
	}
	check("disabled", ignored)

	// Enabled: the KIngress as Knative builds it, and the header routes.
	applyConfigMap(t, config.FeaturesConfigName, map[string]string{"tag-header-based-routing": "Enabled"})
	ing = waitRouteServing(t, ns, "tags", mainRulePaths(3))
	for _, r := range ing.Spec.Rules {
		var got [][2]string // per path: the tag it matches, and the tag header it appends or the default route's
		for _, p := range r.HTTP.Paths {
			got = append(got, [2]string{p.Headers[resources.RouteTagHeader].Exact,
				p.AppendHeaders[resources.RouteTagHeader] + p.AppendHeaders[resources.DefaultRouteHeader]})
		}
		want := [][2]string{{"candidate", ""}, {"current", ""}, {"", "true"}}
		switch r.Hosts[0] {
		case "current-tags." + ns + ".example.com", "current-tags." + ns:
			want = [][2]string{{"", "current"}}
		case candidateHost, "candidate-tags." + ns:
			want = [][2]string{{"", "candidate"}}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("enabled: rule %v paths (match, append) %v, want %v", r.Hosts, got, want)
		}
	}
	check("enabled", []request{
		{external, host, "", "tags-00001"},
		{external, host, "candidate", "tags-00002"},
		{external, host, "current", "tags-00001"},
		{external, host, "unknown", "tags-00001"},
		{local, localHost, "candidate", "tags-00002"},
		{local, "tags." + ns, "candidate", "tags-00002"},
		{external, candidateHost, "", "tags-00002"},
		{external, candidateHost, "current", "tags-00002"},
	})

	// Disabled again: back to one path, and the header is ignored.
	applyConfigMap(t, config.FeaturesConfigName, map[string]string{"tag-header-based-routing": "Disabled"})
	waitRouteServing(t, ns, "tags", mainRulePaths(1))
	check("disabled again", ignored)
}

// TestDomainChangeMovesHostServed: what config-network's domain-template and the
// cluster-local label do to the hosts the gateway serves, live. A new template moves
// the Route's host without a moment when neither the old nor the new one is served
// (the gateway swaps them in one table); labelling the Service cluster-local takes its
// host off the external listener and leaves it served in the cluster. Not parallel: it
// changes ferry-system.
func TestDomainChangeMovesHostServed(t *testing.T) {
	setAsideConfigMaps(t)
	ns := testNamespace(t)
	gw := startFerryOnConfigMaps(t, ns)
	dumpOnFailure(t, testClient, ns)

	svc := ksvc(ns, "moving", "ferry.test/moving")
	if err := testClient.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, testClient, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	external, local := gw.ExternalAddr(), gw.LocalAddr()
	oldHost, newHost := "moving."+ns+".example.com", "moving-"+ns+".example.com"
	if got, why := revisionAnswering(t, external, oldHost, ""); got != "moving-00001" {
		t.Fatalf("%s: answered by %q %s, want moving-00001", oldHost, got, why)
	}

	applyConfigMap(t, config.NetworkConfigName, map[string]string{"domain-template": "{{.Name}}-{{.Namespace}}.{{.Domain}}"})
	// Ask the old host first: once it is gone the new one must already be served.
	eventually(t, readyTimeout, func() (bool, string) {
		old, oldWhy := revisionAnswering(t, external, oldHost, "")
		got, why := revisionAnswering(t, external, newHost, "")
		if old == "" && got == "" {
			t.Fatalf("neither host served: %s: %s; %s: %s", oldHost, oldWhy, newHost, why)
		}
		return old == "" && got == "moving-00001", "old host answered by " + old + ", new host by " + got + " " + why
	})
	waitRouteURL(t, ns, "moving", "http://"+newHost)

	updateService(t, testClient, ns, "moving", func(s *v1.Service) {
		s.Labels = map[string]string{v1.VisibilityLabelKey: v1.VisibilityClusterLocal}
	})
	waitRouteURL(t, ns, "moving", "http://moving."+ns+".svc.cluster.local")
	waitRouteServing(t, ns, "moving", func(ing *netv1alpha1.Ingress) (bool, string) {
		for _, r := range ing.Spec.Rules {
			if r.Visibility != netv1alpha1.IngressVisibilityClusterLocal {
				return false, fmt.Sprintf("an %s rule for %v", r.Visibility, r.Hosts)
			}
		}
		return true, ""
	})
	if got, why := revisionAnswering(t, external, newHost, ""); got != "" || !strings.Contains(why, "404") {
		t.Errorf("%s on the external listener after cluster-local: answered by %q %s, want 404", newHost, got, why)
	}
	for _, host := range []string{"moving." + ns + ".svc.cluster.local", "moving." + ns} {
		if got, why := revisionAnswering(t, local, host, ""); got != "moving-00001" {
			t.Errorf("%s in the cluster: answered by %q %s, want moving-00001", host, got, why)
		}
	}
}
