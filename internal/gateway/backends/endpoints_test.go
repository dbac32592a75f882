package backends

import (
	"context"
	"maps"
	"slices"
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
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
)

func addrs(ts *TargetSet) (out []string) {
	if ts == nil {
		return nil
	}
	for _, t := range ts.targets {
		out = append(out, t.Addr)
	}
	return out
}

func TestBuildEndpointsPortResolution(t *testing.T) {
	svc := gatewaytest.ServiceWithPort("rev-1")
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 9090})
	s := gatewaytest.SliceFor("rev-1", 8012, "10.0.0.2", "10.0.0.1")
	s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: ptr.To("metrics"), Port: ptr.To[int32](9091)})
	// A second slice repeats an endpoint, as slices do while endpoints move.
	s2 := gatewaytest.SliceFor("rev-1", 8012, "10.0.0.1", "10.0.0.3")
	s2.Endpoints[1].Conditions.Ready = ptr.To(false)
	s2.Endpoints = append(s2.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.4"}}) // Ready unknown counts as ready
	se := BuildEndpoints(svc, []discoveryv1.EndpointSlice{s, s2}, gatewaytest.NotSimulated)

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
		if got := addrs(se.Targets(tc.port)); !slices.Equal(got, tc.want) {
			t.Errorf("targets(%v) = %v, want %v", tc.port.String(), got, tc.want)
		}
	}
	if got := (&Service{Key: gatewaytest.Key("rev-1")}).RevisionName(se); got != "rev-1" {
		t.Errorf("revision %q", got)
	}
}

// Idle endpoints (no request in flight) share requests round-robin.
func TestTargetSetRoundRobin(t *testing.T) {
	ts := BuildEndpoints(gatewaytest.ServiceWithPort("r"), []discoveryv1.EndpointSlice{gatewaytest.SliceFor("r", 8012, "10.0.0.1", "10.0.0.2", "10.0.0.3")}, gatewaytest.NotSimulated).
		Targets(intstr.FromInt32(80))
	var got []string
	for range 6 {
		tg := ts.Acquire(0, *alone)
		got = append(got, tg.IP)
		tg.Release(0)
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
	real, simulated := gatewaytest.SliceFor("rev-1", 8012, "10.0.0.1", "10.0.0.2"), gatewaytest.SliceFor("rev-1", 8012, "10.0.0.3")
	simulated.Name = "rev-1-kwok"
	real.Endpoints[0].NodeName = ptr.To("real-node")
	simulated.Endpoints[0].NodeName = ptr.To("kwok-node")
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&discoveryv1.EndpointSlice{}, endpointSliceServiceIndex, endpointSliceService).
		WithObjects(
			gatewaytest.ServiceWithPort("rev-1"), &real, &simulated,
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
		services := NewRegistry()
		r := &endpointsReconciler{client: c, services: services, simulatedPods: tc.simulatedPods, dialSimulated: tc.dialSimulated}
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: gatewaytest.Key("rev-1")}); err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, tg := range services.Acquire(gatewaytest.Key("rev-1")).endpoints.Load().Targets(intstr.FromInt32(80)).targets {
			got[tg.IP] = tg.Simulated
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
			gatewaytest.ServiceWithPort("rev-1"), ptr.To(gatewaytest.SliceFor("rev-1", 8012, "10.0.0.5")),
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "real-node"}},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-node", Annotations: map[string]string{kwokNodeAnnotation: kwokNodeFake}}},
		).Build()
	if err := c.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "terminating"}}); err != nil {
		t.Fatal(err)
	}
	services := NewRegistry()
	r := &endpointsReconciler{client: c, services: services}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: gatewaytest.Key("rev-1")}); err != nil {
		t.Fatal(err)
	}
	se := services.Acquire(gatewaytest.Key("rev-1")).endpoints.Load()
	for _, port := range []intstr.IntOrString{intstr.FromInt32(80), intstr.FromString("http")} {
		if got, want := addrs(se.Targets(port)), []string{"10.0.0.1:9000", "10.0.0.2:9000"}; !slices.Equal(got, want) {
			t.Errorf("port %s: endpoints %v, want %v", port.String(), got, want)
		}
	}
	simulated := map[string]bool{}
	for _, tg := range se.Targets(intstr.FromInt32(80)).targets {
		simulated[tg.IP] = tg.Simulated
		if !tg.H2C {
			t.Errorf("pod %s of a Revision whose port is named h2c is not spoken to with h2c", tg.IP)
		}
	}
	if want := map[string]bool{"10.0.0.1": true, "10.0.0.2": false}; !maps.Equal(simulated, want) {
		t.Errorf("simulated %v, want %v", simulated, want)
	}
	want := Timeouts{Total: 7 * time.Second, ResponseStart: 5 * time.Second, Idle: 2 * time.Second}
	if se.revision != "rev-1" || se.Limit() != 3 || se.Limits(time.Minute) != want {
		t.Errorf("revision %q, limit %d, timeouts %+v; want rev-1, 3, %+v", se.revision, se.Limit(), se.Limits(time.Minute), want)
	}

	// Gone: the Service of the same name is what is left, and is followed.
	if err := c.Delete(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: gatewaytest.Key("rev-1")}); err != nil {
		t.Fatal(err)
	}
	if got := addrs(services.Acquire(gatewaytest.Key("rev-1")).endpoints.Load().Targets(intstr.FromInt32(80))); !slices.Equal(got, []string{"10.0.0.5:8012"}) {
		t.Errorf("after the Revision is deleted: endpoints %v, want the Service's", got)
	}
}

func TestServiceRegistryKeepsReferencedEntries(t *testing.T) {
	services := NewRegistry()
	// An ingress references a Service before it exists...
	s := services.Acquire(gatewaytest.Key("rev-1"))
	se := BuildEndpoints(gatewaytest.ServiceWithPort("rev-1"), []discoveryv1.EndpointSlice{gatewaytest.SliceFor("rev-1", 8012, "10.0.0.1")}, gatewaytest.NotSimulated)
	// ...which then appears: the entry the route holds gets its endpoints.
	services.Update(gatewaytest.Key("rev-1"), se)
	if s.endpoints.Load() != se {
		t.Fatal("the referenced entry did not get the endpoints")
	}
	// Gone while referenced: emptied but kept, so a re-creation fills the same entry.
	services.Update(gatewaytest.Key("rev-1"), nil)
	if s.endpoints.Load() != nil || services.services[gatewaytest.Key("rev-1")] != s {
		t.Fatal("a referenced entry was dropped")
	}
	services.Release(s)
	if _, ok := services.services[gatewaytest.Key("rev-1")]; ok {
		t.Error("an unreferenced empty entry was kept")
	}
	// An unreferenced Service with endpoints stays, for the ingress that comes later.
	services.Update(gatewaytest.Key("rev-2"), se)
	if services.Acquire(gatewaytest.Key("rev-2")).endpoints.Load() != se {
		t.Error("a known Service lost its endpoints before being referenced")
	}
}

func TestRevisionAnnotationsAreRead(t *testing.T) {
	for _, tc := range []struct {
		cc, timeout string
		wantCC      int64
		wantTimeout time.Duration
	}{
		{cc: "1", timeout: "30", wantCC: 1, wantTimeout: 30 * time.Second},
		{cc: "0", timeout: "", wantCC: 0, wantTimeout: 0},
		{cc: "x", timeout: "-3", wantCC: 0, wantTimeout: 0},
	} {
		svc := gatewaytest.ServiceWithPort("rev-1")
		svc.Annotations = map[string]string{"serving.ferry.dev/container-concurrency": tc.cc}
		if tc.timeout != "" {
			svc.Annotations["serving.ferry.dev/timeout-seconds"] = tc.timeout
		}
		se := BuildEndpoints(svc, nil, gatewaytest.NotSimulated)
		if se.Limit() != tc.wantCC || se.timeout != tc.wantTimeout {
			t.Errorf("annotations %q, %q: containerConcurrency %d, timeout %v", tc.cc, tc.timeout, se.Limit(), se.timeout)
		}
	}
	if got := (*Endpoints)(nil).Limits(time.Minute); got != (Timeouts{Total: time.Minute}) {
		t.Errorf("no snapshot: timeouts %+v", got)
	}
}

func TestSpeaksH2C(t *testing.T) {
	for _, tc := range []struct {
		name        string
		appProtocol *string
		want        bool
	}{
		{name: "http", want: false},
		{name: "h2c", want: true},
		{name: "http2", want: true},
		{name: "", appProtocol: ptr.To("kubernetes.io/h2c"), want: true},
		{name: "http", appProtocol: ptr.To("kubernetes.io/h2c"), want: true},
		{name: "h2c", appProtocol: ptr.To("http"), want: false},
		{name: "http2", appProtocol: ptr.To(""), want: true},
	} {
		if got := speaksH2C(tc.name, tc.appProtocol); got != tc.want {
			t.Errorf("port %q, appProtocol %v: h2c %v, want %v", tc.name, ptr.Deref(tc.appProtocol, "<nil>"), got, tc.want)
		}
	}

	// A Service's slices say it: Knative's Revision Service, port 80 to 8013 with
	// appProtocol kubernetes.io/h2c.
	slice := gatewaytest.SliceFor("rev-1", 8013, "10.0.0.1")
	slice.Ports[0].AppProtocol = ptr.To("kubernetes.io/h2c")
	se := BuildEndpoints(gatewaytest.ServiceWithPort("rev-1"), []discoveryv1.EndpointSlice{slice}, gatewaytest.NotSimulated)
	if ts := se.Targets(intstr.FromInt32(80)); ts.Empty() || !ts.targets[0].H2C {
		t.Errorf("an EndpointSlice port with appProtocol kubernetes.io/h2c: targets %+v", ts)
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
			se := BuildRevisionEndpoints(rev, tc.pods, gatewaytest.NotSimulated)
			got := addrs(se.Targets(intstr.FromInt32(80)))
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("endpoints %v, want %v", got, tc.want)
			}
		})
	}

	services := NewRegistry()
	services.Update(gatewaytest.Key("rev-1"), BuildRevisionEndpoints(rev,
		[]corev1.Pod{pod("a", "127.0.0.1", "40001"), pod("b", "127.0.0.1", "40002")}, gatewaytest.NotSimulated))
	for _, tg := range services.Acquire(gatewaytest.Key("rev-1")).endpoints.Load().Targets(intstr.FromInt32(80)).targets {
		if tg.Addr == "127.0.0.1:40002" {
			tg.Pod.inflight.Add(2)
		}
	}
	for ip, want := range map[string]int64{"127.0.0.1": 2, "127.0.0.1:40001": 0, "127.0.0.1:40002": 2} {
		if got := services.InFlightTo(ip); got != want {
			t.Errorf("in flight to %s: %d, want %d", ip, got, want)
		}
	}
}
