package integration

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/gateway"
	"github.com/ferry-serving/ferry/internal/loadgen"
	"github.com/ferry-serving/ferry/internal/localcluster"
	"github.com/ferry-serving/ferry/internal/manager"
)

// The PodAutoscaler's states and knobs end to end, and Knative's autoscaling e2e
// scenarios (knative/serving test/e2e/autoscale_test.go) on ferry up's simulated pods,
// which the gateway answers for after ?sleep= as Knative's autoscale test image does.
// Knative's harness: target 6 at 70 % utilization, each request sleeping 500 ms, load
// at a fixed concurrency of targetPods × target; its 30 s window is 6 s here.

const (
	e2eTarget      = 6
	e2eUtilization = 0.7
	e2eSleep       = "?sleep=500"
)

// startSimulated runs Ferry with a gateway that answers for the simulated pods.
func startSimulated(t *testing.T) (*manager.Ferry, string) {
	t.Helper()
	return startAutoscalingWith(t, nil, gateway.Options{SimulatedPods: true, Registry: prometheus.NewRegistry()})
}

// knativeAutoscaled is autoscaled with Knative's e2e target and utilization.
func knativeAutoscaled(ns, name string, annotations map[string]string) *v1.Service {
	a := map[string]string{
		"autoscaling.knative.dev/target":                        fmt.Sprint(e2eTarget),
		"autoscaling.knative.dev/target-utilization-percentage": fmt.Sprint(e2eUtilization * 100),
	}
	for k, v := range annotations {
		a[k] = v
	}
	return autoscaled(ns, name, a)
}

// steadyLoad keeps clients requests in flight to host through gw (each a GET of
// path) until stop, which waits for the last answers and returns the result.
func steadyLoad(t *testing.T, gw, host, path string, clients int) (stop func() *loadgen.Result) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *loadgen.Result, 1)
	go func() {
		res, err := loadgen.Run(ctx, loadgen.Options{URL: "http://" + gw + "/" + path, Host: host, Concurrency: clients, Duration: 5 * time.Minute})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	t.Cleanup(cancel)
	return func() *loadgen.Result {
		cancel()
		return <-done
	}
}

// allAnswered fails the test unless every request of res was answered 200 (Knative's
// bar is a 0.999 success rate).
func allAnswered(t *testing.T, what string, res *loadgen.Result) {
	t.Helper()
	if res == nil {
		t.Fatalf("%s: no load result", what)
	}
	t.Logf("%s: %d requests at %.1f/s, codes %v, p50 %v p99 %v", what, res.Requests(), res.Rate(), res.Codes, res.Latency.P50, res.Latency.P99)
	if res.Requests() == 0 || res.Codes[http.StatusOK] != res.Requests() {
		t.Errorf("%s: codes %v, errors %v; want every request answered 200", what, res.Codes, res.Errors)
	}
}

// scaleUpTo is Knative's checkPodScale in quick mode: polling the ready pods, it
// returns once there are at least targetPods and at most maxPods; meanwhile the ready
// pods must never fall below minPods, which rises with them (to targetPods-1).
func scaleUpTo(t *testing.T, ns, revision string, curPods, targetPods int32, within time.Duration) {
	t.Helper()
	minPods := int32(math.Floor(float64(curPods)/e2eUtilization)) - 1
	maxPods := int32(math.Ceil(math.Ceil(float64(targetPods)/e2eUtilization) * 1.1))
	start := time.Now()
	for deadline := start.Add(within); ; {
		spec, ready := scaleOf(t, ns, revision)
		if ready < minPods {
			t.Fatalf("%s: %d ready pods (%d wanted), fell below %d while scaling up to %d", revision, ready, spec, minPods, targetPods)
		}
		if ready >= targetPods && ready <= maxPods {
			t.Logf("%s: %d ready pods after %v (want %d to %d)", revision, ready, time.Since(start).Round(time.Millisecond), targetPods, maxPods)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d ready pods (%d wanted) after %v, want %d to %d", revision, ready, spec, within, targetPods, maxPods)
		}
		minPods = max(minPods, min(ready, targetPods)-1)
		time.Sleep(250 * time.Millisecond)
	}
}

// all returns the warnings the client was answered with.
func (w *warningRecorder) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.text...)
}

// paOf reads the Revision's PodAutoscaler.
func paOf(t *testing.T, ns, revision string) *autoscalingv1alpha1.PodAutoscaler {
	t.Helper()
	pa := &autoscalingv1alpha1.PodAutoscaler{}
	if !get(t, testClient, ns, revision, pa) {
		t.Fatalf("no PodAutoscaler %s", revision)
	}
	return pa
}

// kpaRow is the PodAutoscaler as `kubectl get kpa` shows it, with its Active condition.
func kpaRow(pa *autoscalingv1alpha1.PodAutoscaler) string {
	cond := func(typ duck.ConditionType) string {
		if c := pa.Status.GetCondition(typ); c != nil {
			return fmt.Sprintf("%s/%s", c.Status, c.Reason)
		}
		return "none"
	}
	return fmt.Sprintf("DESIREDSCALE %s ACTUALSCALE %s READY %s ACTIVE %s", deref(pa.Status.DesiredScale), deref(pa.Status.ActualScale),
		cond(autoscalingv1alpha1.PodAutoscalerConditionReady), cond(autoscalingv1alpha1.PodAutoscalerConditionActive))
}

// TestActivationQueuedThenTimedOut: a Revision woken from zero whose pod never becomes
// ready is Active=Unknown/Queued (the kpa's READY column and REASON too) with one pod
// asked for, while the request waits; the request gets its 504 at the Revision's
// timeout; at the activation timeout (progress-deadline + 30 s) the PodAutoscaler is
// Active=False/TimedOut and the Revision back at zero. Knative's reasons; the
// Revision's Active mirrors them.
func TestActivationQueuedThenTimedOut(t *testing.T) {
	const requestTimeout = 12 // seconds
	allowZeroInitialScale(t)
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	f, gw := startSimulated(t)
	waitZeroInitialScale(t, f, ns)

	svc := autoscaled(ns, "stuck", map[string]string{
		"autoscaling.knative.dev/initial-scale": "0",
		v1.ProgressDeadlineAnnotationKey:        "1s", // the shortest: activation times out after 31 s
	})
	svc.Spec.Template.Spec.Containers[0].Image = localcluster.NeverReadyImage
	svc.Spec.Template.Spec.TimeoutSeconds = ptr(int64(requestTimeout))
	revision, host := createReady(t, svc)
	if spec, _ := scaleOf(t, ns, revision); spec != 0 {
		t.Fatalf("initial-scale 0: %d replicas", spec)
	}

	type answer struct {
		code int
		body string
		took time.Duration
		err  error
	}
	answered := make(chan answer, 1)
	woken := time.Now()
	go func() {
		// No client timeout: the Revision's bounds the wait.
		code, body, _, err := request(&http.Client{}, gw, host)
		answered <- answer{code, body, time.Since(woken), err}
	}()

	eventually(t, 20*time.Second, func() (bool, string) {
		pa := paOf(t, ns, revision)
		spec, ready := scaleOf(t, ns, revision)
		active := pa.Status.GetCondition(autoscalingv1alpha1.PodAutoscalerConditionActive)
		readyCond := pa.Status.GetCondition(autoscalingv1alpha1.PodAutoscalerConditionReady)
		ok := spec == 1 && ready == 0 && active != nil && active.Status == corev1.ConditionUnknown && active.Reason == autoscalingv1alpha1.ReasonQueued &&
			readyCond != nil && readyCond.Status == corev1.ConditionUnknown && readyCond.Reason == autoscalingv1alpha1.ReasonQueued
		return ok, fmt.Sprintf("%s; Deployment %d replicas, %d ready; want Active and Ready Unknown/Queued, 1 replica, 0 ready", kpaRow(pa), spec, ready)
	})
	select {
	case a := <-answered:
		t.Fatalf("while Queued, the request was answered: %d %q %v after %v; want it held", a.code, a.body, a.err, a.took)
	default:
	}
	t.Logf("Queued %v after the request", time.Since(woken).Round(time.Millisecond))
	wantDesiredScale(t, ns, revision, 1)
	rev := &v1.Revision{}
	rev.Namespace, rev.Name = ns, revision
	waitCondition(t, testClient, rev, v1.RevisionConditionActive, corev1.ConditionUnknown, autoscalingv1alpha1.ReasonQueued, 5*time.Second)

	a := <-answered
	if a.err != nil || a.code != http.StatusGatewayTimeout || !strings.Contains(a.body, "did not get a ready pod") || a.took < requestTimeout*time.Second {
		t.Errorf("the held request: %d %q %v after %v; want 504 for no ready pod after its %ds timeout", a.code, a.body, a.err, a.took, requestTimeout)
	}
	if pa := paOf(t, ns, revision); pa.Status.GetCondition(autoscalingv1alpha1.PodAutoscalerConditionActive).Reason != autoscalingv1alpha1.ReasonQueued {
		t.Errorf("after the request's timeout, before the activation timeout: %s; want still Queued", kpaRow(pa))
	}

	// The activation timeout is 31 s from the wake-up; the margin is a loaded machine's.
	pa := &autoscalingv1alpha1.PodAutoscaler{}
	pa.Namespace, pa.Name = ns, revision
	waitCondition(t, testClient, pa, autoscalingv1alpha1.PodAutoscalerConditionActive, corev1.ConditionFalse, autoscalingv1alpha1.ReasonTimedOut, 31*time.Second+30*time.Second-time.Since(woken))
	timedOut := time.Since(woken)
	if timedOut < 31*time.Second {
		t.Errorf("TimedOut %v after the wake-up; the activation timeout is progress-deadline 1s + 30s", timedOut)
	}
	if c := pa.Status.GetCondition(autoscalingv1alpha1.PodAutoscalerConditionReady); c == nil || c.Status != corev1.ConditionFalse || c.Reason != autoscalingv1alpha1.ReasonTimedOut {
		t.Errorf("TimedOut: %s; want READY False/TimedOut", kpaRow(pa))
	}
	wantDesiredScale(t, ns, revision, 0)
	if spec, _ := scaleOf(t, ns, revision); spec != 0 {
		t.Errorf("TimedOut: Deployment at %d replicas, want 0", spec)
	}
	waitCondition(t, testClient, rev, v1.RevisionConditionActive, corev1.ConditionFalse, autoscalingv1alpha1.ReasonTimedOut, 10*time.Second)
	t.Logf("TimedOut %v after the wake-up: %s", timedOut.Round(time.Millisecond), kpaRow(pa))
}

// TestActivationScale (Knative's): with activation-scale 3, the first request to a
// Revision at zero is answered and wakes it to 3 pods, not 1; desiredScale and the
// Revision's desiredReplicas say 3.
func TestActivationScale(t *testing.T) {
	const activationScale = 3
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	_, gw := startSimulated(t)
	revision, host := createReady(t, autoscaled(ns, "wide", map[string]string{
		"autoscaling.knative.dev/activation-scale": fmt.Sprint(activationScale),
	}))
	pa := &autoscalingv1alpha1.PodAutoscaler{}
	pa.Namespace, pa.Name = ns, revision
	waitCondition(t, testClient, pa, autoscalingv1alpha1.PodAutoscalerConditionActive, corev1.ConditionFalse, autoscalingv1alpha1.ReasonNoTraffic, 40*time.Second)
	eventually(t, 20*time.Second, func() (bool, string) {
		spec, ready := scaleOf(t, ns, revision)
		return spec == 0 && ready == 0, fmt.Sprintf("Deployment %d replicas, %d ready; want 0 before the request", spec, ready)
	})

	code, body, wait, err := request(gwClient, gw, host)
	if err != nil || code != http.StatusOK {
		t.Fatalf("first request at zero: %d %q %v", code, body, err)
	}
	t.Logf("first request answered after X-Ferry-Activation-Wait %s", wait)
	if spec, _ := scaleOf(t, ns, revision); spec != activationScale {
		t.Errorf("after the first request: %d replicas, want activation-scale %d", spec, activationScale)
	}
	eventually(t, 20*time.Second, func() (bool, string) {
		_, ready := scaleOf(t, ns, revision)
		return ready == activationScale, fmt.Sprintf("%d ready, want %d", ready, activationScale)
	})
	// What Knative's test checks: the Revision's desiredReplicas (the kpa's desiredScale).
	wantDesiredScale(t, ns, revision, activationScale)
}

// wantDesiredScale reports an error unless, within a few seconds (a status write's
// time), the PodAutoscaler's desiredScale and the Revision's desiredReplicas are want.
func wantDesiredScale(t *testing.T, ns, revision string, want int32) {
	t.Helper()
	var why string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		pa := paOf(t, ns, revision)
		rev := &v1.Revision{}
		get(t, testClient, ns, revision, rev)
		if pa.Status.DesiredScale != nil && *pa.Status.DesiredScale == want && rev.Status.DesiredReplicas != nil && *rev.Status.DesiredReplicas == want {
			return
		}
		spec, _ := scaleOf(t, ns, revision)
		why = fmt.Sprintf("%s, Revision desiredReplicas %s, Deployment %d replicas", kpaRow(pa), deref(rev.Status.DesiredReplicas), spec)
	}
	t.Errorf("%s; want desiredScale and desiredReplicas %d", why, want)
}

// TestScaleDownDelay: after the load stops, scale-down-delay keeps the pods the load
// asked for until the delay has passed since the last decision that wanted them
// (without it, they would go within a tick or two as the window drains), and then
// they go.
func TestScaleDownDelay(t *testing.T) {
	const clients, delay = 3, 12 * time.Second
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	_, gw := startSimulated(t)
	revision, host := createReady(t, autoscaled(ns, "lingering", map[string]string{
		"autoscaling.knative.dev/target":                        "1",
		"autoscaling.knative.dev/target-utilization-percentage": "100",
		// No panic mode, which also holds pods: only the delay does here.
		"autoscaling.knative.dev/panic-threshold-percentage": "1000",
		"autoscaling.knative.dev/scale-down-delay":           delay.String(),
		v1.SimulatedServiceTimeAnnotationKey:                 "200ms",
	}))

	stop := steadyLoad(t, gw, host, "", clients)
	eventually(t, 30*time.Second, func() (bool, string) {
		spec, ready := scaleOf(t, ns, revision)
		return ready >= clients, fmt.Sprintf("%d ready of %d under %d clients at target 1", ready, spec, clients)
	})
	time.Sleep(autoscalerTick) // a decision with the pods up
	allAnswered(t, "load", stop())
	stopped := time.Now()
	peak, _ := scaleOf(t, ns, revision)

	// Held for the delay, which counts from the last decision for the peak: up to a
	// tick before the load stopped. Without it, the pods go within two ticks.
	for time.Since(stopped) < delay-2*autoscalerTick {
		if spec, _ := scaleOf(t, ns, revision); spec < peak {
			t.Fatalf("%v after the load stopped: %d replicas, down from %d within the %v scale-down-delay", time.Since(stopped).Round(time.Millisecond), spec, peak, delay)
		}
		time.Sleep(250 * time.Millisecond)
	}
	eventually(t, delay+20*time.Second, func() (bool, string) {
		spec, _ := scaleOf(t, ns, revision)
		return spec < peak, fmt.Sprintf("%d replicas %v after the load stopped; want fewer than %d once the delay has passed", spec, time.Since(stopped).Round(time.Second), peak)
	})
	t.Logf("%d replicas held, fewer %v after the load stopped (delay %v)", peak, time.Since(stopped).Round(100*time.Millisecond), delay)
}

// TestPodRetention: with scale-to-zero-pod-retention-period, a Revision without
// traffic goes Inactive (NoTraffic) after its stable window but keeps its last pod,
// ready, for the period; then it goes to zero.
func TestPodRetention(t *testing.T) {
	const retention = 10 * time.Second
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	startSimulated(t)
	revision, _ := createReady(t, autoscaled(ns, "retained", map[string]string{
		"autoscaling.knative.dev/scale-to-zero-pod-retention-period": retention.String(),
	}))

	pa := &autoscalingv1alpha1.PodAutoscaler{}
	pa.Namespace, pa.Name = ns, revision
	waitCondition(t, testClient, pa, autoscalingv1alpha1.PodAutoscalerConditionActive, corev1.ConditionFalse, autoscalingv1alpha1.ReasonNoTraffic, 40*time.Second)
	inactive := pa.Status.GetCondition(autoscalingv1alpha1.PodAutoscalerConditionActive).LastTransitionTime.Time
	if spec, ready := scaleOf(t, ns, revision); spec != 1 || ready != 1 {
		t.Fatalf("Inactive with %d replicas (%d ready); want the last pod kept for %v", spec, ready, retention)
	}
	rev := &v1.Revision{}
	rev.Namespace, rev.Name = ns, revision
	waitCondition(t, testClient, rev, v1.RevisionConditionActive, corev1.ConditionFalse, autoscalingv1alpha1.ReasonNoTraffic, 10*time.Second)

	eventually(t, retention+20*time.Second, func() (bool, string) {
		spec, _ := scaleOf(t, ns, revision)
		return spec == 0, fmt.Sprintf("%d replicas %v after going Inactive", spec, time.Since(inactive).Round(time.Second))
	})
	// The transition time is in whole seconds, truncated: the true one is up to 1 s later.
	if at := time.Since(inactive); at < retention {
		t.Errorf("at zero %v after going Inactive; want the pod kept for %v", at, retention)
	} else {
		t.Logf("at zero %v after going Inactive (retention %v)", at.Round(100*time.Millisecond), retention)
	}
}

// TestAutoscaleUpDownUp (Knative's, both aggregation algorithms): load for 2 pods
// scales 1 → 2 (within Knative's bounds), to zero once it stops with every pod gone
// and the Revision Ready, then 0 → 2 again; every request answered 200.
func TestAutoscaleUpDownUp(t *testing.T) {
	_, gw := startSimulated(t)
	for _, algo := range []string{"linear", "weighted-exponential"} {
		t.Run(algo, func(t *testing.T) {
			t.Parallel()
			ns := testNamespace(t)
			dumpOnFailure(t, testClient, ns)
			svc := knativeAutoscaled(ns, "updownup", map[string]string{"autoscaling.knative.dev/metric-aggregation-algorithm": algo})
			revision, host := createReady(t, svc)

			stop := steadyLoad(t, gw, host, e2eSleep, 2*e2eTarget)
			scaleUpTo(t, ns, revision, 1, 2, 60*time.Second)
			allAnswered(t, "up", stop())

			// Knative's assertScaleDown: the Deployment at zero, no pod left, the Revision Ready.
			eventually(t, 60*time.Second, func() (bool, string) {
				spec, ready := scaleOf(t, ns, revision)
				pods := &corev1.PodList{}
				if err := testClient.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels{v1.RevisionLabelKey: revision}); err != nil {
					t.Fatal(err)
				}
				return spec == 0 && ready == 0 && len(pods.Items) == 0, fmt.Sprintf("Deployment %d replicas, %d ready, %d pods", spec, ready, len(pods.Items))
			})
			rev := &v1.Revision{}
			if get(t, testClient, ns, revision, rev); !rev.IsReady() {
				t.Errorf("at zero, the Revision is not Ready: %+v", rev.Status.Conditions)
			}
			if pa := paOf(t, ns, revision); pa.Status.GetCondition(autoscalingv1alpha1.PodAutoscalerConditionActive).Reason != autoscalingv1alpha1.ReasonNoTraffic {
				t.Errorf("at zero: %s; want Active False/NoTraffic", kpaRow(pa))
			}

			stop = steadyLoad(t, gw, host, e2eSleep, 2*e2eTarget)
			scaleUpTo(t, ns, revision, 0, 2, 60*time.Second)
			allAnswered(t, "up again", stop())
		})
	}
}

// TestAutoscaleSustaining (Knative's): under steady load for 8 pods, the Revision
// scales up and keeps its pods while the load lasts, through the panic mode at the
// start and its end a stable window later and the window rolling over once more:
// never fewer than 7 ready once there, at most Knative's bound, 8 to it at the end.
func TestAutoscaleSustaining(t *testing.T) {
	const targetPods = 8
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	_, gw := startSimulated(t)
	revision, host := createReady(t, knativeAutoscaled(ns, "sustained", nil))
	window, _ := time.ParseDuration(testWindow)
	maxPods := int32(math.Ceil(math.Ceil(targetPods/e2eUtilization) * 1.1))

	stop := steadyLoad(t, gw, host, e2eSleep, targetPods*e2eTarget)
	scaleUpTo(t, ns, revision, 1, targetPods, 60*time.Second)
	held := time.Now()
	lowest, highest := int32(math.MaxInt32), int32(0)
	for time.Since(held) < 2*window+2*autoscalerTick {
		spec, ready := scaleOf(t, ns, revision)
		lowest, highest = min(lowest, ready), max(highest, spec)
		if ready < targetPods-1 || spec > maxPods {
			t.Fatalf("%v into the steady load: %d replicas, %d ready; want at least %d ready and at most %d replicas",
				time.Since(held).Round(time.Millisecond), spec, ready, targetPods-1, maxPods)
		}
		time.Sleep(250 * time.Millisecond)
	}
	allAnswered(t, "sustained", stop())
	t.Logf("for %v under load: %d to %d ready (at most %d replicas)", 2*window+2*autoscalerTick, lowest, highest, maxPods)
}

// TestFastScaleToZero (Knative's, target-burst-capacity -1 and the shortest window):
// once the load stops, the Revision has no ready pod within the window plus a margin,
// sooner than Knative's grace period would allow if it had to wait for it.
func TestFastScaleToZero(t *testing.T) {
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	_, gw := startSimulated(t)
	revision, host := createReady(t, knativeAutoscaled(ns, "fast", map[string]string{
		"autoscaling.knative.dev/target-burst-capacity":              "-1",
		"autoscaling.knative.dev/scale-to-zero-pod-retention-period": "0s",
	}))
	stop := steadyLoad(t, gw, host, e2eSleep, e2eTarget)
	time.Sleep(2 * autoscalerTick)
	allAnswered(t, "load", stop())
	stopped := time.Now()

	window, _ := time.ParseDuration(testWindow)
	// Knative allows the grace period (30 s) + 15 s; Ferry has no grace period to
	// wait, so the window plus Knative's 15 s margin.
	eventually(t, window+15*time.Second, func() (bool, string) {
		spec, ready := scaleOf(t, ns, revision)
		return spec == 0 && ready == 0, fmt.Sprintf("Deployment %d replicas, %d ready %v after the load stopped", spec, ready, time.Since(stopped).Round(time.Second))
	})
	t.Logf("no ready pod %v after the load stopped (window %v)", time.Since(stopped).Round(100*time.Millisecond), window)
}

// TestTargetBurstCapacity (Knative's, as far as it applies): Knative's test checks
// that with target-burst-capacity 7 the activator leaves the path once there is spare
// capacity; Ferry's gateway is always in the path, so the annotation is accepted
// with a warning saying it has no effect, and scaling is as without it: 7 clients at
// target 10 (70 %) keep 1 pod, 12 make exactly 2, not 1, not a panicking 3.
func TestTargetBurstCapacity(t *testing.T) {
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	_, gw := startSimulated(t)
	svc := autoscaled(ns, "burst", map[string]string{
		"autoscaling.knative.dev/target":                        "10",
		"autoscaling.knative.dev/target-utilization-percentage": "70",
		"autoscaling.knative.dev/target-burst-capacity":         "7",
		"autoscaling.knative.dev/panic-threshold-percentage":    "200",
	})
	cfg := rest.CopyConfig(testConfig)
	warnings := &warningRecorder{}
	cfg.WarningHandlerWithContext = warnings
	c, err := client.New(cfg, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	warned := false
	for _, w := range warnings.all() {
		warned = warned || strings.Contains(w, "target-burst-capacity") && strings.Contains(w, "has no effect")
	}
	if !warned {
		t.Errorf("target-burst-capacity 7 accepted with warnings %q; want one saying it has no effect", warnings.all())
	}
	waitCondition(t, testClient, svc, duck.ConditionReady, corev1.ConditionTrue, "", 2*time.Minute)
	revision, host := svc.Status.LatestReadyRevisionName, strings.TrimPrefix(svc.Status.URL, "http://")

	first := steadyLoad(t, gw, host, e2eSleep, 7)
	for deadline := time.Now().Add(2 * autoscalerTick); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if spec, _ := scaleOf(t, ns, revision); spec != 1 {
			t.Fatalf("7 clients at target 7: %d replicas, want 1", spec)
		}
	}
	second := steadyLoad(t, gw, host, e2eSleep, 5)
	window, _ := time.ParseDuration(testWindow)
	eventually(t, 2*window, func() (bool, string) {
		spec, ready := scaleOf(t, ns, revision)
		if spec > 2 {
			t.Fatalf("12 clients at target 7: %d replicas, want 2", spec)
		}
		return ready == 2, fmt.Sprintf("%d ready of %d; want exactly 2", ready, spec)
	})
	for deadline := time.Now().Add(2 * autoscalerTick); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if spec, _ := scaleOf(t, ns, revision); spec != 2 {
			t.Fatalf("12 clients at target 7, after reaching 2: %d replicas", spec)
		}
	}
	allAnswered(t, "7 clients", first())
	allAnswered(t, "5 more", second())
}
