package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/manager"
	"github.com/ferry-serving/ferry/internal/reconciler"
)

var setLoggerOnce sync.Once

// ferry is one run of Ferry's reconcilers against the test cluster.
type ferry struct {
	ctrls *reconciler.Controllers
	// writes counts the API writes (anything but GET/LIST/WATCH) the reconcilers, and
	// the stand-in gateway, made in each namespace.
	writes *writeCounter
}

// startFerry runs Ferry's reconcilers, plus a stand-in for the gateway that marks every
// KIngress Ready, in a manager of their own until the test ends.
func startFerry(t *testing.T, ns string, opts reconciler.Options) *ferry {
	t.Helper()
	return startFerryWith(t, testConfig, ns, opts)
}

// startFerryWith is startFerry with the reconcilers talking to the API server as
// config says (another identity, say).
func startFerryWith(t *testing.T, config *rest.Config, ns string, opts reconciler.Options) *ferry {
	t.Helper()
	setLoggerOnce.Do(func() {
		// Reconcile errors are worth seeing in a failing test's output; the rest is noise.
		ctrl.SetLogger(logr.New(errorSink{}))
	})
	cfg := rest.CopyConfig(config)
	wc := &writeCounter{byNamespace: map[string]*atomic.Int64{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return wc.wrap(rt) })
	cfg.QPS, cfg.Burst = -1, -1

	mgr := newTestManager(t, cfg, ns)
	ctrls, err := reconciler.SetupWithManager(mgr, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("test-gateway").For(&netv1alpha1.Ingress{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: reconciler.DefaultWorkers}).
		Complete(&fakeGateway{client: mgr.GetClient()}); err != nil {
		t.Fatal(err)
	}
	runTestManager(t, mgr)
	return &ferry{ctrls: ctrls, writes: wc}
}

// fakeGateway marks each KIngress of Ferry's class Ready for its current generation,
// as the gateway does once it has programmed it.
type fakeGateway struct{ client client.Client }

func (g *fakeGateway) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ing := &netv1alpha1.Ingress{}
	if err := g.client.Get(ctx, req.NamespacedName, ing); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ing.IsReady() {
		return ctrl.Result{}, nil
	}
	ing.Status.ObservedGeneration = ing.Generation
	m := netv1alpha1.IngressConditions.Manage(&ing.Status.Status)
	m.MarkTrue(netv1alpha1.IngressConditionNetworkConfigured)
	m.MarkTrue(netv1alpha1.IngressConditionLoadBalancerReady)
	return ctrl.Result{}, g.client.Status().Update(ctx, ing)
}

// writeCounter counts writes per namespace from the request path.
type writeCounter struct {
	mu          sync.Mutex
	byNamespace map[string]*atomic.Int64
	// byKind counts writes by namespace, then by "VERB resource[/subresource]".
	byKind map[string]map[string]int
	// latency adds up the time writes of each "VERB resource" took.
	latency map[string]time.Duration
}

func (w *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet {
			return rt.RoundTrip(req)
		}
		start := time.Now()
		resp, err := rt.RoundTrip(req)
		w.count(req.Method, req.URL.Path, time.Since(start))
		return resp, err
	})
}

func (w *writeCounter) count(method, path string, took time.Duration) {
	ns, what := namespaceOf(path), method+" "+resourceOf(path)
	w.mu.Lock()
	c := w.byNamespace[ns]
	if c == nil {
		c = &atomic.Int64{}
		w.byNamespace[ns] = c
	}
	if w.byKind == nil {
		w.byKind = map[string]map[string]int{}
	}
	if w.byKind[ns] == nil {
		w.byKind[ns] = map[string]int{}
	}
	w.byKind[ns][what]++
	if w.latency == nil {
		w.latency = map[string]time.Duration{}
	}
	w.latency[what] += took
	w.mu.Unlock()
	c.Add(1)
}

// meanLatency returns the mean time a write of each "VERB resource" took, everywhere.
func (w *writeCounter) meanLatency() map[string]time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := map[string]int{}
	for _, kinds := range w.byKind {
		for k, c := range kinds {
			n[k] += c
		}
	}
	out := map[string]time.Duration{}
	for k, d := range w.latency {
		out[k] = (d / time.Duration(n[k])).Round(time.Millisecond)
	}
	return out
}

// kinds returns the writes in ns by verb and resource.
func (w *writeCounter) kinds(ns string) map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.byKind[ns])
}

func (w *writeCounter) in(ns string) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c := w.byNamespace[ns]; c != nil {
		return c.Load()
	}
	return 0
}

// resourceOf is the resource (and subresource) a namespaced path names:
// .../namespaces/ns/routes/name/status gives "routes/status".
func resourceOf(path string) string {
	parts := strings.Split(path, "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "namespaces" {
			rest := parts[i+2:]
			if len(rest) >= 3 {
				return rest[0] + "/" + rest[2]
			}
			return rest[0]
		}
	}
	return path
}

func namespaceOf(path string) string {
	parts := strings.Split(path, "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "namespaces" {
			return parts[i+1]
		}
	}
	return ""
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// ksvc is a Service running image.
func ksvc(ns, name, image string) *v1.Service {
	s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	s.Spec.Template.Spec.Containers = []corev1.Container{{Image: image}}
	return s
}

// eventually polls cond until it returns true, failing the test with the last
// explanation after timeout.
func eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var why string
	for {
		var ok bool
		if ok, why = cond(); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v: %s", timeout, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// get reads obj fresh from the API server, failing the test on errors other than
// NotFound, which it reports as false.
func get(t *testing.T, c client.Client, ns, name string, obj client.Object) bool {
	t.Helper()
	err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// waitCondition waits until obj's condition typ has the given status and reason for
// obj's current generation, and returns obj as it was then.
func waitCondition(t *testing.T, c client.Client, obj client.Object, typ duck.ConditionType, status corev1.ConditionStatus, reason string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() (bool, string) {
		if !get(t, c, obj.GetNamespace(), obj.GetName(), obj) {
			return false, "not found"
		}
		s := duckStatus(obj)
		cond := s.GetCondition(typ)
		if s.ObservedGeneration != obj.GetGeneration() || cond == nil || cond.Status != status || (reason != "" && cond.Reason != reason) {
			return false, fmt.Sprintf("%s %s/%s: observedGeneration %d/%d, %s = %+v", kindOf(obj), obj.GetNamespace(), obj.GetName(),
				s.ObservedGeneration, obj.GetGeneration(), typ, cond)
		}
		return true, ""
	})
}

func kindOf(obj client.Object) string { return fmt.Sprintf("%T", obj) }

func duckStatus(obj client.Object) *duck.Status {
	if o, ok := obj.(interface{ DuckStatus() *duck.Status }); ok {
		return o.DuckStatus()
	}
	panic(fmt.Sprintf("no Knative status in %T", obj))
}

// dumpOnFailure logs the state of ns's Knative objects and their children if the test
// fails, which is what one needs to tell where a rollout stopped.
func dumpOnFailure(t *testing.T, c client.Client, ns string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		lists := []client.ObjectList{&v1.ServiceList{}, &v1.ConfigurationList{}, &v1.RevisionList{}, &v1.RouteList{},
			&netv1alpha1.IngressList{}, &appsv1.DeploymentList{}, &corev1.PodList{}}
		for _, l := range lists {
			if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
				t.Logf("listing %T: %v", l, err)
				continue
			}
			items, _ := meta.ExtractList(l)
			for i, o := range items {
				if i >= 5 {
					t.Logf("%T: %d more", l, len(items)-i)
					break
				}
				obj := o.(client.Object)
				obj.SetManagedFields(nil)
				b, _ := json.Marshal(obj)
				t.Logf("%T %s: %s", obj, obj.GetName(), b)
			}
		}
	})
}

// errorSink prints controller-runtime's errors (reconcile errors among them) and
// drops everything else.
type errorSink struct{ name string }

func (errorSink) Init(logr.RuntimeInfo)    {}
func (errorSink) Enabled(int) bool         { return false }
func (errorSink) Info(int, string, ...any) {}
func (s errorSink) Error(err error, msg string, kv ...any) {
	fmt.Fprintf(os.Stderr, "%s: %s: %v %v\n", s.name, msg, err, kv)
}
func (s errorSink) WithValues(...any) logr.LogSink { return s }
func (s errorSink) WithName(n string) logr.LogSink { return errorSink{name: s.name + "/" + n} }

// runManager runs f until the test ends, and fails the test if it stops with an error.
func runManager(t *testing.T, f *manager.Ferry) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}
