package gateway

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

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
	pods := map[string]string{"10.0.0.1:8080": old.Listener.Addr().String(), "10.0.0.2:8080": next.Listener.Addr().String()}
	tg := startGateway(t, Options{DialSimulatedPods: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, pods[addr])
	}})
	tg.route("drain.example.com", "rev-1")

	rev := &servingv1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rev-1"},
		Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: "img"}}}}}
	pod := func(name, ip string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: map[string]string{servingv1.RevisionLabelKey: "rev-1"}, Finalizers: []string{"kubelet"}},
			Status: corev1.PodStatus{PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(rev, pod("old", "10.0.0.1")).Build()
	// What the endpoints reconciler publishes for the Revision: its pods, as the
	// cache lists them.
	publish := func() {
		t.Helper()
		var pods corev1.PodList
		if err := c.List(context.Background(), &pods, client.InNamespace("ns"), client.MatchingLabels{servingv1.RevisionLabelKey: "rev-1"}); err != nil {
			t.Fatal(err)
		}
		tg.services.Update(gatewaytest.Key("rev-1"), backends.BuildRevisionEndpoints(rev, pods.Items, gatewaytest.NotSimulated))
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
