package integration

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/internal/reconciler"
)

// The fault suite: each test strikes Ferry's controller with one fault while a burst
// of Services (100, or FERRY_FAULT_N) is created and half of them updated, then checks
// that every Service ends Ready with the status Knative would show, one Revision per
// generation, and, for a controller run in this process, that it leaves no goroutine
// behind once stopped. See docs/faults.md.

// burstTimeout is how long a burst may take to be all Ready, generous for a loaded
// 2-core machine.
func burstTimeout(n int) time.Duration { return 2*time.Minute + time.Duration(n)*600*time.Millisecond }

// TestFaultAPIServerRestart restarts the control plane (kube-apiserver with its etcd,
// on the same data directory and port) during the burst; the controller keeps
// running against it and must pick up where it was.
func TestFaultAPIServerRestart(t *testing.T) {
	n := faultSetup(t)
	fc := startFaultCluster(t)
	cfg, c, ns := fc.clientAndNamespace(t)
	f, requests := startFaultController(t, cfg, faultControllerOptions{})

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), burstTimeout(n))
	defer cancel()
	b := startBurst(ctx, c, ns, n)
	// A restart of the whole local control plane takes about a minute on a loaded
	// 2-core machine: once in CI, more in the long form.
	restarts := 1
	if n > 100 {
		restarts = 3
	}
	for i := 1; i <= restarts; i++ {
		b.waitCreated(i * n / (restarts + 1))
		created, down := b.created.Load(), time.Now()
		fc.stop(t)
		stopped := time.Now()
		fc.start(t)
		t.Logf("restart %d at %d/%d Services created: stopped in %v, serving again %v later", i, created, n,
			stopped.Sub(down).Round(100*time.Millisecond), time.Since(stopped).Round(100*time.Millisecond))
	}
	b.wait(t)
	t.Cleanup(func() {
		t.Logf("%d relists by the controller's informers, %d watches ended 410 Gone", requests.relists(), requests.gone.Load())
	})
	logReady(t, n, start, checkBurst(t, c, b, burstTimeout(n), f.cache))
	f.checkNoLeak(t)
}

// TestFaultEtcdCompaction runs the burst against an API server without a watch cache
// that compacts etcd every second, so that a watch resuming from an older
// resourceVersion gets 410 Gone and its informer must list again. A watch that keeps
// up is never compacted away; watches resume when their connection drops (in
// production: at their 5–10 min timeout, or a network blip), so the controller's
// watches are cut every 5–10 s and stay down 2 s.
func TestFaultEtcdCompaction(t *testing.T) {
	n := faultSetup(t)
	fc := startFaultCluster(t, "--watch-cache=false", "--etcd-compaction-interval=1s")
	cfg, c, ns := fc.clientAndNamespace(t)
	cutter := &watchCutter{min: 5 * time.Second, max: 10 * time.Second, rewatchDelay: 2 * time.Second}
	f, requests := startFaultController(t, cfg, faultControllerOptions{Wrap: cutter.wrap})

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), burstTimeout(n))
	defer cancel()
	b := startBurst(ctx, c, ns, n)
	b.wait(t)
	t.Cleanup(func() {
		t.Logf("%d watch cuts, %d watches ended 410 Gone, %d relists; the API server's etcd watches saw compaction %d times",
			cutter.cuts.Load(), requests.gone.Load(), requests.relists(), fc.logCount(t, "required revision has been compacted"))
	})
	logReady(t, n, start, checkBurst(t, c, b, burstTimeout(n), f.cache))
	if requests.gone.Load() == 0 || requests.relists() == 0 {
		t.Errorf("the fault did not strike: %d watches ended 410 Gone, %d relists", requests.gone.Load(), requests.relists())
	}
	f.checkNoLeak(t)
}

// TestFaultControllerKill kills `ferry controller` with SIGKILL twice during the burst
// and starts a new one each time, as a crash or an OOM kill and a Deployment's restart
// would.
func TestFaultControllerKill(t *testing.T) {
	n := faultSetup(t)
	ns := testNamespace(t)
	startStandInGateway(t, testConfig, ns)
	args := []string{"controller", "--kubeconfig", testCluster.KubeconfigPath(), "--metrics-addr", "0", "--stats-addr", "0"}
	p := startProcess(t, "ferry controller", nil, args...)

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), burstTimeout(n))
	defer cancel()
	b := startBurst(ctx, testClient, ns, n)
	const kills = 2
	for i := 1; i <= kills; i++ {
		b.waitCreated(i * n / (kills + 1))
		if p.Exited() {
			t.Fatalf("ferry controller exited by itself:\n%s", p.Output())
		}
		p.Kill()
		t.Logf("kill -9 %d at %d/%d Services created", i, b.created.Load(), n)
		p = startProcess(t, "ferry controller", nil, args...)
	}
	b.wait(t)
	logReady(t, n, start, checkBurst(t, testClient, b, burstTimeout(n), nil))
}

// TestFaultWatchClose ends each of the controller's watch streams after a random
// 0–5 s; client-go must watch again without losing an event.
func TestFaultWatchClose(t *testing.T) {
	n := faultSetup(t)
	cutter := &watchCutter{max: 5 * time.Second}
	f, requests := startFaultController(t, testConfig, faultControllerOptions{Wrap: cutter.wrap})
	ns := testNamespace(t)

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), burstTimeout(n))
	defer cancel()
	b := startBurst(ctx, testClient, ns, n)
	b.wait(t)
	t.Cleanup(func() { t.Logf("%d watch cuts, %d relists", cutter.cuts.Load(), requests.relists()) })
	logReady(t, n, start, checkBurst(t, testClient, b, burstTimeout(n), f.cache))
	if cutter.cuts.Load() == 0 {
		t.Error("no watch was cut")
	}
	f.checkNoLeak(t)
}

// TestFaultCacheReadDelay makes every Get from the controller's cache (the manager's
// client reads through it) return 0–50 ms late, so reconcilers act on older objects.
func TestFaultCacheReadDelay(t *testing.T) {
	n := faultSetup(t)
	var delayed *delayedCache
	newCache := func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		c, err := cache.New(cfg, opts)
		delayed = &delayedCache{Cache: c, max: 50 * time.Millisecond}
		return delayed, err
	}
	f, _ := startFaultController(t, testConfig, faultControllerOptions{NewCache: newCache})
	ns := testNamespace(t)

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), burstTimeout(n))
	defer cancel()
	b := startBurst(ctx, testClient, ns, n)
	b.wait(t)
	t.Cleanup(func() { t.Logf("%d delayed cache Gets", delayed.reads.Load()) })
	logReady(t, n, start, checkBurst(t, testClient, b, burstTimeout(n), f.cache))
	if delayed.reads.Load() == 0 {
		t.Error("no cache Get was delayed")
	}
	f.checkNoLeak(t)
}

func logReady(t *testing.T, n int, start time.Time, wait time.Duration) {
	t.Helper()
	t.Logf("N=%d: all Ready %v after the burst began, %v after its last write", n, time.Since(start).Round(time.Second), wait.Round(time.Second))
}

// startStandInGateway runs only the stand-in gateway in this process, for a
// controller running as a process of its own.
func startStandInGateway(t *testing.T, cfg *rest.Config, ns string) {
	t.Helper()
	mgr := newTestManager(t, cfg, ns)
	if err := ctrl.NewControllerManagedBy(mgr).Named("fault-gateway").For(&netv1alpha1.Ingress{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: reconciler.DefaultWorkers}).
		Complete(&fakeGateway{client: mgr.GetClient()}); err != nil {
		t.Fatal(err)
	}
	runTestManager(t, mgr)
}

// clientAndNamespace returns the child cluster's admin config, a client for it, and
// the namespace the burst runs in, created.
func (fc *faultCluster) clientAndNamespace(t *testing.T) (*rest.Config, client.Client, string) {
	t.Helper()
	cfg := fc.restConfig(t)
	c, err := client.New(cfg, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	const ns = "fault"
	createNamespace(t, c, ns)
	return cfg, c, ns
}
