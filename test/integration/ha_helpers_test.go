package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/explain"
	"github.com/ferry-serving/ferry/internal/scale"
)

// startGatewayProcess runs `ferry gateway --simulated-pods` on free loopback ports,
// reporting to the autoscaler at autoscaler and keeping its replica Lease in
// leaseNamespace, until the test ends and returns its external address once it
// accepts connections.
func startGatewayProcess(t *testing.T, name, autoscaler, leaseNamespace string) string {
	t.Helper()
	addr, local := freeLoopbackAddr(t), freeLoopbackAddr(t)
	p := startProcess(t, name, nil, "gateway", "--simulated-pods", "--addr", addr, "--local-addr", local,
		"--lease-namespace", leaseNamespace,
		"--metrics-addr", "0", "--health-addr", "0", "--autoscaler", autoscaler, "--kubeconfig", testCluster.KubeconfigPath())
	eventually(t, time.Minute, func() (bool, string) {
		if p.Exited() {
			t.Fatalf("%s exited:\n%s", name, p.Output())
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	})
	return addr
}

// freeLoopbackAddr is a loopback address with a port nothing listens on right now.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// haObserver follows a run's Services and Revisions from before the first create:
// it signals when half the Services exist, records every Ready Service that falls
// back to not Ready for the same spec, counts Revisions created and deleted, and sends
// a request through every gateway the moment it sees a Service turn Ready.
type haObserver struct {
	runID    string
	halfAt   int
	half     chan struct{}
	gateways []string
	probes   sync.WaitGroup

	mu          sync.Mutex
	services    map[string]bool
	regressed   []string
	revAdded    map[string]bool
	revsDeleted []string
	// probed are the Services requested through every gateway on turning Ready;
	// notRouted the requests that were not answered by the Service's Revision.
	probed    map[string]bool
	notRouted []string
}

func newHAObserver(runID string, halfAt int, gateways []string) *haObserver {
	return &haObserver{runID: runID, halfAt: halfAt, half: make(chan struct{}), gateways: gateways,
		services: map[string]bool{}, revAdded: map[string]bool{}, probed: map[string]bool{}}
}

// watch starts the informers on ns and waits until they have synced.
func (o *haObserver) watch(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	c, err := client.NewWithWatch(testConfig, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	services := informIn(ctx, c, ns, func() client.ObjectList { return &v1.ServiceList{} }, &v1.Service{},
		cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { o.serviceAdded(obj.(*v1.Service)) },
			UpdateFunc: func(oldObj, newObj any) {
				o.serviceUpdated(oldObj.(*v1.Service), newObj.(*v1.Service))
			},
		})
	revisions := informIn(ctx, c, ns, func() client.ObjectList { return &v1.RevisionList{} }, &v1.Revision{},
		cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				o.mu.Lock()
				o.revAdded[obj.(*v1.Revision).Name] = true
				o.mu.Unlock()
			},
			DeleteFunc: func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				if r, ok := obj.(*v1.Revision); ok {
					o.mu.Lock()
					o.revsDeleted = append(o.revsDeleted, r.Name)
					o.mu.Unlock()
				}
			},
		})
	if !cache.WaitForCacheSync(ctx.Done(), services.HasSynced, revisions.HasSynced) {
		t.Fatal("the watches on Services and Revisions did not sync")
	}
}

func (o *haObserver) serviceAdded(svc *v1.Service) {
	if svc.Labels[scale.RunLabel] != o.runID {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.services[svc.Name] = true
	if len(o.services) == o.halfAt {
		close(o.half)
	}
}

// serviceUpdated records a Ready Service that is no longer Ready. Nothing changes a
// Service's spec in this test, so the fall is never caused by the user; a spec change
// is recorded too, as nobody but the test may make one.
func (o *haObserver) serviceUpdated(old, svc *v1.Service) {
	if !old.IsReady() && svc.IsReady() && svc.Labels[scale.RunLabel] == o.runID {
		o.probeReady(svc)
	}
	var why string
	switch {
	case svc.Generation != old.Generation:
		why = fmt.Sprintf("ksvc %s: generation %d → %d, yet nobody changed its spec", svc.Name, old.Generation, svc.Generation)
	case old.IsReady() && !svc.IsReady():
		why = fmt.Sprintf("ksvc %s at %s: Ready True → %s (observedGeneration %d/%d)",
			svc.Name, time.Now().Format("15:04:05.000"), conditionString(svc), svc.Status.ObservedGeneration, svc.Generation)
	default:
		return
	}
	o.mu.Lock()
	o.regressed = append(o.regressed, why)
	o.mu.Unlock()
}

// probeReady sends one request, no retry, for svc's host through every gateway, the
// first time svc is seen Ready: a KIngress is Ready only once every gateway replica
// serves it, so each must route it at once.
func (o *haObserver) probeReady(svc *v1.Service) {
	o.mu.Lock()
	first := !o.probed[svc.Name]
	o.probed[svc.Name] = true
	o.mu.Unlock()
	if !first {
		return
	}
	host, want := explain.HostOf(svc.Status.URL), "Hello from revision "+svc.Status.LatestReadyRevisionName+" "
	for _, gw := range o.gateways {
		o.probes.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if routed, answer := explain.Probe(ctx, gwClient, "http://"+gw, host); !routed || !strings.Contains(answer, want) {
				o.mu.Lock()
				o.notRouted = append(o.notRouted, fmt.Sprintf("%s through %s: %s", host, gw, answer))
				o.mu.Unlock()
			}
		})
	}
}

// probedAtReady waits for the requests sent at Ready and returns how many Services
// were probed and the requests not routed.
func (o *haObserver) probedAtReady() (int, []string) {
	o.probes.Wait()
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.probed), append([]string(nil), o.notRouted...)
}

func conditionString(svc *v1.Service) string {
	c := svc.Status.GetCondition("Ready")
	if c == nil {
		return "no Ready condition"
	}
	return fmt.Sprintf("%s %s %q", c.Status, c.Reason, c.Message)
}

func (o *haObserver) created() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.services)
}

func (o *haObserver) regressions() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.regressed...)
}

// revisionsAdded is every Revision the watch saw created, and those it saw deleted.
func (o *haObserver) revisionsAdded() (added map[string]bool, deleted []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	added = make(map[string]bool, len(o.revAdded))
	for k := range o.revAdded {
		added[k] = true
	}
	return added, append([]string(nil), o.revsDeleted...)
}

// informIn runs an informer on one kind in ns until ctx ends.
func informIn(ctx context.Context, c client.WithWatch, ns string, newList func() client.ObjectList, example runtime.Object,
	h cache.ResourceEventHandler) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			l := newList()
			return l, c.List(ctx, l, &client.ListOptions{Namespace: ns, Raw: &opts})
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, newList(), &client.ListOptions{Namespace: ns, Raw: &opts})
		},
	}
	inf := cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{})
	_, _ = inf.AddEventHandler(h)
	go inf.RunWithContext(ctx)
	return inf
}

// checkOneRevisionPerGeneration checks that each of the run's n Configurations has
// exactly one Revision for each of its generations, and that no other Revision was
// ever created (one made twice and collected would be gone from the list but not
// from the watch).
func checkOneRevisionPerGeneration(t *testing.T, ns, runID string, n int, added map[string]bool, deleted []string) {
	t.Helper()
	ctx := context.Background()
	run := client.MatchingLabels{scale.RunLabel: runID}
	configs, revs := &v1.ConfigurationList{}, &v1.RevisionList{}
	if err := testClient.List(ctx, configs, client.InNamespace(ns), run); err != nil {
		t.Fatal(err)
	}
	if err := testClient.List(ctx, revs, client.InNamespace(ns), run); err != nil {
		t.Fatal(err)
	}
	perGeneration := map[string][]string{}
	for _, r := range revs.Items {
		key := r.Labels[v1.ConfigurationLabelKey] + "@" + r.Labels[v1.ConfigurationGenerationLabelKey]
		perGeneration[key] = append(perGeneration[key], r.Name)
	}
	want := 0
	for _, c := range configs.Items {
		for g := int64(1); g <= c.Generation; g++ {
			want++
			if got := perGeneration[fmt.Sprintf("%s@%d", c.Name, g)]; len(got) != 1 {
				t.Errorf("Configuration %s generation %d has %d Revisions: %v", c.Name, g, len(got), got)
			}
		}
	}
	if len(configs.Items) != n || len(revs.Items) != want {
		t.Errorf("%d Configurations and %d Revisions of the run, want %d and %d", len(configs.Items), len(revs.Items), n, want)
	}
	if len(deleted) != 0 {
		t.Errorf("Revisions were deleted during the run: %v", deleted)
	}
	// added also holds the warm-up's Revision.
	for name := range added {
		if !strings.HasPrefix(name, "scale-warmup-") && !containsRevision(revs.Items, name) {
			t.Errorf("Revision %s was created during the run and is gone", name)
		}
	}
	t.Logf("%d Configurations, %d Revisions: one per generation", len(configs.Items), len(revs.Items))
}

func containsRevision(revs []v1.Revision, name string) bool {
	for _, r := range revs {
		if r.Name == name {
			return true
		}
	}
	return false
}

// checkEveryGatewayRoutes sends a request for every Service of the run through every
// gateway: each replica serves every host, so each must route it to the Service's
// Revision. A gateway may lag the one that marked the KIngress Ready by its watch's
// latency, so each request is retried briefly; the retries are logged.
func checkEveryGatewayRoutes(t *testing.T, ns, runID string, gateways []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	services := &v1.ServiceList{}
	if err := testClient.List(ctx, services, client.InNamespace(ns), client.MatchingLabels{scale.RunLabel: runID}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	retried := map[string]int{}
	var failures []string
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for _, svc := range services.Items {
		for _, gw := range gateways {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				host, want := explain.HostOf(svc.Status.URL), "Hello from revision "+svc.Status.LatestReadyRevisionName+" "
				var answer string
				for attempt := 0; ; attempt++ {
					var routed bool
					routed, answer = explain.Probe(ctx, gwClient, "http://"+gw, host)
					if routed && strings.Contains(answer, want) {
						if attempt > 0 {
							mu.Lock()
							retried[gw]++
							mu.Unlock()
						}
						return
					}
					select {
					case <-ctx.Done():
						mu.Lock()
						failures = append(failures, fmt.Sprintf("%s through %s: %s", host, gw, answer))
						mu.Unlock()
						return
					case <-time.After(100 * time.Millisecond):
					}
				}
			})
		}
	}
	wg.Wait()
	for i, f := range failures {
		if i == 5 {
			t.Errorf("... and %d more", len(failures)-5)
			break
		}
		t.Errorf("not routed to its Revision: %s", f)
	}
	t.Logf("%d Services routed through each of %v (needed a retry: %v)", len(services.Items), gateways, retried)
}

// checkStaleStatusRepaired plays the old leader's last write landing after the new
// leader's: for one Service of the run it writes a stale status into the Service,
// its Configuration, Revision and Route, the way the status writer does (the whole
// status, no resourceVersion), and expects the leader to put each right by itself.
func checkStaleStatusRepaired(t *testing.T, ns, name string, leader func() string) {
	t.Helper()
	ctx := context.Background()
	objs := []client.Object{&v1.Service{}, &v1.Configuration{}, &v1.Route{}, &v1.Revision{}}
	start := time.Now()
	for _, obj := range objs {
		key := name
		if _, ok := obj.(*v1.Revision); ok {
			key = name + "-00001"
		}
		if !get(t, testClient, ns, key, obj) {
			t.Fatalf("%s %s not found", kindOf(obj), key)
		}
		// A status from before the rollout finished: no URL, traffic or Revision names
		// yet, every condition Unknown.
		stale := duckStatus(obj).DeepCopy()
		for i := range stale.Conditions {
			stale.Conditions[i].Status, stale.Conditions[i].Reason, stale.Conditions[i].Message = "Unknown", "StaleWrite", "written by a replica that no longer leads"
		}
		patch, err := json.Marshal([]any{map[string]any{"op": "add", "path": "/status", "value": stale}})
		if err != nil {
			t.Fatal(err)
		}
		if err := testClient.Status().Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch)); err != nil {
			t.Fatalf("writing a stale status into %s %s: %v", kindOf(obj), key, err)
		}
	}
	for _, obj := range objs {
		eventually(t, time.Minute, func() (bool, string) {
			if !get(t, testClient, ns, obj.GetName(), obj) {
				return false, "gone"
			}
			s := duckStatus(obj)
			ready := s.GetCondition("Ready")
			return s.ObservedGeneration == obj.GetGeneration() && ready.IsTrue(),
				fmt.Sprintf("%s %s: Ready %+v (the replica that leads: %q, the Lease's holder: %q)", kindOf(obj), obj.GetName(), ready, leader(), leaseHolder(t))
		})
	}
	t.Logf("a stale status in ksvc %s and its children was put right within %v", name, time.Since(start).Round(time.Millisecond))
}
