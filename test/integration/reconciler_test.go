package integration

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/reconciler"
)

const readyTimeout = 60 * time.Second

func ptr[T any](v T) *T { return &v }

// updateService applies mutate to the Service, retrying on conflicts.
func updateService(t *testing.T, c client.Client, ns, name string, mutate func(*v1.Service)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := &v1.Service{}
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
			return err
		}
		mutate(s)
		return c.Update(context.Background(), s)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func condition(s *duck.Status, typ duck.ConditionType) duck.Condition {
	if c := s.GetCondition(typ); c != nil {
		return *c
	}
	return duck.Condition{Type: typ}
}

// TestServiceLifecycle follows one Service as a Knative user would: created and Ready
// with the status Knative shows, a new template rolled out, and two broken templates
// that leave traffic on the last good Revision.
func TestServiceLifecycle(t *testing.T) {
	c := testClient
	ns := testNamespace(t)
	f := startFerry(t, ns, reconciler.Options{})
	dumpOnFailure(t, c, ns)
	ctx := context.Background()

	svc := ksvc(ns, "hello", "ferry.test/hello")
	svc.Labels = map[string]string{"team": "a"}
	svc.Annotations = map[string]string{"note": "x"}
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)

	// The status a Knative user sees.
	if svc.Status.URL != "http://hello."+ns+".example.com" ||
		svc.Status.Address == nil || svc.Status.Address.URL != "http://hello."+ns+".svc.cluster.local" ||
		svc.Status.LatestCreatedRevisionName != "hello-00001" || svc.Status.LatestReadyRevisionName != "hello-00001" {
		t.Errorf("status fields = %+v", svc.Status)
	}
	wantTraffic := []v1.TrafficTarget{{RevisionName: "hello-00001", LatestRevision: ptr(true), Percent: ptr(int64(100))}}
	if !reflect.DeepEqual(svc.Status.Traffic, wantTraffic) {
		t.Errorf("status.traffic = %+v", svc.Status.Traffic)
	}
	for _, typ := range []duck.ConditionType{v1.ServiceConditionReady, v1.ServiceConditionConfigurationsReady, v1.ServiceConditionRoutesReady} {
		if cond := condition(&svc.Status.Status, typ); cond.Status != corev1.ConditionTrue || cond.Reason != "" || cond.LastTransitionTime.IsZero() {
			t.Errorf("%s = %+v", typ, cond)
		}
	}
	if n := len(svc.Status.Conditions); n != 3 {
		t.Errorf("%d conditions, want 3: %+v", n, svc.Status.Conditions)
	}

	// Children, their owners and labels.
	cfg, rt, rev := &v1.Configuration{}, &v1.Route{}, &v1.Revision{}
	if !get(t, c, ns, "hello", cfg) || !get(t, c, ns, "hello", rt) || !get(t, c, ns, "hello-00001", rev) {
		t.Fatal("a child is missing")
	}
	for _, o := range []client.Object{cfg, rt} {
		if !metav1.IsControlledBy(o, svc) || o.GetLabels()[v1.ServiceLabelKey] != "hello" || o.GetLabels()["team"] != "a" || o.GetAnnotations()["note"] != "x" {
			t.Errorf("%T metadata = %+v", o, o)
		}
	}
	for k, want := range map[string]string{
		v1.ConfigurationLabelKey: "hello", v1.ConfigurationGenerationLabelKey: "1", v1.ConfigurationUIDLabelKey: string(cfg.UID),
		v1.ServiceLabelKey: "hello", v1.ServiceUIDLabelKey: string(svc.UID),
	} {
		if rev.Labels[k] != want {
			t.Errorf("revision label %s = %q, want %q", k, rev.Labels[k], want)
		}
	}
	if !metav1.IsControlledBy(rev, cfg) || rev.Spec.Containers[0].Name != "user-container" || *rev.Spec.TimeoutSeconds != 300 {
		t.Errorf("revision = %+v", rev)
	}
	if *rev.Status.ActualReplicas != 1 || *rev.Status.DesiredReplicas != 1 {
		t.Errorf("revision replicas = %v/%v", *rev.Status.ActualReplicas, *rev.Status.DesiredReplicas)
	}
	dep, ing, placeholder := &appsv1.Deployment{}, &netv1alpha1.Ingress{}, &corev1.Service{}
	if !get(t, c, ns, "hello-00001-deployment", dep) || !get(t, c, ns, "hello", ing) || !get(t, c, ns, "hello", placeholder) {
		t.Fatal("a grandchild is missing")
	}
	// The gateway follows the Revision's pods itself: no Kubernetes Service per
	// Revision, and so no EndpointSlices for kube-controller-manager to keep.
	if get(t, c, ns, "hello-00001", &corev1.Service{}) {
		t.Error("the Revision has a Kubernetes Service")
	}
	if split := ing.Spec.Rules[0].HTTP.Paths[0].Splits[0]; split.ServiceName != "hello-00001" || split.ServicePort.IntValue() != 80 {
		t.Errorf("kingress split = %+v, want the Revision hello-00001, port 80", split.IngressBackend)
	}
	if ing.Annotations[netv1alpha1.IngressClassAnnotationKey] != "ferry.ingress.networking.knative.dev" || ing.Spec.Rules[0].Hosts[0] != "hello."+ns+".example.com" {
		t.Errorf("kingress = %+v", ing)
	}
	t.Logf("API writes until Ready: %d: %v", f.writes.in(ns), f.writes.kinds(ns))

	// A new template: -00002, and traffic moves once it is Ready.
	updateService(t, c, ns, "hello", func(s *v1.Service) {
		s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", Value: "2"}}
	})
	waitCondition(t, c, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	if svc.Status.LatestReadyRevisionName != "hello-00002" || svc.Status.Traffic[0].RevisionName != "hello-00002" {
		t.Errorf("after the update: %+v", svc.Status)
	}

	// Broken templates: the new Revision fails with the kubelet's reason, the
	// Configuration says RevisionFailed, and traffic stays on -00002.
	for _, tc := range []struct {
		image, rev, reason string
	}{
		{"ferry.test/image-pull-error", "hello-00003", v1.ReasonContainerMissing},
		{"ferry.test/exit-1", "hello-00004", v1.ExitCodeReason(1)},
	} {
		updateService(t, c, ns, "hello", func(s *v1.Service) { s.Spec.Template.Spec.Containers[0].Image = tc.image })
		bad := &v1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.rev}}
		waitCondition(t, c, bad, v1.RevisionConditionContainerHealthy, corev1.ConditionFalse, tc.reason, readyTimeout)
		if cond := condition(&bad.Status.Status, v1.RevisionConditionReady); cond.Status != corev1.ConditionFalse || cond.Reason != tc.reason {
			t.Errorf("%s Ready = %+v", tc.rev, cond)
		}
		waitCondition(t, c, svc, v1.ServiceConditionConfigurationsReady, corev1.ConditionFalse, v1.ReasonRevisionFailed, readyTimeout)
		if svc.Status.LatestCreatedRevisionName != tc.rev || svc.Status.LatestReadyRevisionName != "hello-00002" ||
			svc.Status.Traffic[0].RevisionName != "hello-00002" || condition(&svc.Status.Status, v1.ServiceConditionReady).Status != corev1.ConditionFalse {
			t.Errorf("with %s failing: %+v", tc.rev, svc.Status)
		}
		waitCondition(t, c, rt, v1.RouteConditionReady, corev1.ConditionTrue, "", readyTimeout)
		if rt.Status.Traffic[0].RevisionName != "hello-00002" {
			t.Errorf("route traffic = %+v", rt.Status.Traffic)
		}
	}
	waitEvent(t, c, ns, "hello", v1.ReasonRevisionFailed)
}

// waitEvent waits for a Warning Event about the named object with the given reason.
func waitEvent(t *testing.T, c client.Client, ns, name, reason string) {
	t.Helper()
	eventually(t, 20*time.Second, func() (bool, string) {
		list := &eventsv1.EventList{}
		if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no %s event for %s among %d", reason, name, len(list.Items))
	})
}

// TestRouteBeforeConfiguration: a Route naming a Configuration that does not exist
// yet says so, and becomes Ready when the Configuration appears, woken by the tracker.
func TestRouteBeforeConfiguration(t *testing.T) {
	c := testClient
	ns := testNamespace(t)
	f := startFerry(t, ns, reconciler.Options{})
	dumpOnFailure(t, c, ns)
	ctx := context.Background()

	rt := &v1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "front"}}
	rt.Spec.Traffic = []v1.TrafficTarget{{ConfigurationName: "late", Percent: ptr(int64(100))}}
	if err := c.Create(ctx, rt); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, rt, v1.RouteConditionAllTrafficAssigned, corev1.ConditionFalse, v1.ReasonConfigurationMissing, readyTimeout)
	if got := condition(&rt.Status.Status, v1.RouteConditionAllTrafficAssigned).Message; got != `Configuration "late" referenced in traffic not found.` {
		t.Errorf("message = %q", got)
	}

	cfg := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late"}}
	cfg.Spec.Template.Spec.Containers = []corev1.Container{{Image: "ferry.test/hello"}}
	if err := c.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, rt, v1.RouteConditionReady, corev1.ConditionTrue, "", readyTimeout)
	if len(rt.Status.Traffic) != 1 || rt.Status.Traffic[0].RevisionName != "late-00001" || rt.Status.URL != "http://front."+ns+".example.com" {
		t.Errorf("route status = %+v", rt.Status)
	}
	if obs := f.ctrls.Tracker.GetObservers(cfg); len(obs) != 1 || obs[0].Name != "front" {
		t.Errorf("observers of the Configuration = %v", obs)
	}
}

// TestTrafficSplit: tags, a pinned Revision and a split, then a cluster-local Service.
func TestTrafficSplit(t *testing.T) {
	c := testClient
	ns := testNamespace(t)
	startFerry(t, ns, reconciler.Options{Overrides: config.Overrides{Domain: "ferry.test"}})
	dumpOnFailure(t, c, ns)
	ctx := context.Background()

	svc := ksvc(ns, "shop", "ferry.test/shop")
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	updateService(t, c, ns, "shop", func(s *v1.Service) {
		s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", Value: "2"}}
		s.Spec.Traffic = []v1.TrafficTarget{
			{Tag: "current", LatestRevision: ptr(true), Percent: ptr(int64(75))},
			{Tag: "old", RevisionName: "shop-00001", Percent: ptr(int64(25))},
		}
	})
	waitCondition(t, c, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	want := []v1.TrafficTarget{
		{Tag: "current", RevisionName: "shop-00002", LatestRevision: ptr(true), Percent: ptr(int64(75)), URL: "http://current-shop." + ns + ".ferry.test"},
		{Tag: "old", RevisionName: "shop-00001", LatestRevision: ptr(false), Percent: ptr(int64(25)), URL: "http://old-shop." + ns + ".ferry.test"},
	}
	if !reflect.DeepEqual(svc.Status.Traffic, want) {
		t.Errorf("traffic:\n got %+v\nwant %+v", svc.Status.Traffic, want)
	}
	ing := &netv1alpha1.Ingress{}
	get(t, c, ns, "shop", ing)
	var hosts []string
	for _, r := range ing.Spec.Rules {
		hosts = append(hosts, r.Hosts...)
	}
	wantHosts := []string{
		"shop." + ns + ".ferry.test", "shop." + ns, "shop." + ns + ".svc", "shop." + ns + ".svc.cluster.local",
		"current-shop." + ns + ".ferry.test", "current-shop." + ns, "current-shop." + ns + ".svc", "current-shop." + ns + ".svc.cluster.local",
		"old-shop." + ns + ".ferry.test", "old-shop." + ns, "old-shop." + ns + ".svc", "old-shop." + ns + ".svc.cluster.local",
	}
	if !reflect.DeepEqual(hosts, wantHosts) {
		t.Errorf("hosts:\n got %v\nwant %v", hosts, wantHosts)
	}
	splits := ing.Spec.Rules[0].HTTP.Paths[0].Splits
	if len(splits) != 2 || splits[0].ServiceName != "shop-00002" || splits[0].Percent != 75 || splits[1].ServiceName != "shop-00001" || splits[1].Percent != 25 ||
		splits[0].AppendHeaders["Knative-Serving-Revision"] != "shop-00002" || splits[0].AppendHeaders["Knative-Serving-Namespace"] != ns {
		t.Errorf("splits = %+v", splits)
	}

	local := ksvc(ns, "internal", "ferry.test/internal")
	local.Labels = map[string]string{v1.VisibilityLabelKey: v1.VisibilityClusterLocal}
	if err := c.Create(ctx, local); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, local, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	if local.Status.URL != "http://internal."+ns+".svc.cluster.local" {
		t.Errorf("cluster-local URL = %q", local.Status.URL)
	}
	get(t, c, ns, "internal", ing)
	for _, r := range ing.Spec.Rules {
		if r.Visibility != netv1alpha1.IngressVisibilityClusterLocal {
			t.Errorf("cluster-local Service has a %s rule for %v", r.Visibility, r.Hosts)
		}
	}
}

// TestDeleteService: the garbage collector removes every child, and the tracker
// forgets the Route.
func TestDeleteService(t *testing.T) {
	c := testClient
	ns := testNamespace(t)
	f := startFerry(t, ns, reconciler.Options{})
	dumpOnFailure(t, c, ns)
	ctx := context.Background()

	svc := ksvc(ns, "gone", "ferry.test/gone")
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	cfg := &v1.Configuration{}
	get(t, c, ns, "gone", cfg)
	if len(f.ctrls.Tracker.GetObservers(cfg)) != 1 {
		t.Fatalf("the Route does not track its Configuration")
	}
	if err := c.Delete(ctx, svc, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	children := []struct {
		name string
		obj  client.Object
	}{
		{"gone", &v1.Configuration{}}, {"gone", &v1.Route{}}, {"gone-00001", &v1.Revision{}},
		{"gone-00001-deployment", &appsv1.Deployment{}},
		{"gone", &netv1alpha1.Ingress{}}, {"gone", &corev1.Service{}},
	}
	for _, ch := range children {
		eventually(t, readyTimeout, func() (bool, string) {
			return !get(t, c, ns, ch.name, ch.obj), fmt.Sprintf("%T %s still exists", ch.obj, ch.name)
		})
	}
	rev := &v1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone-00001"}}
	eventually(t, 10*time.Second, func() (bool, string) {
		obs := append(f.ctrls.Tracker.GetObservers(cfg), f.ctrls.Tracker.GetObservers(rev)...)
		return len(obs) == 0, fmt.Sprintf("tracker still has observers %v", obs)
	})
}

// TestNotOwned: a Service whose Configuration name is taken reports it, records an
// Event, and leaves the other object alone.
func TestNotOwned(t *testing.T) {
	c := testClient
	ns := testNamespace(t)
	startFerry(t, ns, reconciler.Options{})
	dumpOnFailure(t, c, ns)
	ctx := context.Background()

	squatter := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"}}
	squatter.Spec.Template.Spec.Containers = []corev1.Container{{Image: "ferry.test/other"}}
	if err := c.Create(ctx, squatter); err != nil {
		t.Fatal(err)
	}
	svc := ksvc(ns, "taken", "ferry.test/mine")
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, svc, v1.ServiceConditionConfigurationsReady, corev1.ConditionFalse, duck.ReasonNotOwned, readyTimeout)
	if got := condition(&svc.Status.Status, v1.ServiceConditionReady); got.Status != corev1.ConditionFalse || got.Message != `There is an existing Configuration "taken" that we do not own.` {
		t.Errorf("Ready = %+v", got)
	}
	waitEvent(t, c, ns, "taken", duck.ReasonNotOwned)
	get(t, c, ns, "taken", squatter)
	if squatter.Spec.Template.Spec.Containers[0].Image != "ferry.test/other" || len(squatter.OwnerReferences) != 0 {
		t.Errorf("the squatter was changed: %+v", squatter)
	}

	// A chosen Revision name that another Configuration's Revision holds.
	byo := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken-b"}}
	byo.Spec.Template.ObjectMeta.Name = "taken-b-blue"
	byo.Spec.Template.Spec.Containers = []corev1.Container{{Image: "ferry.test/blue"}}
	if err := c.Create(ctx, byo); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, byo, v1.ConfigurationConditionReady, corev1.ConditionTrue, "", readyTimeout)
	// (Admission refuses a template change that keeps its chosen name, as Knative does,
	// so the squatter "taken" is the one that asks for the name "taken-b" holds.)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		get(t, c, ns, "taken", squatter)
		squatter.Spec.Template.ObjectMeta.Name = "taken-b-blue"
		squatter.Spec.Template.Spec.Containers[0].Image = "ferry.test/green"
		return c.Update(ctx, squatter)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, squatter, v1.ConfigurationConditionReady, corev1.ConditionFalse, v1.ReasonRevisionNameTaken, readyTimeout)
	if squatter.Status.LatestReadyRevisionName != "taken-00001" {
		t.Errorf("latestReady = %q", squatter.Status.LatestReadyRevisionName)
	}

	// A chosen name no Revision may have: admission refuses it, as Knative's does.
	bad := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"}}
	bad.Spec.Template.ObjectMeta.Name = "bad-Blue"
	bad.Spec.Template.Spec.Containers = []corev1.Container{{Image: "ferry.test/blue"}}
	if err := c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "spec.template.metadata.name") {
		t.Fatalf("creating a Configuration whose revision name is not DNS-1035: %v", err)
	}
}

// TestManyServices is the seed's scenario: 200 Services created at once, each Ready
// within its deadline, none stuck; again with a random delay between each
// reconcile's read and the rest of it, to widen every race.
func TestManyServices(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 200 Services")
	}
	for _, tc := range []struct {
		name  string
		delay time.Duration
	}{{"plain", 0}, {"delayed reads", 50 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			c := testClient
			opts := reconciler.Options{}
			if tc.delay > 0 {
				opts.AfterRead = func() { time.Sleep(rand.N(tc.delay)) }
			}
			ns := testNamespace(t)
			f := startFerry(t, ns, opts)
			awaitNamespaceGone(t, ns)
			dumpOnFailure(t, c, ns)
			manyServices(t, c, f, ns, 200, 3*time.Minute)
		})
	}
}

func manyServices(t *testing.T, c client.Client, f *ferry, ns string, n int, deadline time.Duration) {
	ctx := context.Background()
	start := time.Now()
	created := make(map[string]time.Time, n)
	var mu sync.Mutex
	inFlight := make(chan struct{}, 50)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("s%03d", i)
			inFlight <- struct{}{}
			defer func() { <-inFlight }()
			if err := c.Create(ctx, ksvc(ns, name, "ferry.test/many")); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			created[name] = time.Now()
			mu.Unlock()
		}()
	}
	wg.Wait()

	// One List per poll, not one Get per Service: the test should not be what loads
	// the API server.
	ready := make(map[string]time.Duration, n)
	var stuck []string
	for len(ready)+len(stuck) < len(created) {
		time.Sleep(250 * time.Millisecond)
		list := &v1.ServiceList{}
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		stuck = stuck[:0]
		for i := range list.Items {
			s := &list.Items[i]
			if _, done := ready[s.Name]; done {
				continue
			}
			switch {
			case s.IsReady():
				ready[s.Name] = time.Since(created[s.Name])
			case time.Since(created[s.Name]) > deadline:
				stuck = append(stuck, fmt.Sprintf("%s: %+v", s.Name, s.Status.Conditions))
			}
		}
	}
	if len(stuck) > 0 {
		t.Errorf("%d of %d Services not Ready within %v; first: %s", len(stuck), n, deadline, stuck[0])
	}
	times := slices.Sorted(maps.Values(ready))
	if len(times) > 0 {
		t.Logf("%d Services Ready in %v; time to Ready after create (to 250ms) p50 %v p95 %v max %v; %.1f API writes per Service",
			len(times), time.Since(start).Round(time.Millisecond), times[len(times)/2].Round(time.Millisecond),
			times[len(times)*95/100].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond),
			float64(f.writes.in(ns))/float64(n))
	}
	t.Logf("writes: %v", f.writes.kinds(ns))
	t.Logf("mean write latency: %v", f.writes.meanLatency())
	logStages(t, c, ns)
	logControllerMetrics(t)
}

// logControllerMetrics logs, per controller, how long keys waited in the queue and how
// long reconciles took (averages since the process started): whether the time goes
// to waiting for a worker or to the work.
func logControllerMetrics(t *testing.T) {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		if fam.GetName() != "workqueue_queue_duration_seconds" && fam.GetName() != "controller_runtime_reconcile_time_seconds" {
			continue
		}
		for _, m := range fam.GetMetric() {
			h := m.GetHistogram()
			if h.GetSampleCount() == 0 {
				continue
			}
			var name string
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" || l.GetName() == "controller" {
					name = l.GetValue()
				}
			}
			t.Logf("%-42s %-14s %7d samples, mean %v", fam.GetName(), name, h.GetSampleCount(),
				time.Duration(h.GetSampleSum()/float64(h.GetSampleCount())*float64(time.Second)).Round(time.Microsecond))
		}
	}
}

// logStages logs, from the objects' own timestamps (to the second), how long after its
// Service's creation each stage of the rollout was reached: where the time went.
func logStages(t *testing.T, c client.Client, ns string) {
	ctx := context.Background()
	svcs, revs, routes, deps := &v1.ServiceList{}, &v1.RevisionList{}, &v1.RouteList{}, &appsv1.DeploymentList{}
	for _, l := range []client.ObjectList{svcs, revs, routes, deps} {
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	created := map[string]time.Time{}
	stages := map[string][]time.Duration{}
	add := func(stage, svc string, at time.Time) {
		if c, ok := created[svc]; ok && !at.IsZero() {
			stages[stage] = append(stages[stage], at.Sub(c))
		}
	}
	for _, s := range svcs.Items {
		created[s.Name] = s.CreationTimestamp.Time
	}
	for _, d := range deps.Items {
		add("1 deployment created", d.Labels[v1.ServiceLabelKey], d.CreationTimestamp.Time)
		for _, cond := range d.Status.Conditions {
			if cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue {
				add("2 deployment available", d.Labels[v1.ServiceLabelKey], cond.LastTransitionTime.Time)
			}
		}
	}
	for _, r := range revs.Items {
		add("3 revision ready", r.Labels[v1.ServiceLabelKey], condition(&r.Status.Status, v1.RevisionConditionReady).LastTransitionTime.Time)
	}
	for _, r := range routes.Items {
		add("4 route ready", r.Labels[v1.ServiceLabelKey], condition(&r.Status.Status, v1.RouteConditionReady).LastTransitionTime.Time)
	}
	for _, s := range svcs.Items {
		add("5 service ready", s.Name, condition(&s.Status.Status, v1.ServiceConditionReady).LastTransitionTime.Time)
	}
	for _, name := range slices.Sorted(maps.Keys(stages)) {
		d := stages[name]
		slices.Sort(d)
		t.Logf("%-24s p50 %4.0fs  p95 %4.0fs  max %4.0fs", name, d[len(d)/2].Seconds(), d[len(d)*95/100].Seconds(), d[len(d)-1].Seconds())
	}
}

// TestRevisionGC: with every age and count rule at its most eager, a Revision goes as
// soon as it is neither the latest created, the latest ready, routed nor marked no-gc.
func TestRevisionGC(t *testing.T) {
	c := testClient
	ns := testNamespace(t)
	startFerry(t, ns, reconciler.Options{Overrides: config.Overrides{GC: &config.GC{MinNonActiveRevisions: 0, MaxNonActiveRevisions: config.GCDisabled}}})
	dumpOnFailure(t, c, ns)
	ctx := context.Background()

	svc := ksvc(ns, "old", "ferry.test/old")
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	for i, keep := range []bool{true, false} {
		updateService(t, c, ns, "old", func(s *v1.Service) {
			s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", Value: fmt.Sprint(i)}}
			s.Spec.Template.ObjectMeta.Annotations = nil
			if keep {
				s.Spec.Template.ObjectMeta.Annotations = map[string]string{v1.NoGCAnnotationKey: "true"}
			}
		})
		waitCondition(t, c, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	}
	if svc.Status.LatestReadyRevisionName != "old-00003" {
		t.Fatalf("latest ready = %q", svc.Status.LatestReadyRevisionName)
	}
	eventually(t, readyTimeout, func() (bool, string) {
		return !get(t, c, ns, "old-00001", &v1.Revision{}), "old-00001 is still there"
	})
	for _, kept := range []string{"old-00002", "old-00003"} {
		if !get(t, c, ns, kept, &v1.Revision{}) {
			t.Errorf("%s was collected", kept)
		}
	}
}

// TestTwoControllers runs two copies of Ferry at once, as a restart overlapping the
// old process or a stale cache would: deterministic names mean each generation still
// gets exactly one Revision, and every Service becomes Ready.
func TestTwoControllers(t *testing.T) {
	c := testClient
	delay := reconciler.Options{AfterRead: func() { time.Sleep(rand.N(20 * time.Millisecond)) }}
	ns := testNamespace(t)
	startFerry(t, ns, delay)
	startFerry(t, ns, delay)
	dumpOnFailure(t, c, ns)
	ctx := context.Background()

	const n = 20
	for i := range n {
		if err := c.Create(ctx, ksvc(ns, fmt.Sprintf("twin%02d", i), "ferry.test/twin")); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("twin%02d", i)}}
		waitCondition(t, c, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	}
	revs := &v1.RevisionList{}
	if err := c.List(ctx, revs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(revs.Items) != n {
		var names []string
		for _, r := range revs.Items {
			names = append(names, r.Name)
		}
		t.Errorf("%d Revisions for %d Services: %v", len(revs.Items), n, names)
	}
}
