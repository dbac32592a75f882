package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/internal/gateway"
	"github.com/ferry-serving/ferry/internal/localcluster"
)

// startGateway runs the gateway alone in a manager of its own, listening on free
// loopback ports, until the test ends.
func startGateway(t *testing.T, ns string) *gateway.Gateway {
	t.Helper()
	mgr := newTestManager(t, rest.CopyConfig(testConfig), ns)
	gw := gateway.New(gateway.Options{
		ExternalAddr: "127.0.0.1:0",
		LocalAddr:    "127.0.0.1:0",
		Registry:     prometheus.NewRegistry(),
		DialContext:  dialPodOnLoopback,
		// A request for a revision without a ready endpoint is held this long,
		// then answered 504.
		RequestTimeout: 2 * time.Second,
	})
	if err := gw.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	runTestManager(t, mgr)
	return gw
}

// podIP is the address the tests' EndpointSlices give every backend pod: EndpointSlices
// may not hold loopback addresses, so the slices say podIP:port and the gateway's dialer
// turns that into 127.0.0.1:port, where the backend listens. podIP is in TEST-NET-1
// (RFC 5737) and is never dialled.
const podIP = "192.0.2.1"

func dialPodOnLoopback(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if host != podIP {
		return nil, fmt.Errorf("test dialer: %s is not a test pod", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
}

// revisionBackend is a real HTTP server standing in for a revision's pod: it answers
// with its revision name, and echoes WebSocket messages on /ws.
func revisionBackend(t *testing.T, revision string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/ws", websocket.Handler(func(ws *websocket.Conn) { io.Copy(ws, ws) }))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, revision) })
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// exposeRevision creates a revision's Service and hand-made EndpointSlices that point
// at the backends. The Service has no selector and the slices another manager, so
// kube-controller-manager leaves both alone.
func exposeRevision(t *testing.T, ns, revision string, backends ...*httptest.Server) {
	t.Helper()
	ctx := context.Background()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: revision, Labels: map[string]string{"serving.knative.dev/revision": revision}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8012)}}},
	}
	if err := testClient.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	for _, b := range backends {
		_, port, err := net.SplitHostPort(b.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		setEndpoints(t, ns, revision, net.JoinHostPort(podIP, port), nil)
	}
}

// setEndpoints creates or replaces the EndpointSlice of revision for one address;
// nodeName places the endpoint on a node.
func setEndpoints(t *testing.T, ns, revision, addr string, nodeName *string) {
	t.Helper()
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portStr)
	name, ready, port32 := "http", true, int32(port)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", revision, port), Labels: map[string]string{
			discoveryv1.LabelServiceName: revision,
			discoveryv1.LabelManagedBy:   "ferry-test",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port32}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}, NodeName: nodeName}},
	}
	if err := testClient.Create(context.Background(), slice); err != nil {
		t.Fatal(err)
	}
}

type gwSplit struct {
	revision string
	percent  int
}

func gwPath(splits ...gwSplit) netv1alpha1.HTTPIngressPath {
	p := netv1alpha1.HTTPIngressPath{}
	for _, s := range splits {
		p.Splits = append(p.Splits, netv1alpha1.IngressBackendSplit{
			IngressBackend: netv1alpha1.IngressBackend{ServiceName: s.revision, ServicePort: intstr.FromInt32(80)},
			Percent:        s.percent,
		})
	}
	return p
}

func gwRule(visibility netv1alpha1.IngressVisibility, host string, p netv1alpha1.HTTPIngressPath) netv1alpha1.IngressRule {
	p.Splits = append([]netv1alpha1.IngressBackendSplit(nil), p.Splits...)
	return netv1alpha1.IngressRule{Hosts: []string{host}, Visibility: visibility, HTTP: &netv1alpha1.HTTPIngressRuleValue{Paths: []netv1alpha1.HTTPIngressPath{p}}}
}

func createIngress(t *testing.T, ns, name string, rules ...netv1alpha1.IngressRule) *netv1alpha1.Ingress {
	t.Helper()
	for i := range rules {
		for j := range rules[i].HTTP.Paths {
			for k := range rules[i].HTTP.Paths[j].Splits {
				rules[i].HTTP.Paths[j].Splits[k].ServiceNamespace = ns
			}
		}
	}
	ing := &netv1alpha1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Annotations: map[string]string{netv1alpha1.IngressClassAnnotationKey: netv1alpha1.IngressClass}},
		Spec: netv1alpha1.IngressSpec{Rules: rules},
	}
	if err := testClient.Create(context.Background(), ing); err != nil {
		t.Fatal(err)
	}
	return ing
}

// waitIngress polls the API server until ing reports Ready (or, with a reason, False
// with that reason) for its current generation, and returns it as read then.
func waitIngress(t *testing.T, ing *netv1alpha1.Ingress, wantReason string) *netv1alpha1.Ingress {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := &netv1alpha1.Ingress{}
		if err := testClient.Get(context.Background(), client.ObjectKeyFromObject(ing), got); err != nil {
			t.Fatal(err)
		}
		ready := got.Status.GetCondition(duck.ConditionReady)
		if got.Status.ObservedGeneration == got.Generation && ready != nil {
			if wantReason == "" && ready.IsTrue() || wantReason != "" && ready.IsFalse() && ready.Reason == wantReason {
				return got
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("ingress %s: generation %d, status %+v", ing.Name, got.Generation, got.Status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gwClient keeps connections alive across the many requests of a test.
var gwClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 10 * time.Second}

// send makes one request through a listener and returns the status and body.
func send(t *testing.T, listener, host, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+listener+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	res, err := gwClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(body)
}

// tally sends n requests and counts the answers by body; any status but 200 fails.
func tally(t *testing.T, listener, host string, n int) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for range n {
		code, body := send(t, listener, host, "/")
		if code != http.StatusOK {
			t.Fatalf("%s: %d %q", host, code, body)
		}
		counts[body]++
	}
	return counts
}

func TestGatewaySplitsTrafficAndRoutesTags(t *testing.T) {
	ns := testNamespace(t)
	gw := startGateway(t, ns)
	exposeRevision(t, ns, "hello-00001", revisionBackend(t, "hello-00001"))
	exposeRevision(t, ns, "hello-00002", revisionBackend(t, "hello-00002"))
	host := "hello." + ns + ".example.com"
	tagHost := "latest-hello." + ns + ".example.com"
	ing := createIngress(t, ns, "hello",
		gwRule(netv1alpha1.IngressVisibilityExternalIP, host, gwPath(gwSplit{"hello-00001", 90}, gwSplit{"hello-00002", 10})),
		gwRule(netv1alpha1.IngressVisibilityExternalIP, tagHost, gwPath(gwSplit{"hello-00002", 100})),
	)
	ready := waitIngress(t, ing, "")
	if lb := ready.Status.PublicLoadBalancer; lb == nil || lb.Ingress[0].Domain != "ferry-gateway.ferry-system.svc.cluster.local" {
		t.Errorf("public load balancer %+v", lb)
	}
	waitAnswers(t, gw.ExternalAddr(), host, "hello-00001", "hello-00002")

	const n = 2000
	counts := tally(t, gw.ExternalAddr(), host, n)
	if share := 100 * float64(counts["hello-00002"]) / n; share < 7 || share > 13 {
		t.Errorf("hello-00002 got %.1f%% of %d requests (%v), want 10±3", share, n, counts)
	}
	if counts := tally(t, gw.ExternalAddr(), tagHost, 200); counts["hello-00002"] != 200 {
		t.Errorf("tag host answers: %v", counts)
	}
}

func TestGatewayReadyMeansProgrammed(t *testing.T) {
	ns := testNamespace(t)
	gw := startGateway(t, ns)
	exposeRevision(t, ns, "app-00001", revisionBackend(t, "app-00001"))
	exposeRevision(t, ns, "app-00002", revisionBackend(t, "app-00002"))
	host := "app." + ns + ".example.com"
	ing := createIngress(t, ns, "app", gwRule(netv1alpha1.IngressVisibilityExternalIP, host, gwPath(gwSplit{"app-00001", 50}, gwSplit{"app-00002", 50})))
	ing = waitIngress(t, ing, "")
	waitAnswers(t, gw.ExternalAddr(), host, "app-00001", "app-00002")

	// Flip the route back and forth; the moment the status says Ready for the new
	// generation, requests must already follow it.
	for i := range 6 {
		want := []string{"app-00002", "app-00001"}[i%2]
		ing.Spec.Rules[0].HTTP.Paths[0].Splits = ing.Spec.Rules[0].HTTP.Paths[0].Splits[:1]
		ing.Spec.Rules[0].HTTP.Paths[0].Splits[0].ServiceName = want
		ing.Spec.Rules[0].HTTP.Paths[0].Splits[0].Percent = 100
		if err := testClient.Update(context.Background(), ing); err != nil {
			t.Fatal(err)
		}
		ing = waitIngress(t, ing, "")
		if counts := tally(t, gw.ExternalAddr(), host, 20); counts[want] != 20 {
			t.Fatalf("generation %d is Ready but answers were %v, want all %s", ing.Generation, counts, want)
		}
	}
}

func TestGatewayReprogramsUnderLoadWithoutDroppingRequests(t *testing.T) {
	ns := testNamespace(t)
	gw := startGateway(t, ns)
	exposeRevision(t, ns, "load-00001", revisionBackend(t, "load-00001"))
	exposeRevision(t, ns, "load-00002", revisionBackend(t, "load-00002"))
	host := "load." + ns + ".example.com"
	ing := createIngress(t, ns, "load", gwRule(netv1alpha1.IngressVisibilityExternalIP, host, gwPath(gwSplit{"load-00001", 50}, gwSplit{"load-00002", 50})))
	ing = waitIngress(t, ing, "")
	waitAnswers(t, gw.ExternalAddr(), host, "load-00001", "load-00002")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent, failed atomic.Int64
	var firstFailure atomic.Value
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("GET", "http://"+gw.ExternalAddr()+"/", nil)
				req.Host = host
				res, err := gwClient.Do(req)
				sent.Add(1)
				if err != nil {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, err.Error())
					continue
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, res.Status)
				}
			}
		}()
	}
	for _, percents := range [][2]int{{0, 100}, {50, 50}, {100, 0}, {10, 90}, {0, 100}} {
		splits := ing.Spec.Rules[0].HTTP.Paths[0].Splits
		splits[0].Percent, splits[1].Percent = percents[0], percents[1]
		if err := testClient.Update(context.Background(), ing); err != nil {
			t.Fatal(err)
		}
		ing = waitIngress(t, ing, "")
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if failed.Load() != 0 || sent.Load() < 100 {
		t.Errorf("%d of %d requests failed (first: %v)", failed.Load(), sent.Load(), firstFailure.Load())
	}
	if counts := tally(t, gw.ExternalAddr(), host, 50); counts["load-00002"] != 50 {
		t.Errorf("after the last reprogramming: %v", counts)
	}
}

func TestGatewayErrorsAndVisibility(t *testing.T) {
	ns := testNamespace(t)
	gw := startGateway(t, ns)
	exposeRevision(t, ns, "web-00001", revisionBackend(t, "web-00001"))
	exposeRevision(t, ns, "idle-00001") // a Service without endpoints: requests are held, then 504
	external := "web." + ns + ".example.com"
	local := "web." + ns + ".svc.cluster.local"
	idle := "idle." + ns + ".example.com"
	web := createIngress(t, ns, "web",
		gwRule(netv1alpha1.IngressVisibilityExternalIP, external, gwPath(gwSplit{"web-00001", 100})),
		gwRule(netv1alpha1.IngressVisibilityClusterLocal, local, gwPath(gwSplit{"web-00001", 100})),
	)
	waitIngress(t, web, "")
	waitAnswers(t, gw.ExternalAddr(), external, "web-00001")
	waitIngress(t, createIngress(t, ns, "idle", gwRule(netv1alpha1.IngressVisibilityExternalIP, idle, gwPath(gwSplit{"idle-00001", 100}))), "")

	for _, tc := range []struct {
		listener, host string
		code           int
		body           string
	}{
		{listener: gw.ExternalAddr(), host: external, code: 200, body: "web-00001"},
		{listener: gw.ExternalAddr(), host: "nobody." + ns + ".example.com", code: 404, body: "ferry: no route for host"},
		{listener: gw.ExternalAddr(), host: idle, code: 504, body: "ferry: revision idle-00001 did not get a ready pod within 2s"},
		{listener: gw.ExternalAddr(), host: local, code: 404, body: "ferry: no route for host"},
		{listener: gw.LocalAddr(), host: local, code: 200, body: "web-00001"},
		{listener: gw.LocalAddr(), host: external, code: 200, body: "web-00001"},
	} {
		if code, body := send(t, tc.listener, tc.host, "/"); code != tc.code || !strings.HasPrefix(body, tc.body) {
			t.Errorf("%s via %s: %d %q, want %d %q", tc.host, tc.listener, code, body, tc.code, tc.body)
		}
	}

	// An ingress that claims a host served by an older one fails alone; so does one
	// with a bad split; the first keeps serving. creationTimestamp has one-second
	// resolution (equal ones fall back to namespace/name), so let a second pass.
	time.Sleep(1100 * time.Millisecond)
	waitIngress(t, createIngress(t, ns, "thief", gwRule(netv1alpha1.IngressVisibilityExternalIP, external, gwPath(gwSplit{"idle-00001", 100}))), netv1alpha1.ReasonHostConflict)
	waitIngress(t, createIngress(t, ns, "bad", gwRule(netv1alpha1.IngressVisibilityExternalIP, "bad."+ns+".example.com",
		gwPath(gwSplit{"web-00001", 60}, gwSplit{"idle-00001", 60}))), netv1alpha1.ReasonInvalidSplit)
	if code, body := send(t, gw.ExternalAddr(), external, "/"); code != 200 || body != "web-00001" {
		t.Errorf("after the failed ingresses: %d %q", code, body)
	}

	// Deleting the older ingress hands the host to the one that wanted it.
	if err := testClient.Delete(context.Background(), web); err != nil {
		t.Fatal(err)
	}
	waitIngress(t, &netv1alpha1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "thief"}}, "")
	if code, body := send(t, gw.ExternalAddr(), external, "/"); code != 504 || !strings.Contains(body, "idle-00001") {
		t.Errorf("after the handover: %d %q", code, body)
	}
}

func TestGatewaySimulatedPod(t *testing.T) {
	ns := testNamespace(t)
	gw := startGateway(t, ns)
	exposeRevision(t, ns, "sim-00001")
	// An endpoint on kwok's node: nothing listens there, and the gateway must not try.
	node := localcluster.NodeName
	setEndpoints(t, ns, "sim-00001", "10.244.0.5:8012", &node)
	host := "sim." + ns + ".example.com"
	waitIngress(t, createIngress(t, ns, "sim", gwRule(netv1alpha1.IngressVisibilityExternalIP, host, gwPath(gwSplit{"sim-00001", 100}))), "")

	want := "Hello from revision sim-00001 (pod 10.244.0.5 is simulated by kwok; no process serves it)\n"
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := send(t, gw.ExternalAddr(), host, "/")
		if code == 200 && body == want {
			return
		}
		// The endpoints reconciler may not have seen the slice yet: the request
		// is held, and answered 504 if it still has not after RequestTimeout.
		if time.Now().After(deadline) || !strings.Contains(body, "did not get a ready pod") {
			t.Fatalf("%d %q, want 200 %q", code, body, want)
		}
	}
}

func TestGatewayWebSocket(t *testing.T) {
	ns := testNamespace(t)
	gw := startGateway(t, ns)
	exposeRevision(t, ns, "ws-00001", revisionBackend(t, "ws-00001"))
	host := "ws." + ns + ".example.com"
	waitIngress(t, createIngress(t, ns, "ws", gwRule(netv1alpha1.IngressVisibilityExternalIP, host, gwPath(gwSplit{"ws-00001", 100}))), "")
	waitAnswers(t, gw.ExternalAddr(), host, "ws-00001")

	cfg, err := websocket.NewConfig("ws://"+host+"/ws", "http://"+host)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", gw.ExternalAddr())
	if err != nil {
		t.Fatal(err)
	}
	ws, err := websocket.NewClient(cfg, conn)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for _, msg := range []string{"hello", "through the gateway"} {
		if err := websocket.Message.Send(ws, msg); err != nil {
			t.Fatal(err)
		}
		var got string
		if err := websocket.Message.Receive(ws, &got); err != nil || got != msg {
			t.Fatalf("echo %q, %v; want %q", got, err, msg)
		}
	}
}

// waitAnswers sends requests until every revision in want has answered. Ready says
// the routes are live; the endpoints reconciler follows EndpointSlices on its own
// schedule, so a test that must not see a 503 first waits for the endpoints too.
func waitAnswers(t *testing.T, listener, host string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	seen := map[string]bool{}
	for {
		code, body := send(t, listener, host, "/")
		if code == http.StatusOK {
			seen[body] = true
		}
		missing := 0
		for _, w := range want {
			if !seen[w] {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: saw %v, want all of %v; last answer %d %q", host, seen, want, code, body)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
