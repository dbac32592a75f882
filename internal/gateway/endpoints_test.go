package gateway

import (
	"context"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
)

func addrs(ts *targetSet) (out []string) {
	if ts == nil {
		return nil
	}
	for _, t := range ts.targets {
		out = append(out, t.addr)
	}
	return out
}

func TestBuildEndpointsPortResolution(t *testing.T) {
	svc := serviceWithPort("rev-1")
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 9090})
	s := sliceFor("rev-1", 8012, "10.0.0.2", "10.0.0.1")
	s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: ptr.To("metrics"), Port: ptr.To[int32](9091)})
	// A second slice repeats an endpoint, as slices do while endpoints move.
	s2 := sliceFor("rev-1", 8012, "10.0.0.1", "10.0.0.3")
	s2.Endpoints[1].Conditions.Ready = ptr.To(false)
	s2.Endpoints = append(s2.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.4"}}) // Ready unknown counts as ready
	se := buildEndpoints(svc, []discoveryv1.EndpointSlice{s, s2}, notSimulated)

	for _, tc := range []struct {
		port intstr.IntOrString
		want []string
	}{
		// The Service's port 80 is named http, which the slices map to 8012.
		{port: intstr.FromInt32(80), want: []string{"10.0.0.1:8012", "10.0.0.2:8012", "10.0.0.4:8012"}},
		{port: intstr.FromString("http"), want: []string{"10.0.0.1:8012", "10.0.0.2:8012", "10.0.0.4:8012"}},
		{port: intstr.FromInt32(9090), want: []string{"10.0.0.1:9091", "10.0.0.2:9091"}},
		// Ports the Service does not list match the slices directly.
		{port: intstr.FromInt32(8012), want: []string{"10.0.0.1:8012", "10.0.0.2:8012", "10.0.0.4:8012"}},
		{port: intstr.FromInt32(81), want: nil},
		{port: intstr.FromString("grpc"), want: nil},
	} {
		if got := addrs(se.targets(tc.port)); !slices.Equal(got, tc.want) {
			t.Errorf("targets(%v) = %v, want %v", tc.port.String(), got, tc.want)
		}
	}
	if got := (&service{key: key("rev-1")}).revisionName(se); got != "rev-1" {
		t.Errorf("revision %q", got)
	}
}

// Idle endpoints (no request in flight) share requests round-robin.
func TestTargetSetRoundRobin(t *testing.T) {
	ts := buildEndpoints(serviceWithPort("r"), []discoveryv1.EndpointSlice{sliceFor("r", 8012, "10.0.0.1", "10.0.0.2", "10.0.0.3")}, notSimulated).
		targets(intstr.FromInt32(80))
	var got []string
	for range 6 {
		tg := ts.acquire(0, *alone)
		got = append(got, tg.ip)
		tg.release(0)
	}
	if want := []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.1", "10.0.0.2", "10.0.0.3"}; !slices.Equal(got, want) {
		t.Errorf("picks %v, want %v", got, want)
	}
}

func TestEndpointsReconcilerDetectsKwokNodes(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := servingv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	real, simulated := sliceFor("rev-1", 8012, "10.0.0.1", "10.0.0.2"), sliceFor("rev-1", 8012, "10.0.0.3")
	simulated.Name = "rev-1-kwok"
	real.Endpoints[0].NodeName = ptr.To("real-node")
	simulated.Endpoints[0].NodeName = ptr.To("kwok-node")
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&discoveryv1.EndpointSlice{}, endpointSliceServiceIndex, endpointSliceService).
		WithObjects(
			serviceWithPort("rev-1"), &real, &simulated,
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "real-node"}},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-node", Annotations: map[string]string{kwokNodeAnnotation: kwokNodeFake}}},
		).Build()

	for _, tc := range []struct {
		simulatedPods, dialSimulated bool
		want                         map[string]bool
	}{
		{simulatedPods: false, want: map[string]bool{"10.0.0.1": false, "10.0.0.2": false, "10.0.0.3": true}},
		{simulatedPods: true, want: map[string]bool{"10.0.0.1": true, "10.0.0.2": true, "10.0.0.3": true}},
		{simulatedPods: true, dialSimulated: true, want: map[string]bool{"10.0.0.1": false, "10.0.0.2": false, "10.0.0.3": false}},
	} {
		services := newServiceRegistry()
		r := &endpointsReconciler{client: c, services: services, simulatedPods: tc.simulatedPods, dialSimulated: tc.dialSimulated}
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key("rev-1")}); err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, tg := range services.acquire(key("rev-1")).endpoints.Load().targets(intstr.FromInt32(80)).targets {
			got[tg.ip] = tg.simulated
		}
		if !maps.Equal(got, tc.want) {
			t.Errorf("SimulatedPods=%v DialSimulatedPods=%v: simulated %v, want %v", tc.simulatedPods, tc.dialSimulated, got, tc.want)
		}
	}
}

// A Revision's endpoints are its ready pods, on its user port, reached through port 80
// ("http") as its Service's were; its spec says the concurrency, the timeouts and
// the protocol (a port named h2c). A
// Service of the same name (left by an older Ferry) is not read.
func TestEndpointsReconcilerFollowsRevisionPods(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, servingv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	rev := &servingv1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rev-1"},
		Spec: servingv1.RevisionSpec{ContainerConcurrency: ptr.To[int64](3), TimeoutSeconds: ptr.To[int64](7),
			ResponseStartTimeoutSeconds: ptr.To[int64](5), IdleTimeoutSeconds: ptr.To[int64](2),
			PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: "img", Ports: []corev1.ContainerPort{{Name: "h2c", ContainerPort: 9000}}}}}}}
	pod := func(name, ip, node string, ready corev1.ConditionStatus, terminating bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{servingv1.RevisionLabelKey: "rev-1"}},
			Spec:   corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}}
		if terminating {
			p.Finalizers = []string{"test"} // so that deleting it leaves it terminating
		}
		return p
	}
	other := pod("other", "10.0.0.9", "real-node", corev1.ConditionTrue, false)
	other.Labels[servingv1.RevisionLabelKey] = "rev-2"
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&discoveryv1.EndpointSlice{}, endpointSliceServiceIndex, endpointSliceService).
		WithIndex(&corev1.Pod{}, podRevisionIndex, podRevision).
		WithObjects(rev,
			pod("ready", "10.0.0.2", "real-node", corev1.ConditionTrue, false),
			pod("simulated", "10.0.0.1", "kwok-node", corev1.ConditionTrue, false),
			pod("starting", "10.0.0.3", "real-node", corev1.ConditionFalse, false),
			pod("unscheduled", "", "", corev1.ConditionFalse, false),
			pod("terminating", "10.0.0.4", "real-node", corev1.ConditionTrue, true),
			other,
			// What an older Ferry left: the Revision's Service and its slice.
			serviceWithPort("rev-1"), ptr.To(sliceFor("rev-1", 8012, "10.0.0.5")),
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "real-node"}},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-node", Annotations: map[string]string{kwokNodeAnnotation: kwokNodeFake}}},
		).Build()
	if err := c.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "terminating"}}); err != nil {
		t.Fatal(err)
	}
	services := newServiceRegistry()
	r := &endpointsReconciler{client: c, services: services}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key("rev-1")}); err != nil {
		t.Fatal(err)
	}
	se := services.acquire(key("rev-1")).endpoints.Load()
	for _, port := range []intstr.IntOrString{intstr.FromInt32(80), intstr.FromString("http")} {
		if got, want := addrs(se.targets(port)), []string{"10.0.0.1:9000", "10.0.0.2:9000"}; !slices.Equal(got, want) {
			t.Errorf("port %s: endpoints %v, want %v", port.String(), got, want)
		}
	}
	simulated := map[string]bool{}
	for _, tg := range se.targets(intstr.FromInt32(80)).targets {
		simulated[tg.ip] = tg.simulated
		if !tg.h2c {
			t.Errorf("pod %s of a Revision whose port is named h2c is not spoken to with h2c", tg.ip)
		}
	}
	if want := map[string]bool{"10.0.0.1": true, "10.0.0.2": false}; !maps.Equal(simulated, want) {
		t.Errorf("simulated %v, want %v", simulated, want)
	}
	want := timeouts{total: 7 * time.Second, responseStart: 5 * time.Second, idle: 2 * time.Second}
	if se.revision != "rev-1" || se.limit() != 3 || se.limits(time.Minute) != want {
		t.Errorf("revision %q, limit %d, timeouts %+v; want rev-1, 3, %+v", se.revision, se.limit(), se.limits(time.Minute), want)
	}

	// Gone: the Service of the same name is what is left, and is followed.
	if err := c.Delete(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key("rev-1")}); err != nil {
		t.Fatal(err)
	}
	if got := addrs(services.acquire(key("rev-1")).endpoints.Load().targets(intstr.FromInt32(80))); !slices.Equal(got, []string{"10.0.0.5:8012"}) {
		t.Errorf("after the Revision is deleted: endpoints %v, want the Service's", got)
	}
}

func TestServiceRegistryKeepsReferencedEntries(t *testing.T) {
	services := newServiceRegistry()
	// An ingress references a Service before it exists...
	s := services.acquire(key("rev-1"))
	se := buildEndpoints(serviceWithPort("rev-1"), []discoveryv1.EndpointSlice{sliceFor("rev-1", 8012, "10.0.0.1")}, notSimulated)
	// ...which then appears: the entry the route holds gets its endpoints.
	services.update(key("rev-1"), se)
	if s.endpoints.Load() != se {
		t.Fatal("the referenced entry did not get the endpoints")
	}
	// Gone while referenced: emptied but kept, so a re-creation fills the same entry.
	services.update(key("rev-1"), nil)
	if s.endpoints.Load() != nil || services.services[key("rev-1")] != s {
		t.Fatal("a referenced entry was dropped")
	}
	services.release(s)
	if _, ok := services.services[key("rev-1")]; ok {
		t.Error("an unreferenced empty entry was kept")
	}
	// An unreferenced Service with endpoints stays, for the ingress that comes later.
	services.update(key("rev-2"), se)
	if services.acquire(key("rev-2")).endpoints.Load() != se {
		t.Error("a known Service lost its endpoints before being referenced")
	}
}

// TestTerminatingPodDrains: a pod being deleted (deletionTimestamp set, still Ready, as
// the kubelet leaves it while its preStop hook runs) gets no new request from the
// moment the gateway sees the deletion, and the request it already had finishes.
func TestTerminatingPodDrains(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, servingv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	release := make(chan struct{})
	var oldServed atomic.Int64
	old := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		oldServed.Add(1)
		if r.URL.Path == "/slow" {
			<-release
		}
		io.WriteString(w, "old")
	})
	var nextServed atomic.Int64
	next := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		nextServed.Add(1)
		<-release
		io.WriteString(w, "new")
	})
	// Before the backends' Close, which waits for their requests, when a check fails.
	var released sync.Once
	unblock := func() { released.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	backends := map[string]string{"10.0.0.1:8080": old.Listener.Addr().String(), "10.0.0.2:8080": next.Listener.Addr().String()}
	tg := startGateway(t, Options{DialSimulatedPods: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, backends[addr])
	}})
	tg.route("drain.example.com", "rev-1")

	rev := &servingv1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rev-1"},
		Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: "img"}}}}}
	pod := func(name, ip string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: map[string]string{servingv1.RevisionLabelKey: "rev-1"}, Finalizers: []string{"kubelet"}},
			Status: corev1.PodStatus{PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&discoveryv1.EndpointSlice{}, endpointSliceServiceIndex, endpointSliceService).
		WithIndex(&corev1.Pod{}, podRevisionIndex, podRevision).
		WithObjects(rev, pod("old", "10.0.0.1")).Build()
	r := &endpointsReconciler{client: c, services: tg.services, dialSimulated: true}
	publish := func() {
		t.Helper()
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key("rev-1")}); err != nil {
			t.Fatal(err)
		}
	}
	publish()
	slow := tg.send(context.Background(), "drain.example.com", "/slow")
	eventually(t, "the slow request to reach the old pod", func() bool { return oldServed.Load() == 1 })

	// Scale-down with a replacement: the old pod is deleted (it stays, terminating and
	// Ready, until the kubelet is done with it) and a new one is ready.
	if err := c.Create(context.Background(), pod("new", "10.0.0.2")); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(context.Background(), pod("old", "10.0.0.1")); err != nil {
		t.Fatal(err)
	}
	publish()
	// Held open, they make the new pod the busier one: only the deletion keeps the
	// fewest-in-flight choice off the old pod.
	var after []<-chan answer
	for range 20 {
		after = append(after, tg.send(context.Background(), "drain.example.com", "/"))
	}
	eventually(t, "20 requests on a pod", func() bool { return nextServed.Load()+oldServed.Load()-1 == 20 })
	if n := oldServed.Load(); n != 1 {
		t.Errorf("the terminating pod got %d new requests", n-1)
	}
	unblock()
	if a := <-slow; a.err != nil || a.code != http.StatusOK || a.body != "old" {
		t.Errorf("in-flight request on the terminating pod: %d %q %v, want 200 from it", a.code, a.body, a.err)
	}
	for i, ch := range after {
		if a := <-ch; a.err != nil || a.code != http.StatusOK || a.body != "new" {
			t.Errorf("request %d after the deletion: %d %q %v, want 200 from the new pod", i, a.code, a.body, a.err)
		}
	}
}

// TestRevisionPodsServingPort: pods of ferry up's program node that run as host
// processes share 127.0.0.1, each on the port its annotation names; the gateway dials
// that port, and counts a leaving pod's in-flight requests by its address alone.
func TestRevisionPodsServingPort(t *testing.T) {
	rev := &servingv1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rev-1"},
		Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: "img"}}}}}
	pod := func(name, ip, servingPort string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Status: corev1.PodStatus{PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
		if servingPort != "" {
			p.Annotations = map[string]string{servingv1.ServingPortAnnotationKey: servingPort}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		want []string
	}{
		{"no annotation: the Revision's port", []corev1.Pod{pod("a", "10.0.0.1", "")}, []string{"10.0.0.1:8080"}},
		{"two processes on one IP", []corev1.Pod{pod("a", "127.0.0.1", "40001"), pod("b", "127.0.0.1", "40002")},
			[]string{"127.0.0.1:40001", "127.0.0.1:40002"}},
		{"not a port: the Revision's", []corev1.Pod{pod("a", "10.0.0.1", "x"), pod("b", "10.0.0.2", "70000"), pod("c", "10.0.0.3", "0")},
			[]string{"10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			se := buildRevisionEndpoints(rev, tc.pods, func(string) bool { return false })
			got := addrs(se.targets(intstr.FromInt32(80)))
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("endpoints %v, want %v", got, tc.want)
			}
		})
	}

	services := newServiceRegistry()
	services.update(key("rev-1"), buildRevisionEndpoints(rev,
		[]corev1.Pod{pod("a", "127.0.0.1", "40001"), pod("b", "127.0.0.1", "40002")}, func(string) bool { return false }))
	for _, tg := range services.acquire(key("rev-1")).endpoints.Load().targets(intstr.FromInt32(80)).targets {
		if tg.addr == "127.0.0.1:40002" {
			tg.pod.inflight.Add(2)
		}
	}
	for ip, want := range map[string]int64{"127.0.0.1": 2, "127.0.0.1:40001": 0, "127.0.0.1:40002": 2} {
		if got := services.inFlightTo(ip); got != want {
			t.Errorf("in flight to %s: %d, want %d", ip, got, want)
		}
	}
}
