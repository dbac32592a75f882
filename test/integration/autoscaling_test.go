package integration

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	autoscalingv1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/gateway"
	"github.com/ferry-serving/ferry/internal/manager"
	"github.com/ferry-serving/ferry/internal/reconciler"
)

// The autoscaling tests run Ferry as `ferry up` assembles it: reconcilers, autoscaler
// and gateway in one manager, the gateway reporting load in-process. kwok runs the
// pods; the gateway's dialer sends each pod's address to an in-process server of its
// own (a podFarm), so that what every pod receives can be counted. Revisions use a 6 s
// stable window (the annotation) to keep the tests short.

const testWindow = "6s"

// podFarm stands in for the processes behind kwok's pods.
type podFarm struct {
	// delay is how long each pod takes to answer.
	delay atomic.Int64
	mu    sync.Mutex
	pods  map[string]*farmPod // by pod IP
	// registry holds the gateway's metrics.
	registry *prometheus.Registry
}

type farmPod struct {
	srv                 *httptest.Server
	inflight, maxFlight atomic.Int64
	served              atomic.Int64
}

func newPodFarm(t *testing.T, delay time.Duration) *podFarm {
	f := &podFarm{pods: map[string]*farmPod{}}
	f.delay.Store(int64(delay))
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, p := range f.pods {
			p.srv.Close()
		}
	})
	return f
}

func (f *podFarm) pod(ip string) *farmPod {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.pods[ip]; ok {
		return p
	}
	p := &farmPod{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := p.inflight.Add(1)
		defer p.inflight.Add(-1)
		for m := p.maxFlight.Load(); n > m && !p.maxFlight.CompareAndSwap(m, n); m = p.maxFlight.Load() {
		}
		time.Sleep(time.Duration(f.delay.Load()))
		p.served.Add(1)
		io.WriteString(w, "pod "+ip)
	}))
	f.pods[ip] = p
	return p
}

// dial connects to the in-process server of the pod at addr's IP.
func (f *podFarm) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, network, f.pod(host).srv.Listener.Addr().String())
}

// maxInFlight is the most requests any one pod had at once.
func (f *podFarm) maxInFlight() (int64, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var m int64
	for _, p := range f.pods {
		m = max(m, p.maxFlight.Load())
	}
	return m, len(f.pods)
}

// startAutoscaling runs Ferry with the autoscaler and a gateway whose pods are farm's;
// it returns Ferry and the gateway's external address.
func startAutoscaling(t *testing.T, farm *podFarm) (*manager.Ferry, string) {
	t.Helper()
	return startAutoscalingBusy(t, farm, nil)
}

// startAutoscalingBusy is startAutoscaling with calm saying when no burst of Services
// is on its way to Ready (nil: Ferry's own count).
func startAutoscalingBusy(t *testing.T, farm *podFarm, calm func() <-chan struct{}) (*manager.Ferry, string) {
	t.Helper()
	farm.registry = prometheus.NewRegistry()
	return startAutoscalingWith(t, calm, gateway.Options{DialContext: farm.dial, DialSimulatedPods: true, Registry: farm.registry})
}

// startAutoscalingWith runs Ferry with the autoscaler and a gateway with gw's options,
// on free loopback ports; it returns Ferry and the gateway's external address.
func startAutoscalingWith(t *testing.T, calm func() <-chan struct{}, gw gateway.Options) (*manager.Ferry, string) {
	t.Helper()
	setLoggerOnce.Do(func() { ctrl.SetLogger(logr.New(errorSink{})) })
	gw.ExternalAddr, gw.LocalAddr = "127.0.0.1:0", "127.0.0.1:0"
	f, err := manager.New(rest.CopyConfig(testConfig), manager.Options{
		Reconcilers:        true,
		ReconcilerOptions:  reconciler.Options{Calm: calm},
		Gateway:            &gw,
		SkipNameValidation: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	runManager(t, f)
	return f, f.Gateway.ExternalAddr()
}

// autoscaled is a Service with a 6 s window and the given annotations on its template.
func autoscaled(ns, name string, annotations map[string]string) *v1.Service {
	s := ksvc(ns, name, "ferry.test/"+name)
	s.Spec.Template.ObjectMeta.Annotations = map[string]string{"autoscaling.knative.dev/window": testWindow}
	for k, v := range annotations {
		s.Spec.Template.ObjectMeta.Annotations[k] = v
	}
	return s
}

// createReady creates svc and waits for it to be Ready; it returns its Revision's
// name and its URL's host.
func createReady(t *testing.T, svc *v1.Service) (string, string) {
	t.Helper()
	if err := testClient.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, testClient, svc, duck.ConditionReady, corev1.ConditionTrue, "", 2*time.Minute)
	u, err := url.Parse(svc.Status.URL)
	if err != nil || u.Host == "" {
		t.Fatalf("Service URL %q: %v", svc.Status.URL, err)
	}
	return svc.Status.LatestReadyRevisionName, u.Host
}

// scaleOf reads the revision's Deployment: spec and ready replicas.
func scaleOf(t *testing.T, ns, revision string) (int32, int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	if !get(t, testClient, ns, revision+"-deployment", d) {
		return -1, 0
	}
	spec := int32(1)
	if d.Spec.Replicas != nil {
		spec = *d.Spec.Replicas
	}
	return spec, d.Status.ReadyReplicas
}

// request sends one GET through the gateway; it returns the status, the body and the
// X-Ferry-Activation-Wait header.
func request(client *http.Client, listener, host string) (int, string, string, error) {
	req, err := http.NewRequest("GET", "http://"+listener+"/", nil)
	if err != nil {
		return 0, "", "", err
	}
	req.Host = host
	res, err := client.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return res.StatusCode, string(body), res.Header.Get("X-Ferry-Activation-Wait"), err
}

// readyEndpointAt polls the revision's pods until one is ready (what the gateway
// follows) and sends the time it first saw one.
func readyEndpointAt(ctx context.Context, ns, revision string) <-chan time.Time {
	at := make(chan time.Time, 1)
	go func() {
		for ctx.Err() == nil {
			list := &corev1.PodList{}
			if err := testClient.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{v1.RevisionLabelKey: revision}); err == nil {
				for _, p := range list.Items {
					if p.DeletionTimestamp == nil && p.Status.PodIP != "" && podutil.IsPodReady(&p) {
						at <- time.Now()
						return
					}
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return at
}

// TestAutoscaleToZeroAndBack: an idle Revision goes to zero pods within the stable
// window plus the grace period, staying Ready; the first request wakes one pod, waits
// for it and is answered by it, no later than the pod took to be ready plus a margin.
func TestAutoscaleToZeroAndBack(t *testing.T) {
	const others = 4 // more wake-ups, to measure Ferry's share of a cold start
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	farm := newPodFarm(t, 0)
	_, gw := startAutoscaling(t, farm)

	svc := autoscaled(ns, "sleepy", nil)
	revision, host := createReady(t, svc)
	idleSince := time.Now()
	stayedReady := watchReady(t, svc)
	var more []*v1.Service
	for i := range others {
		s := autoscaled(ns, fmt.Sprintf("sleepy-%d", i), nil)
		createReady(t, s)
		more = append(more, s)
	}
	grace := config.DefaultAutoscaler().ScaleToZeroGracePeriod
	window, _ := time.ParseDuration(testWindow)
	eventually(t, window+grace+2*autoscalerTick, func() (bool, string) {
		spec, ready := scaleOf(t, ns, revision)
		return spec == 0 && ready == 0, fmt.Sprintf("Deployment replicas %d, ready %d", spec, ready)
	})
	t.Logf("idle to zero in %v (window %v + grace %v)", time.Since(idleSince).Round(time.Millisecond), window, grace)

	rev := &v1.Revision{}
	rev.Namespace, rev.Name = ns, revision
	waitCondition(t, testClient, rev, v1.RevisionConditionActive, corev1.ConditionFalse, autoscalingv1alpha1.ReasonNoTraffic, 30*time.Second)
	eventually(t, 10*time.Second, func() (bool, string) {
		get(t, testClient, ns, revision, rev)
		return rev.IsReady() && rev.Status.ActualReplicas != nil && *rev.Status.ActualReplicas == 0,
			fmt.Sprintf("Revision at zero: Ready %v, actualReplicas %v; want Ready with 0", rev.IsReady(), deref(rev.Status.ActualReplicas))
	})
	pa := &autoscalingv1alpha1.PodAutoscaler{}
	pa.Namespace, pa.Name = ns, revision
	waitCondition(t, testClient, pa, autoscalingv1alpha1.PodAutoscalerConditionActive, corev1.ConditionFalse, autoscalingv1alpha1.ReasonNoTraffic, 30*time.Second)
	if pa.Status.DesiredScale == nil || *pa.Status.DesiredScale != 0 {
		t.Errorf("PodAutoscaler desiredScale = %v, want 0", pa.Status.DesiredScale)
	}
	get(t, testClient, ns, svc.Name, svc)
	if !svc.IsReady() {
		t.Errorf("Service at zero is not Ready: %+v", svc.Status.Conditions)
	}

	wakeBefore := histogram(t, ctrlmetrics.Registry, "ferry_autoscaler_wake_seconds")
	wakeUp(t, gw, ns, revision, host)
	if spec, _ := scaleOf(t, ns, revision); spec != 1 {
		t.Errorf("after the first request: %d replicas, want 1", spec)
	}
	waitCondition(t, testClient, rev, v1.RevisionConditionActive, corev1.ConditionTrue, "", 30*time.Second)

	for _, s := range more {
		r, h := s.Status.LatestReadyRevisionName, strings.TrimPrefix(s.Status.URL, "http://")
		eventually(t, window+grace+2*autoscalerTick, func() (bool, string) {
			spec, ready := scaleOf(t, ns, r)
			return spec == 0 && ready == 0, fmt.Sprintf("%s: Deployment replicas %d, ready %d", r, spec, ready)
		})
		wakeUp(t, gw, ns, r, h)
	}
	if lapse := stayedReady(); lapse != "" {
		t.Errorf("the Service left Ready while it scaled to zero and back: %s", lapse)
	}
	wake := histogram(t, ctrlmetrics.Registry, "ferry_autoscaler_wake_seconds").minus(wakeBefore)
	release := histogram(t, farm.registry, "ferry_gateway_release_delay_seconds")
	t.Logf("Ferry's share of %d cold starts: poke to scale write mean %v (%d), pod ready to request released mean %v (%d)",
		1+others, wake.mean(), wake.count, release.mean(), release.count)
	if wake.count < 1+others || release.count < 1+others {
		t.Errorf("wake-ups measured: %d by the autoscaler, %d by the gateway; want %d each", wake.count, release.count, 1+others)
	}
}

// TestScaleToZeroWaitsForABurst: while a burst of Services is on its way to Ready, an
// idle Revision keeps its pod (and its PodAutoscaler stays Active); once the burst has
// drained, it goes to zero at once, not at some later look.
func TestScaleToZeroWaitsForABurst(t *testing.T) {
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	burst := make(chan struct{}) // closed when the burst ends
	startAutoscalingBusy(t, newPodFarm(t, 0), func() <-chan struct{} { return burst })

	svc := autoscaled(ns, "patient", nil)
	revision, _ := createReady(t, svc)
	window, _ := time.ParseDuration(testWindow)
	// Well past the time it takes to reach zero when nothing else is going on (a
	// stable window: TestAutoscaleToZeroAndBack).
	deadline := time.Now().Add(window + 2*autoscalerTick + 10*time.Second)
	for time.Now().Before(deadline) {
		if spec, _ := scaleOf(t, ns, revision); spec != 1 {
			t.Fatalf("during the burst: %d replicas, want 1", spec)
		}
		time.Sleep(time.Second)
	}
	pa := &autoscalingv1alpha1.PodAutoscaler{}
	pa.Namespace, pa.Name = ns, revision
	waitCondition(t, testClient, pa, autoscalingv1alpha1.PodAutoscalerConditionActive, corev1.ConditionTrue, "", time.Second)

	close(burst)
	drained := time.Now()
	// The decision to go to zero stands; the burst's end queues the PodAutoscaler, so
	// the scale is written in a reconcile's time. The margin is a loaded machine's: the
	// 10 s poll this replaced would miss it most times.
	eventually(t, 3*time.Second, func() (bool, string) {
		spec, _ := scaleOf(t, ns, revision)
		return spec == 0, fmt.Sprintf("Deployment replicas %d", spec)
	})
	scaled := time.Since(drained)
	eventually(t, 15*time.Second, func() (bool, string) {
		_, ready := scaleOf(t, ns, revision)
		return ready == 0, fmt.Sprintf("ready replicas %d", ready)
	})
	t.Logf("scaled to zero %v after the burst drained, no pod left after %v",
		scaled.Round(time.Millisecond), time.Since(drained).Round(time.Millisecond))
}

// watchReady polls svc until the returned function is called, which reports the first
// time it saw svc not Ready ("" if never): scaling must not touch readiness.
func watchReady(t *testing.T, svc *v1.Service) func() string {
	ctx, cancel := context.WithCancel(context.Background())
	lapse := make(chan string, 1)
	go func() {
		defer close(lapse)
		for ctx.Err() == nil {
			s := &v1.Service{}
			if err := testClient.Get(ctx, client.ObjectKeyFromObject(svc), s); err == nil && !s.IsReady() {
				lapse <- fmt.Sprintf("%v: %+v", time.Now().Format(time.StampMilli), s.Status.Conditions)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	t.Cleanup(cancel)
	return func() string {
		cancel()
		return <-lapse
	}
}

// autoscalerTick is the autoscaler's decision period, a margin for waits.
const autoscalerTick = 2 * time.Second

// wakeUp sends the first request to a revision at zero: it must be answered by a pod,
// no later than the pod's endpoint was ready plus a margin.
func wakeUp(t *testing.T, gw, ns, revision, host string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := readyEndpointAt(ctx, ns, revision)
	start := time.Now()
	code, body, wait, err := request(gwClient, gw, host)
	took := time.Since(start)
	if err != nil || code != http.StatusOK || !strings.HasPrefix(body, "pod ") {
		t.Fatalf("first request to %s at zero: %d %q %v", revision, code, body, err)
	}
	var podReady time.Duration
	select {
	case at := <-ready:
		podReady = at.Sub(start)
	case <-time.After(5 * time.Second):
		t.Fatalf("%s answered, but no ready endpoint was seen", revision)
	}
	t.Logf("cold start of %s: answered in %v, the pod's endpoint was ready after %v, X-Ferry-Activation-Wait %s",
		revision, took.Round(time.Millisecond), podReady.Round(time.Millisecond), wait)
	// The test polls the slices every 10 ms; the rest of the margin is the machine.
	if took > podReady+time.Second {
		t.Errorf("the request took %v, the pod was ready after %v: it waited %v longer", took, podReady, took-podReady)
	}
}

// histo is a histogram's count and sum, as scraped.
type histo struct {
	count uint64
	sum   float64
}

func (h histo) minus(o histo) histo { return histo{h.count - o.count, h.sum - o.sum} }

func (h histo) mean() time.Duration {
	if h.count == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.count) * float64(time.Second)).Round(10 * time.Microsecond)
}

func histogram(t *testing.T, g prometheus.Gatherer, name string) histo {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var h histo
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			h.count += m.GetHistogram().GetSampleCount()
			h.sum += m.GetHistogram().GetSampleSum()
		}
	}
	return h
}

// TestAutoscaleUnderLoad: C concurrent clients against a per-pod target T make
// ceil(C/T) pods within 60 s, which go away when the load stops; every request
// succeeds meanwhile (Knative's bar is 0.999).
func TestAutoscaleUnderLoad(t *testing.T) {
	const clients, target = 6, 2
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	farm := newPodFarm(t, 100*time.Millisecond)
	_, gw := startAutoscaling(t, farm)
	svc := autoscaled(ns, "busy", map[string]string{
		"autoscaling.knative.dev/target":                        fmt.Sprint(target),
		"autoscaling.knative.dev/target-utilization-percentage": "100",
	})
	revision, host := createReady(t, svc)

	var ok, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Transport: &http.Transport{}}
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
	want := int32(math.Ceil(float64(clients) / target))
	start := time.Now()
	peak := int32(0)
	eventually(t, 60*time.Second, func() (bool, string) {
		spec, ready := scaleOf(t, ns, revision)
		peak = max(peak, spec)
		return ready >= want, fmt.Sprintf("%d ready of %d, want %d", ready, spec, want)
	})
	t.Logf("%d pods ready after %v under %d clients", want, time.Since(start).Round(time.Millisecond), clients)
	// Hold the load a little longer: the count settles, it does not run away.
	for range 20 {
		spec, _ := scaleOf(t, ns, revision)
		peak = max(peak, spec)
		time.Sleep(200 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if peak > want+1 {
		t.Errorf("peak %d replicas for %d clients at target %d; want about %d", peak, clients, target, want)
	}
	stopped := time.Now()
	eventually(t, 60*time.Second, func() (bool, string) {
		spec, _ := scaleOf(t, ns, revision)
		return spec < want, fmt.Sprintf("%d replicas after the load stopped", spec)
	})
	t.Logf("scaled down below %d %v after the load stopped", want, time.Since(stopped).Round(time.Millisecond))
	total := ok.Load() + failed.Load()
	rate := float64(ok.Load()) / float64(total)
	t.Logf("%d requests, success rate %.4f", total, rate)
	if rate < 0.999 {
		t.Errorf("success rate %.4f (%d of %d failed; first: %v)", rate, failed.Load(), total, firstErr.Load())
	}
}

// TestContainerConcurrencyOne: with containerConcurrency 1, 100 concurrent requests
// all succeed and no pod ever has more than one at a time (Knative's
// TestActivatorOverload, with the gateway as the activator).
func TestContainerConcurrencyOne(t *testing.T) {
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	farm := newPodFarm(t, 50*time.Millisecond)
	_, gw := startAutoscaling(t, farm)
	svc := autoscaled(ns, "single", map[string]string{"autoscaling.knative.dev/max-scale": "10"})
	svc.Spec.Template.Spec.ContainerConcurrency = ptr(int64(1))
	_, host := createReady(t, svc)

	var wg sync.WaitGroup
	codes := make([]string, 100)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, body, _, err := request(gwClient, gw, host)
			if err != nil || code != http.StatusOK {
				codes[i] = fmt.Sprintf("%d %q %v", code, body, err)
			}
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != "" {
			t.Errorf("request %d: %s", i, c)
		}
	}
	if most, pods := farm.maxInFlight(); most != 1 {
		t.Errorf("a pod had %d requests at once (of %d pods); containerConcurrency is 1", most, pods)
	} else {
		t.Logf("100 requests over %d pods, never more than 1 at once per pod", pods)
	}
}

// TestScaleBounds: min-scale keeps pods through idleness; max-scale caps sustained
// load that asks for more, after scaling up to it; initial-scale 0, which the cluster
// must allow, starts a Revision with no pod.
func TestScaleBounds(t *testing.T) {
	const maxScale = 3
	setAsideConfigMaps(t)
	applyConfigMap(t, config.AutoscalerConfigName, map[string]string{"allow-zero-initial-scale": "true"})
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	farm := newPodFarm(t, 100*time.Millisecond)
	f, gw := startAutoscaling(t, farm)
	eventually(t, 20*time.Second, func() (bool, string) {
		return f.Config.Load().Autoscaler.AllowZeroInitialScale, "config-autoscaler not loaded"
	})
	// Admission reads the same ConfigMap through the tests' own store.
	eventually(t, 20*time.Second, func() (bool, string) {
		probe := autoscaled(ns, "probe", map[string]string{"autoscaling.knative.dev/initial-scale": "0"})
		err := testClient.Create(context.Background(), probe, client.DryRunAll)
		return err == nil, fmt.Sprint(err)
	})

	kept := autoscaled(ns, "kept", map[string]string{"autoscaling.knative.dev/min-scale": "2"})
	capped := autoscaled(ns, "capped", map[string]string{"autoscaling.knative.dev/max-scale": fmt.Sprint(maxScale), "autoscaling.knative.dev/target": "1"})
	zero := autoscaled(ns, "zero", map[string]string{"autoscaling.knative.dev/initial-scale": "0"})
	keptRev, _ := createReady(t, kept)
	cappedRev, cappedHost := createReady(t, capped)
	zeroRev, _ := createReady(t, zero)

	if spec, ready := scaleOf(t, ns, zeroRev); spec != 0 || ready != 0 {
		t.Errorf("initial-scale 0: %d replicas (%d ready), want none", spec, ready)
	}

	// 8 clients without pause against target 1 (12 pods at 70 %) and max-scale 3,
	// while min-scale 2 idles for two windows.
	window, _ := time.ParseDuration(testWindow)
	deadline := time.Now().Add(2*window + 4*time.Second)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				request(gwClient, gw, cappedHost)
			}
		}()
	}
	var peak, peakReady int32
	for time.Now().Before(deadline) {
		if spec, ready := scaleOf(t, ns, keptRev); spec != 2 || ready < 2 {
			t.Errorf("min-scale 2: %d replicas (%d ready)", spec, ready)
			break
		}
		spec, ready := scaleOf(t, ns, cappedRev)
		peak, peakReady = max(peak, spec), max(peakReady, ready)
		if spec > maxScale {
			t.Errorf("max-scale %d: %d replicas under sustained load", maxScale, spec)
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	wg.Wait()
	if peak != maxScale || peakReady != maxScale {
		t.Errorf("max-scale %d: at most %d replicas (%d ready) under load that asks for 12; want it scaled up to %d", maxScale, peak, peakReady, maxScale)
	}
}

// TestHPAClass: the HPA class hands the Deployment to a HorizontalPodAutoscaler shaped
// as Knative shapes it.
func TestHPAClass(t *testing.T) {
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	farm := newPodFarm(t, 0)
	startAutoscaling(t, farm)
	svc := autoscaled(ns, "cpu", map[string]string{
		"autoscaling.knative.dev/class":     "hpa.autoscaling.knative.dev",
		"autoscaling.knative.dev/metric":    "cpu",
		"autoscaling.knative.dev/target":    "75",
		"autoscaling.knative.dev/min-scale": "2",
		"autoscaling.knative.dev/max-scale": "5",
		"autoscaling.knative.dev/window":    "20s",
	})
	revision, _ := createReady(t, svc)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	eventually(t, 30*time.Second, func() (bool, string) {
		return get(t, testClient, ns, revision, hpa), "no HorizontalPodAutoscaler " + revision
	})
	s := hpa.Spec
	if s.ScaleTargetRef.Kind != "Deployment" || s.ScaleTargetRef.Name != revision+"-deployment" {
		t.Errorf("scaleTargetRef = %+v", s.ScaleTargetRef)
	}
	if s.MinReplicas == nil || *s.MinReplicas != 2 || s.MaxReplicas != 5 {
		t.Errorf("replicas [%v, %d], want [2, 5]", s.MinReplicas, s.MaxReplicas)
	}
	if len(s.Metrics) != 1 || s.Metrics[0].Resource == nil || s.Metrics[0].Resource.Name != corev1.ResourceCPU ||
		s.Metrics[0].Resource.Target.AverageUtilization == nil || *s.Metrics[0].Resource.Target.AverageUtilization != 75 {
		t.Errorf("metrics = %+v, want cpu at 75%% utilization", s.Metrics)
	}
	if b := s.Behavior; b == nil || b.ScaleDown == nil || b.ScaleDown.StabilizationWindowSeconds == nil || *b.ScaleDown.StabilizationWindowSeconds != 20 {
		t.Errorf("behavior = %+v, want a 20 s stabilization window", s.Behavior)
	}
	pa := &autoscalingv1alpha1.PodAutoscaler{}
	if get(t, testClient, ns, revision, pa); pa.Class() != autoscalingv1alpha1.HPA {
		t.Errorf("PodAutoscaler class %q", pa.Class())
	}
}

// TestAutoscalerConfigBadValue: a bad config-autoscaler value is reported on the
// ConfigMap and the last good configuration stays in force.
func TestAutoscalerConfigBadValue(t *testing.T) {
	setAsideConfigMaps(t)
	farm := newPodFarm(t, 0)
	f, _ := startAutoscaling(t, farm)
	applyConfigMap(t, config.AutoscalerConfigName, map[string]string{"stable-window": "20s"})
	eventually(t, 20*time.Second, func() (bool, string) {
		w := f.Config.Load().Autoscaler.StableWindow
		return w == 20*time.Second, fmt.Sprintf("stable window %v", w)
	})
	applyConfigMap(t, config.AutoscalerConfigName, map[string]string{"stable-window": "2s"})
	waitConfigEvent(t, config.AutoscalerConfigName, "stable-window")
	if w := f.Config.Load().Autoscaler.StableWindow; w != 20*time.Second {
		t.Errorf("after a bad stable-window: %v in force, want the last good 20s", w)
	}
}

func deref(p *int32) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}
