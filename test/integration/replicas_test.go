package integration

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/gateway"
	"github.com/ferry-serving/ferry/internal/manager"
	"github.com/ferry-serving/ferry/internal/scale"
)

// Gateway replicas count each other by their Leases in one namespace (here the
// test's): every pod's containerConcurrency is split among them, and a KIngress is
// Ready only once every live replica serves its generation. The tests run Ferry with
// one gateway in-process and, where two are needed, a second gateway in a manager of
// its own, both dialling the pods of a podFarm.

// replicaLease is the tests' Lease duration: short, so that a replica going away is
// seen within seconds.
const replicaLease = 3 * time.Second

// startReplicaFerry runs Ferry (reconcilers, autoscaler and a gateway replica keeping
// its Lease in ns) with its pods served by farm; it returns the gateway's external
// address and metrics.
func startReplicaFerry(t *testing.T, ns string, farm *podFarm) (string, *prometheus.Registry) {
	t.Helper()
	setLoggerOnce.Do(func() { ctrl.SetLogger(logr.New(errorSink{})) })
	registry := prometheus.NewRegistry()
	f, err := manager.New(rest.CopyConfig(testConfig), manager.Options{
		Reconcilers: true,
		Gateway: &gateway.Options{ExternalAddr: "127.0.0.1:0", LocalAddr: "127.0.0.1:0", Source: "gateway-a",
			LeaseNamespace: ns, LeaseDuration: replicaLease,
			DialContext: farm.dial, DialSimulatedPods: true, Registry: registry},
		SkipNameValidation: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	runManager(t, f)
	return f.Gateway.ExternalAddr(), registry
}

// startGatewayReplica runs a second gateway replica, alone in its manager, whose
// watch of KIngresses delivers each event ingressLag late (0: at once); stop ends it
// (and is also called when the test ends).
func startGatewayReplica(t *testing.T, ns string, farm *podFarm, ingressLag time.Duration) (addr string, registry *prometheus.Registry, stop func()) {
	t.Helper()
	registry = prometheus.NewRegistry()
	cfg := rest.CopyConfig(testConfig)
	if ingressLag > 0 {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				resp, err := rt.RoundTrip(req)
				if err == nil && req.URL.Query().Get("watch") == "true" && strings.HasSuffix(req.URL.Path, "/ingresses") {
					resp.Body = lagged(resp.Body, ingressLag)
				}
				return resp, err
			})
		})
	}
	mgr := newTestManager(t, cfg)
	gw := gateway.New(gateway.Options{ExternalAddr: "127.0.0.1:0", LocalAddr: "127.0.0.1:0", Source: "gateway-b",
		LeaseNamespace: ns, LeaseDuration: replicaLease,
		DialContext: farm.dial, DialSimulatedPods: true, Registry: registry})
	if err := gw.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("second gateway: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return gw.ExternalAddr(), registry, stop
}

// lagged passes on what body reads, each chunk lag after it arrived: a watch that
// lags behind the API server, as one on a busy node or across a slow link does.
func lagged(body io.ReadCloser, lag time.Duration) io.ReadCloser {
	type chunk struct {
		data []byte
		at   time.Time
		err  error
	}
	chunks := make(chan chunk, 1024)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := body.Read(buf)
			chunks <- chunk{buf[:n], time.Now(), err}
			if err != nil {
				return
			}
		}
	}()
	pr, pw := io.Pipe()
	go func() {
		for c := range chunks {
			time.Sleep(time.Until(c.at.Add(lag)))
			if _, err := pw.Write(c.data); err != nil || c.err != nil {
				pw.CloseWithError(cmp.Or(err, c.err))
				body.Close()
				return
			}
		}
	}()
	return readCloser{Reader: pr, close: func() error { pr.Close(); return body.Close() }}
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// replicasCounted is the ferry_gateway_replicas gauge of one gateway.
func replicasCounted(t *testing.T, registry *prometheus.Registry) float64 {
	t.Helper()
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "ferry_gateway_replicas" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}

func waitReplicasCounted(t *testing.T, want float64, registries ...*prometheus.Registry) {
	t.Helper()
	eventually(t, 4*replicaLease, func() (bool, string) {
		for i, r := range registries {
			if got := replicasCounted(t, r); got != want {
				return false, fmt.Sprintf("gateway %d counts %v replicas, want %v", i, got, want)
			}
		}
		return true, ""
	})
}

// TestContainerConcurrencyAcrossGatewayReplicas: with two gateway replicas taking
// load at once, a containerConcurrency 1 Revision's pods never have more than one
// request at a time in all (each replica used to allow one of its own), every request
// is answered, and when one replica goes the other takes over its share without a
// restart.
func TestContainerConcurrencyAcrossGatewayReplicas(t *testing.T) {
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	farm := newPodFarm(t, 100*time.Millisecond)
	gwA, regA := startReplicaFerry(t, ns, farm)
	gwB, regB, stopB := startGatewayReplica(t, ns, farm, 0)
	waitReplicasCounted(t, 2, regA, regB)

	svc := autoscaled(ns, "shared", map[string]string{"autoscaling.knative.dev/min-scale": "2", "autoscaling.knative.dev/max-scale": "2"})
	svc.Spec.Template.Spec.ContainerConcurrency = ptr(int64(1))
	revision, host := createReady(t, svc)
	eventually(t, readyTimeout, func() (bool, string) {
		_, ready := scaleOf(t, ns, revision)
		return ready == 2, fmt.Sprintf("%d of 2 pods ready", ready)
	})

	// Eight clients on each gateway, for two seconds.
	load := func(gateways ...string) []string {
		var mu sync.Mutex
		var failures []string
		var wg sync.WaitGroup
		end := time.Now().Add(2 * time.Second)
		for _, gw := range gateways {
			for range 8 {
				wg.Go(func() {
					for time.Now().Before(end) {
						code, body, _, err := request(gwClient, gw, host)
						if err != nil || code != http.StatusOK {
							mu.Lock()
							failures = append(failures, fmt.Sprintf("%s: %d %q %v", gw, code, body, err))
							mu.Unlock()
						}
					}
				})
			}
		}
		wg.Wait()
		return failures
	}
	if failures := load(gwA, gwB); len(failures) > 0 {
		t.Errorf("%d requests failed, first: %s", len(failures), failures[0])
	}
	most, pods := farm.maxInFlight()
	if most != 1 {
		t.Errorf("a pod had %d requests at once from two gateway replicas; containerConcurrency is 1", most)
	}
	served := servedPerPod(farm)
	t.Logf("two replicas: %d pods served %v requests, never more than %d at once", pods, served, most)

	// One replica stops: its Lease goes with it, and the other may use every slot.
	stopB()
	waitReplicasCounted(t, 1, regA)
	if failures := load(gwA); len(failures) > 0 {
		t.Errorf("%d requests failed, first: %s", len(failures), failures[0])
	}
	after := servedPerPod(farm)
	for ip, n := range after {
		if n <= served[ip] {
			t.Errorf("alone, gateway A sent pod %s nothing in 2 s (served %d before, %d after): it still keeps to its share", ip, served[ip], n)
		}
	}
	if most, _ := farm.maxInFlight(); most != 1 {
		t.Errorf("a pod had %d requests at once; containerConcurrency is 1", most)
	}
}

func servedPerPod(farm *podFarm) map[string]int64 {
	farm.mu.Lock()
	defer farm.mu.Unlock()
	served := map[string]int64{}
	for ip, p := range farm.pods {
		served[ip] = p.served.Load()
	}
	return served
}

// TestKIngressReadyWaitsForEveryGatewayReplica: a live gateway replica that has not
// programmed a KIngress keeps it from Ready. The replica is the test itself, keeping a
// Lease as a replica does (one whose informer has not delivered the KIngress yet): the
// Lease is all the other replicas see of it. Ready follows when it records the
// generation, or when its Lease runs out.
func TestKIngressReadyWaitsForEveryGatewayReplica(t *testing.T) {
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	farm := newPodFarm(t, 0)
	gwA, regA := startReplicaFerry(t, ns, farm)
	ctx := context.Background()
	now := metav1.NewMicroTime(time.Now())
	lagging := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ferry-gateway-lagging", Labels: map[string]string{gateway.ReplicaLabel: "true"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr("lagging"), LeaseDurationSeconds: ptr(int32(60)), RenewTime: &now},
	}
	if err := testClient.Create(ctx, lagging); err != nil {
		t.Fatal(err)
	}
	waitReplicasCounted(t, 2, regA)

	svc := autoscaled(ns, "waits", nil)
	if err := testClient.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	ing := &netv1alpha1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svc.Name}}
	waitCondition(t, testClient, ing, netv1alpha1.IngressConditionLoadBalancerReady, corev1.ConditionUnknown, netv1alpha1.ReasonUninitialized, readyTimeout)
	if c := ing.Status.GetCondition(netv1alpha1.IngressConditionNetworkConfigured); !c.IsTrue() {
		t.Errorf("NetworkConfigured %+v: gateway A has programmed the KIngress", c)
	}
	// Gateway A serves it already; the KIngress and the Service still wait.
	time.Sleep(time.Second)
	waitCondition(t, testClient, ing, netv1alpha1.IngressConditionLoadBalancerReady, corev1.ConditionUnknown, netv1alpha1.ReasonUninitialized, time.Second)
	if get(t, testClient, ns, svc.Name, svc); svc.Status.GetCondition(duck.ConditionReady).IsTrue() {
		t.Error("the Service is Ready while a gateway replica does not serve its KIngress")
	}
	if code, body, _, err := request(gwClient, gwA, hostOf(t, svc)); err != nil || code != http.StatusOK {
		t.Errorf("gateway A: %d %q %v", code, body, err)
	}

	// The lagging replica catches up and says so in its Lease.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, gateway.ServesAnnotation,
		fmt.Sprintf(`{"%s/%s":{"uid":%q,"generation":%d}}`, ns, ing.Name, ing.UID, ing.Generation))
	if err := testClient.Patch(ctx, lagging, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, testClient, ing, duck.ConditionReady, corev1.ConditionTrue, "", 10*time.Second)
	waitCondition(t, testClient, svc, duck.ConditionReady, corev1.ConditionTrue, "", readyTimeout)

	// A second Service while the replica has stopped renewing (killed): Ready once its
	// Lease has run out, not before.
	renewed := time.Now()
	lagging.Spec.RenewTime = ptr(metav1.NewMicroTime(renewed))
	lagging.Spec.LeaseDurationSeconds = ptr(int32(4))
	if err := testClient.Update(ctx, lagging); err != nil {
		t.Fatal(err)
	}
	second := autoscaled(ns, "outlives", nil)
	if err := testClient.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	ing2 := &netv1alpha1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: second.Name}}
	waitCondition(t, testClient, ing2, duck.ConditionReady, corev1.ConditionTrue, "", readyTimeout)
	if waited := time.Since(renewed); waited < 4*time.Second {
		t.Errorf("Ready %v after the lagging replica's last renewal, within its 4 s Lease", waited)
	}
	waitReplicasCounted(t, 1, regA)
}

// TestRequestRightAfterReadyRoutesThroughEveryReplica: with two gateway replicas, a
// request sent the moment a Service turns Ready is routed by either one, without a
// retry, even when one replica's watch of KIngresses lags a second behind the other's
// (when the first replica to program a KIngress marked it Ready, the lagging one
// answered 404 for a second).
func TestRequestRightAfterReadyRoutesThroughEveryReplica(t *testing.T) {
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	farm := newPodFarm(t, 0)
	gwA, regA := startReplicaFerry(t, ns, farm)
	gwB, regB, _ := startGatewayReplica(t, ns, farm, time.Second)
	waitReplicasCounted(t, 2, regA, regB)
	ctx := context.Background()
	before, err := scale.ScrapeRequestTotals(ctx, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	const services = 5
	for i := range services {
		svc := autoscaled(ns, fmt.Sprintf("at-once-%d", i), nil)
		if err := testClient.Create(ctx, svc); err != nil {
			t.Fatal(err)
		}
		// Polled as tightly as the helpers go (50 ms): the requests follow the first
		// Ready seen.
		waitCondition(t, testClient, svc, duck.ConditionReady, corev1.ConditionTrue, "", readyTimeout)
		host := hostOf(t, svc)
		for _, gw := range []string{gwA, gwB} {
			if code, body, _, err := request(gwClient, gw, host); err != nil || code != http.StatusOK {
				t.Errorf("%s right after Ready, through %s: %d %q %v", svc.Name, gw, code, body, err)
			}
		}
	}
	// What Ready from both replicas cost in writes (every client's: only the two
	// gateways write KIngress status and these Leases here).
	time.Sleep(time.Second)
	after, err := scale.ScrapeRequestTotals(ctx, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	writes := after.Sub(before)
	status := writes[scale.WriteKey{Group: "networking.internal.knative.dev", Resource: "ingresses", Subresource: "status", Verb: "PUT"}]
	leases := writes[scale.WriteKey{Group: "coordination.k8s.io", Resource: "leases", Verb: "PATCH"}]
	t.Logf("%d KIngresses in %v: %d status PUTs (%.1f per KIngress), %d Lease PATCHes (renewals every %v included)",
		services, time.Since(start).Round(time.Millisecond), status, float64(status)/services, leases, replicaLease/3)
}

// hostOf is the host of svc's URL, once its status has one.
func hostOf(t *testing.T, svc *v1.Service) string {
	t.Helper()
	var host string
	eventually(t, readyTimeout, func() (bool, string) {
		get(t, testClient, svc.Namespace, svc.Name, svc)
		u, err := url.Parse(svc.Status.URL)
		if err != nil || u.Host == "" {
			return false, fmt.Sprintf("Service URL %q", svc.Status.URL)
		}
		host = u.Host
		return true, ""
	})
	return host
}
