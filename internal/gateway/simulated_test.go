package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// serveSimulatedRevision publishes a Revision with the given annotations and timeout
// whose ready pods, at ips, kwok simulates; host routes to it.
func (tg *testGateway) serveSimulatedRevision(host string, annotations map[string]string, timeoutSeconds int64, ips ...string) *backends.Service {
	rev := &servingv1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sim-00001", Annotations: annotations},
		Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: "img"}}}}}
	if timeoutSeconds > 0 {
		rev.Spec.TimeoutSeconds = ptr.To(timeoutSeconds)
	}
	var pods []corev1.Pod
	for _, ip := range ips {
		pods = append(pods, corev1.Pod{Status: corev1.PodStatus{PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}})
	}
	tg.services.Update(gatewaytest.Key(rev.Name), backends.BuildRevisionEndpoints(rev, pods, func(string) bool { return true }))
	tg.route(host, rev.Name)
	return tg.service(rev.Name)
}

// A simulated pod answers after the Revision's service time, or after ?sleep= (in
// milliseconds or as a duration), which overrides it; a bad ?sleep= is a 400.
func TestSimulatedPodServiceTime(t *testing.T) {
	g := startGateway(t, Options{})
	g.serveSimulatedRevision("sim.example.com", map[string]string{servingv1.SimulatedServiceTimeAnnotationKey: "150ms"}, 0, "10.244.0.7")
	for _, tc := range []struct {
		path     string
		code     int
		min, max time.Duration
		body     string
	}{
		{path: "/", code: 200, min: 150 * time.Millisecond, max: 2 * time.Second, body: "Slept for 150ms.\n"},
		{path: "/?sleep=300", code: 200, min: 300 * time.Millisecond, max: 2 * time.Second, body: "Slept for 300ms.\n"},
		{path: "/?sleep=0.2s", code: 200, min: 200 * time.Millisecond, max: 2 * time.Second, body: "Slept for 200ms.\n"},
		{path: "/?sleep=0", code: 200, max: 100 * time.Millisecond, body: "(pod 10.244.0.7 is simulated by kwok; no process serves it)\n"},
		{path: "/?sleep=-5", code: 400, max: 100 * time.Millisecond, body: `sleep="-5" is negative`},
		{path: "/?sleep=soon", code: 400, max: 100 * time.Millisecond, body: `sleep="soon" is neither milliseconds nor a duration`},
	} {
		start := time.Now()
		a := <-g.send(context.Background(), "sim.example.com", tc.path)
		took := a.at.Sub(start)
		if a.code != tc.code || !strings.HasSuffix(a.body, tc.body) && !strings.Contains(a.body, tc.body) || took < tc.min || took > tc.max {
			t.Errorf("%s: %d %q after %v; want %d %q after [%v, %v]", tc.path, a.code, a.body, took, tc.code, tc.body, tc.min, tc.max)
		}
	}
}

// A simulated pod with capacity 1 serves one request at a time; the next waits for
// it, and counts as in flight on the pod (the autoscaler's concurrency) meanwhile.
func TestSimulatedPodCapacity(t *testing.T) {
	g := startGateway(t, Options{})
	svc := g.serveSimulatedRevision("sim.example.com", map[string]string{
		servingv1.SimulatedServiceTimeAnnotationKey: "200ms",
		servingv1.SimulatedCapacityAnnotationKey:    "1",
	}, 0, "10.244.0.7")
	start := time.Now()
	first := g.send(context.Background(), "sim.example.com", "/")
	second := g.send(context.Background(), "sim.example.com", "/")
	slot := svc.Endpoints().Targets(intstr.FromInt32(80)).All()[0].Pod
	eventually(t, "both requests on the pod", func() bool { return slot.InFlight() == 2 })
	if _, inFlight := svc.Load.Read(backends.Micros(time.Now())); inFlight != 2 {
		t.Errorf("%d requests in flight for the revision while one waits for the pod, want 2", inFlight)
	}
	a, b := <-first, <-second
	if a.code != 200 || b.code != 200 {
		t.Fatalf("answers %d %q, %d %q", a.code, a.body, b.code, b.body)
	}
	last := a.at
	if b.at.After(last) {
		last = b.at
	}
	if last.Sub(start) < 400*time.Millisecond {
		t.Errorf("both answered within %v; with capacity 1 and 200ms each, the second needs 400ms", last.Sub(start))
	}
}

// The revision's timeout bounds a simulated answer as it bounds a real pod's: 504.
func TestSimulatedPodTimeout(t *testing.T) {
	g := startGateway(t, Options{})
	g.serveSimulatedRevision("sim.example.com", nil, 1, "10.244.0.7")
	start := time.Now()
	a := <-g.send(context.Background(), "sim.example.com", "/?sleep=5s")
	if took := a.at.Sub(start); a.code != http.StatusGatewayTimeout || took < time.Second || took > 3*time.Second {
		t.Errorf("sleep past a 1s timeout: %d %q after %v, want 504 after 1s", a.code, a.body, took)
	}
}

// Real pods are forwarded to as they are: the annotations and ?sleep= shape only the
// gateway's own answers for simulated pods.
func TestRealPodIgnoresSimulation(t *testing.T) {
	g := startGateway(t, Options{})
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("real")) })
	host, port := splitHostPort(t, b.Listener.Addr().String())
	rev := &servingv1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "real-00001",
		Annotations: map[string]string{servingv1.SimulatedServiceTimeAnnotationKey: "2s", servingv1.SimulatedCapacityAnnotationKey: "1"}},
		Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: "img",
			Ports: []corev1.ContainerPort{{ContainerPort: int32(port)}}}}}}}
	pod := corev1.Pod{Status: corev1.PodStatus{PodIP: host, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	g.services.Update(gatewaytest.Key(rev.Name), backends.BuildRevisionEndpoints(rev, []corev1.Pod{pod}, gatewaytest.NotSimulated))
	g.route("real.example.com", rev.Name)
	start := time.Now()
	a := <-g.send(context.Background(), "real.example.com", "/?sleep=soon")
	if took := a.at.Sub(start); a.code != 200 || a.body != "real" || took > time.Second {
		t.Errorf("real pod: %d %q after %v, want its own 200 at once", a.code, a.body, took)
	}
}
