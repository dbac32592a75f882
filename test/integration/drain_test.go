package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/gateway"
)

// kwok runs no containers and ignores lifecycle hooks: it deletes a pod the moment it
// has a deletionTimestamp. A kubeletFarm plays the kubelet's part of a pod's
// termination, for the pods of one namespace, with an in-process server as each pod's
// process:
//   - it puts a finalizer of its own on every pod, so that a deleted pod stays in the
//     API, Terminating and still Ready, until it has terminated (a kubelet keeps it
//     the same way until its containers have stopped);
//   - on the deletionTimestamp it runs the preStop sleep the pod's spec gives (bounded by
//     terminationGracePeriodSeconds, as the kubelet bounds it), then "sends SIGTERM": the
//     server dies on the spot, cutting whatever it still serves, and dials to the pod's
//     address are refused from then on; then it removes the finalizer.
//
// So a request is lost when a pod still has one at SIGTERM. What this cannot show is
// that the gateway sends a Terminating pod no new request: kwok gives a deleted pod's
// address to the next pod while the first is still Terminating, and a request to the
// old pod's address reaches the new pod's process. TestTerminatingPodDrains in
// internal/gateway shows that part.
type kubeletFarm struct {
	t     *testing.T
	cs    kubernetes.Interface
	ns    string
	delay time.Duration

	mu      sync.Mutex
	running map[string]*farmProcess // by pod IP
	killed  map[string]bool         // pod IPs whose process got SIGTERM and no successor yet
	stopped map[types.UID]bool      // pods whose termination began
	// terminations runs each pod's termination; leaving counts those under way.
	terminations sync.WaitGroup
	leaving      atomic.Int64
	// terminated counts the pods that drained while the API showed them Terminating.
	terminated atomic.Int64
}

type farmProcess struct {
	uid types.UID
	srv *httptest.Server
}

const kubeletFinalizer = "ferry.test/kubelet"

func newKubeletFarm(t *testing.T, ns string, delay time.Duration) *kubeletFarm {
	cs, err := kubernetes.NewForConfig(testConfig)
	if err != nil {
		t.Fatal(err)
	}
	f := &kubeletFarm{t: t, cs: cs, ns: ns, delay: delay,
		running: map[string]*farmProcess{}, killed: map[string]bool{}, stopped: map[types.UID]bool{}}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { f.observe(o.(*corev1.Pod), false) },
		UpdateFunc: func(_, o any) { f.observe(o.(*corev1.Pod), false) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if p, ok := o.(*corev1.Pod); ok {
				f.observe(p, true)
			}
		},
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
		f.terminations.Wait()
		// Let the namespace go: pods that never terminated keep the finalizer.
		pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err == nil {
			for _, p := range pods.Items {
				f.release(&p)
			}
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, p := range f.running {
			p.srv.Close()
		}
	})
	return f
}

// observe plays the kubelet for pod: it starts the pod's process once the pod has an
// address, and terminates it once it is deleted.
func (f *kubeletFarm) observe(pod *corev1.Pod, gone bool) {
	if !gone && pod.DeletionTimestamp == nil && !hasFinalizer(pod) {
		patch := fmt.Appendf(nil, `{"metadata":{"finalizers":[%q],"resourceVersion":%q}}`, kubeletFinalizer, pod.ResourceVersion)
		// Not in the handler's way: the next pods' processes must start without delay.
		// A conflict or a pod already gone: the next event tells.
		go f.cs.CoreV1().Pods(f.ns).Patch(context.Background(), pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	ip := pod.Status.PodIP
	if ip == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if pod.DeletionTimestamp == nil && !gone {
		if p := f.running[ip]; p == nil || p.uid != pod.UID {
			if p != nil {
				p.srv.Close()
			}
			f.running[ip] = &farmProcess{uid: pod.UID, srv: httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(f.delay)
				io.WriteString(w, "pod "+ip)
			}))}
			delete(f.killed, ip)
		}
		return
	}
	if f.stopped[pod.UID] {
		return
	}
	f.stopped[pod.UID] = true
	f.terminations.Add(1)
	f.leaving.Add(1)
	go f.terminate(pod.DeepCopy(), !gone && hasFinalizer(pod))
}

// terminate runs the preStop sleep of pod's serving container, bounded by its grace
// period, then kills its process and lets the pod go.
func (f *kubeletFarm) terminate(pod *corev1.Pod, terminating bool) {
	defer f.terminations.Done()
	defer f.leaving.Add(-1)
	var sleep int64
	if l := pod.Spec.Containers[0].Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Sleep != nil {
		sleep = l.PreStop.Sleep.Seconds
	}
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	sleep = min(sleep, grace)
	time.Sleep(time.Duration(sleep) * time.Second)

	ip := pod.Status.PodIP
	f.mu.Lock()
	p := f.running[ip]
	if p != nil && p.uid == pod.UID {
		delete(f.running, ip)
		f.killed[ip] = true
	}
	f.mu.Unlock()
	if p != nil && p.uid == pod.UID {
		// SIGTERM to an app that exits at once: open connections are cut.
		p.srv.CloseClientConnections()
		p.srv.Close()
	}
	if terminating {
		f.terminated.Add(1)
		// A kubelet reports the containers stopped before the pod goes from the API: the
		// gateway must not count on the deletion to stop sending it requests.
		time.Sleep(time.Second)
	}
	f.release(pod)
}

// release removes the farm's finalizer from pod.
func (f *kubeletFarm) release(pod *corev1.Pod) {
	if !hasFinalizer(pod) {
		return
	}
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := f.cs.CoreV1().Pods(f.ns).Patch(context.Background(), pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		f.t.Errorf("releasing pod %s: %v", pod.Name, err)
	}
}

// dial connects to the process of the pod at addr's IP. The gateway may know a pod
// before the farm has started its process (their watches race), so a dial waits up
// to 2 s for one. A killed pod's address refuses after 200 ms without a successor:
// kwok gives a deleted pod's address to the next pod, which the gateway may see
// first.
func (f *kubeletFarm) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for ; ; time.Sleep(5 * time.Millisecond) {
		f.mu.Lock()
		p, killed := f.running[host], f.killed[host]
		f.mu.Unlock()
		waited := time.Since(start)
		switch {
		case p != nil:
			if waited > 100*time.Millisecond {
				f.t.Logf("dial %s waited %v for the pod's process", addr, waited.Round(time.Millisecond))
			}
			var d net.Dialer
			return d.DialContext(ctx, network, p.srv.Listener.Addr().String())
		case killed && waited > 200*time.Millisecond:
			f.t.Logf("dial %s: refused, the pod got SIGTERM", addr)
			return nil, fmt.Errorf("dial %s: connection refused (the pod got SIGTERM)", addr)
		case waited > 2*time.Second:
			f.t.Logf("dial %s: no process for this pod", addr)
			return nil, fmt.Errorf("dial %s: no process for this pod", addr)
		}
	}
}

func hasFinalizer(pod *corev1.Pod) bool {
	for _, f := range pod.Finalizers {
		if f == kubeletFinalizer {
			return true
		}
	}
	return false
}

// TestNoRequestLostOnScaleDown: under a steady load through the gateway, a Revision
// scaled between 1 and 3 pods ten times (each change of its scale annotations also
// rolls its Deployment, as in Knative), then replaced by a new Revision and scaled to
// zero, loses no request, though a pod's process dies at SIGTERM: pods leave with the
// preStop sleep and grace period Ferry gives them.
func TestNoRequestLostOnScaleDown(t *testing.T) {
	const clients, cycles = 8, 10
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	farm := newKubeletFarm(t, ns, 50*time.Millisecond)
	_, gw := startAutoscalingWith(t, nil, gateway.Options{DialContext: farm.dial, DialSimulatedPods: true, Registry: prometheus.NewRegistry()})
	scale := func(n int) map[string]string {
		return map[string]string{"autoscaling.knative.dev/min-scale": fmt.Sprint(n), "autoscaling.knative.dev/max-scale": fmt.Sprint(n)}
	}
	svc := autoscaled(ns, "steady", scale(1))
	// The drain waits for the Revision's timeout: a short one keeps the test short, but
	// not so short that a loaded machine's pauses make 50 ms requests time out.
	svc.Spec.Template.Spec.TimeoutSeconds = ptr[int64](2)
	revision, host := createReady(t, svc)

	var ok, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, body, _, err := request(c, gw, host)
				if err != nil || code != http.StatusOK {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("%d %q %v", code, body, err))
					continue
				}
				ok.Add(1)
			}
		}()
	}
	// Pods of the revision that are not terminating, and how many are ready.
	pods := func(rev string) (int, int) {
		list := &corev1.PodList{}
		if err := testClient.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{v1.RevisionLabelKey: rev}); err != nil {
			t.Fatal(err)
		}
		var all, ready int
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				all++
				if podutil.IsPodReady(&p) {
					ready++
				}
			}
		}
		return all, ready
	}
	annotate := func(annotations map[string]string) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			rev := &v1.Revision{}
			if err := testClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: revision}, rev); err != nil {
				return err
			}
			for k, v := range annotations {
				rev.Annotations[k] = v
			}
			return testClient.Update(context.Background(), rev)
		}); err != nil {
			t.Fatal(err)
		}
	}
	setScale := func(n int) {
		t.Helper()
		annotate(scale(n))
		eventually(t, 30*time.Second, func() (bool, string) {
			all, ready := pods(revision)
			return all == n && ready == n, fmt.Sprintf("%d pods (%d ready), want %d", all, ready, n)
		})
	}
	start := time.Now()
	for range cycles {
		setScale(3)
		time.Sleep(300 * time.Millisecond)
		setScale(1)
		time.Sleep(300 * time.Millisecond)
	}
	t.Logf("%d scale cycles in %v", cycles, time.Since(start).Round(time.Millisecond))

	// A new Revision takes all the traffic; the old one, free to go to zero, has its
	// last pod leave after a stable window without requests.
	annotate(map[string]string{"autoscaling.knative.dev/min-scale": "0", "autoscaling.knative.dev/max-scale": "0"})
	updateService(t, testClient, ns, svc.Name, func(s *v1.Service) { s.Spec.Template.ObjectMeta.Annotations["ferry.test/generation"] = "2" })
	eventually(t, 60*time.Second, func() (bool, string) {
		if err := testClient.Get(context.Background(), client.ObjectKeyFromObject(svc), svc); err != nil {
			return false, err.Error()
		}
		all, _ := pods(revision)
		return svc.Status.LatestReadyRevisionName != revision && len(svc.Status.Traffic) == 1 &&
				svc.Status.Traffic[0].RevisionName != revision && all == 0,
			fmt.Sprintf("latest ready %s, traffic %+v, old revision's pods %d", svc.Status.LatestReadyRevisionName, svc.Status.Traffic, all)
	})
	// Keep the load on until every pod that left has got its SIGTERM.
	eventually(t, 60*time.Second, func() (bool, string) {
		list := &corev1.PodList{}
		if err := testClient.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		terminating := 0
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil {
				terminating++
			}
		}
		return terminating == 0 && farm.leaving.Load() == 0,
			fmt.Sprintf("%d pods terminating, %d terminations under way", terminating, farm.leaving.Load())
	})
	close(stop)
	wg.Wait()

	t.Logf("%d requests, %d failed; %d pods drained while Terminating", ok.Load()+failed.Load(), failed.Load(), farm.terminated.Load())
	if failed.Load() > 0 {
		t.Errorf("%d of %d requests failed; first: %v", failed.Load(), ok.Load()+failed.Load(), firstErr.Load())
	}
	// Each scale-down deletes two pods; kwok's deletion must not have let them skip
	// the Terminating state this test is about.
	if n := farm.terminated.Load(); n < 2*cycles {
		t.Errorf("%d pods drained while Terminating, want at least %d", n, 2*cycles)
	}
}
