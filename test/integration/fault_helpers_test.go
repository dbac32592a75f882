package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/net/http2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/localcluster"
	"github.com/ferry-serving/ferry/internal/reconciler"
)

// faultSetup returns the size of each fault's burst: 100 in CI, FERRY_FAULT_N (500
// for the long form) when set. It also shows the controllers' errors in the output.
func faultSetup(t *testing.T) int {
	t.Helper()
	setLoggerOnce.Do(func() { ctrl.SetLogger(logr.New(errorSink{})) })
	s := os.Getenv("FERRY_FAULT_N")
	if s == "" {
		return 100
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 2 {
		t.Fatalf("FERRY_FAULT_N=%q: want a number ≥ 2", s)
	}
	return n
}

// burst creates n Services at once and, right after its create, changes the template
// of every other one, so that both a first and a second generation are in flight
// while a fault strikes. Writes are retried until ctx ends: during a fault the API
// server may be away.
type burst struct {
	c       client.Client
	ns      string
	n       int
	created atomic.Int64
	done    chan error
}

// burstImage is what every burst Service runs; kwok makes its pods Ready at once.
const burstImage = "example.com/fault"

func startBurst(ctx context.Context, c client.Client, ns string, n int) *burst {
	b := &burst{c: c, ns: ns, n: n, done: make(chan error, 1)}
	go func() {
		const concurrency = 20
		names := make(chan int)
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for range concurrency {
			wg.Go(func() {
				for i := range names {
					errs <- b.one(ctx, i)
				}
			})
		}
		for i := range n {
			names <- i
		}
		close(names)
		wg.Wait()
		close(errs)
		var first error
		for err := range errs {
			if err != nil && first == nil {
				first = err
			}
		}
		b.done <- first
	}()
	return b
}

func (b *burst) name(i int) string { return fmt.Sprintf("fault-%04d", i) }

// updated reports whether the burst gives Service i a second generation.
func (b *burst) updated(i int) bool { return i%2 == 0 }

func (b *burst) one(ctx context.Context, i int) error {
	svc := ksvc(b.ns, b.name(i), burstImage)
	if err := untilDone(ctx, func() error {
		err := b.c.Create(ctx, svc.DeepCopy())
		if apierrors.IsAlreadyExists(err) { // an earlier try went through, its answer lost
			return nil
		}
		return err
	}); err != nil {
		return fmt.Errorf("creating %s: %w", svc.Name, err)
	}
	b.created.Add(1)
	if !b.updated(i) {
		return nil
	}
	return untilDone(ctx, func() error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &v1.Service{}
			if err := b.c.Get(ctx, client.ObjectKeyFromObject(svc), cur); err != nil {
				return err
			}
			if len(cur.Spec.Template.Spec.Containers[0].Env) > 0 { // an earlier try went through
				return nil
			}
			cur.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "GENERATION", Value: "2"}}
			return b.c.Update(ctx, cur)
		})
	})
}

// untilDone retries f until it succeeds or ctx ends.
func untilDone(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitCreated blocks until at least k Services have been created (or the burst ended).
func (b *burst) waitCreated(k int) {
	for b.created.Load() < int64(k) {
		select {
		case err := <-b.done:
			b.done <- err
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (b *burst) wait(t *testing.T) {
	t.Helper()
	if err := <-b.done; err != nil {
		t.Fatalf("burst: %v", err)
	}
}

// checkBurst waits until every Service of the burst is Ready, then checks what a user
// would look at: each Service's status names the Revision of its Configuration's
// current generation as latest created, latest ready and the target of all traffic,
// with a URL; that Revision runs the Service's final template; no Configuration
// generation has two Revisions. It returns how long the wait took. cached, if not
// nil, is the controller's cache, compared with the API server for stuck Services.
func checkBurst(t *testing.T, c client.Client, b *burst, timeout time.Duration, cached client.Reader) time.Duration {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	var svcs v1.ServiceList
	for {
		if err := c.List(ctx, &svcs, client.InNamespace(b.ns)); err != nil {
			t.Logf("listing Services: %v", err) // the API server may be restarting
		} else if ready(svcs.Items) == b.n {
			break
		}
		if time.Since(start) > timeout {
			var stuck []string
			for _, s := range svcs.Items {
				if !isReady(&s) {
					stuck = append(stuck, fmt.Sprintf("%s (generation %d, observed %d): %s", s.Name, s.Generation, s.Status.ObservedGeneration, conditions(s.Status.Conditions)))
				}
			}
			t.Errorf("%d/%d Services Ready after %v, %d stuck (%d never listed):\n%s", ready(svcs.Items), b.n, timeout.Round(time.Second),
				len(stuck), b.n-len(svcs.Items), strings.Join(stuck[:min(len(stuck), 20)], "\n"))
			explainStuck(t, c, cached, svcs.Items)
			t.FailNow()
		}
		time.Sleep(time.Second)
	}
	took := time.Since(start)

	var cfgs v1.ConfigurationList
	var revs v1.RevisionList
	if err := c.List(ctx, &cfgs, client.InNamespace(b.ns)); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &revs, client.InNamespace(b.ns)); err != nil {
		t.Fatal(err)
	}
	cfgGen := map[string]int64{}
	for _, cfg := range cfgs.Items {
		cfgGen[cfg.Name] = cfg.Generation
	}
	// Revisions by Configuration, then by the Configuration generation they were made for.
	perGen := map[string]map[string][]*v1.Revision{}
	for i := range revs.Items {
		r := &revs.Items[i]
		cfg, gen := r.Labels[v1.ConfigurationLabelKey], r.Labels[v1.ConfigurationGenerationLabelKey]
		if perGen[cfg] == nil {
			perGen[cfg] = map[string][]*v1.Revision{}
		}
		perGen[cfg][gen] = append(perGen[cfg][gen], r)
	}
	var wrong []string
	for i := range b.n {
		name := b.name(i)
		for gen, rs := range perGen[name] {
			if len(rs) != 1 {
				wrong = append(wrong, fmt.Sprintf("%s: %d Revisions for generation %s", name, len(rs), gen))
			}
		}
		want := fmt.Sprintf("%s-%05d", name, cfgGen[name])
		if rs := perGen[name][strconv.FormatInt(cfgGen[name], 10)]; len(rs) != 1 || rs[0].Name != want {
			wrong = append(wrong, fmt.Sprintf("%s: no Revision %s for the Configuration's generation %d", name, want, cfgGen[name]))
		} else if got, wantEnv := len(rs[0].Spec.Containers[0].Env) > 0, b.updated(i); got != wantEnv {
			wrong = append(wrong, fmt.Sprintf("%s: Revision %s runs the template before the Service's update", name, want))
		}
		svc := find(svcs.Items, name)
		if svc == nil {
			wrong = append(wrong, name+": missing")
			continue
		}
		if why := wrongStatus(svc, want); why != "" {
			wrong = append(wrong, name+": "+why)
		}
	}
	if len(wrong) > 0 {
		t.Errorf("%d problems in the final state, e.g.:\n%s", len(wrong), strings.Join(wrong[:min(len(wrong), 20)], "\n"))
	}
	return took
}

// explainStuck logs, for a few stuck Services, their Configuration and Route as the
// API server has them and the resourceVersion the controller's cache holds: a cache
// behind the server for minutes means a watch event was lost.
func explainStuck(t *testing.T, c client.Client, cached client.Reader, svcs []v1.Service) {
	t.Helper()
	ctx := context.Background()
	shown := 0
	for i := range svcs {
		if isReady(&svcs[i]) || shown == 3 {
			continue
		}
		shown++
		key := client.ObjectKeyFromObject(&svcs[i])
		for _, obj := range []client.Object{&v1.Configuration{}, &v1.Route{}, &netv1alpha1.Ingress{}} {
			if err := c.Get(ctx, key, obj); err != nil {
				t.Logf("%T %s: %v", obj, key, err)
				continue
			}
			inCache := "no cache"
			if cached != nil {
				fromCache := obj.DeepCopyObject().(client.Object)
				if err := cached.Get(ctx, key, fromCache); err != nil {
					inCache = err.Error()
				} else {
					inCache = "resourceVersion " + fromCache.GetResourceVersion() + " in the controller's cache"
				}
			}
			obj.SetManagedFields(nil)
			b, _ := json.Marshal(obj)
			t.Logf("%T %s (%s): %s", obj, key, inCache, b)
		}
	}
}

func ready(svcs []v1.Service) int {
	n := 0
	for i := range svcs {
		if isReady(&svcs[i]) {
			n++
		}
	}
	return n
}

func isReady(s *v1.Service) bool {
	return s.Status.ObservedGeneration == s.Generation && s.Status.GetCondition("Ready").IsTrue()
}

func find(svcs []v1.Service, name string) *v1.Service {
	for i := range svcs {
		if svcs[i].Name == name {
			return &svcs[i]
		}
	}
	return nil
}

// wrongStatus says what is wrong with a Ready Service's status, given the Revision
// it should serve.
func wrongStatus(s *v1.Service, rev string) string {
	st := &s.Status
	switch {
	case !isReady(s):
		return fmt.Sprintf("not Ready: observedGeneration %d/%d, %s", st.ObservedGeneration, s.Generation, conditions(st.Conditions))
	case st.LatestCreatedRevisionName != rev || st.LatestReadyRevisionName != rev:
		return fmt.Sprintf("latestCreated %q, latestReady %q, want %q", st.LatestCreatedRevisionName, st.LatestReadyRevisionName, rev)
	case len(st.Traffic) != 1 || st.Traffic[0].RevisionName != rev || st.Traffic[0].Percent == nil || *st.Traffic[0].Percent != 100:
		return fmt.Sprintf("traffic %+v, want 100%% to %s", st.Traffic, rev)
	case st.URL == "":
		return "no URL"
	}
	return ""
}

func conditions[C any](cs []C) string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%+v", c))
	}
	return strings.Join(out, " ")
}

// faultController is Ferry's reconcilers, with the stand-in gateway, running in this
// process under a pprof label of their own, so that once stopped every goroutine they
// started can be told apart from the shared cluster's and must be gone.
type faultController struct {
	cache     client.Reader
	label     string
	cancel    context.CancelFunc
	done      chan error
	closeIdle func()
}

var faultControllers atomic.Int64

// faultControllerOptions inject a fault into an in-process controller.
type faultControllerOptions struct {
	// Wrap wraps the controller's transport (after the request counter).
	Wrap func(http.RoundTripper) http.RoundTripper
	// NewCache replaces the manager's cache.
	NewCache cache.NewCacheFunc
}

// startFaultController runs the reconcilers and the stand-in gateway on cfg until
// stop is called (or the test ends).
func startFaultController(t *testing.T, cfg *rest.Config, opts faultControllerOptions) (*faultController, *requestCounter) {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, -1
	f := &faultController{label: fmt.Sprintf("fault-controller-%d", faultControllers.Add(1)), done: make(chan error, 1)}
	// The controller gets a transport of its own, not client-go's shared one whose
	// connections other clients hold open, built here so that its idle connections can
	// be closed after the stop: http.Transport.CloseIdleConnections does not reach the
	// HTTP/2 connections of an x/net/http2 transport, which client-go uses.
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := &http.Transport{TLSClientConfig: tlsConfig, Proxy: http.ProxyFromEnvironment, IdleConnTimeout: 90 * time.Second}
	h2, err := http2.ConfigureTransports(base)
	if err != nil {
		t.Fatal(err)
	}
	f.closeIdle = func() { base.CloseIdleConnections(); h2.CloseIdleConnections() }
	cfg.Transport, cfg.TLSClientConfig = base, rest.TLSClientConfig{}
	counter := &requestCounter{lists: map[string]int{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		rt = counter.wrap(rt)
		if opts.Wrap != nil {
			rt = opts.Wrap(rt)
		}
		return rt
	})
	var ctx context.Context
	ctx, f.cancel = context.WithCancel(context.Background())
	var setupErr error
	pprof.Do(ctx, pprof.Labels("ferry-fault", f.label), func(ctx context.Context) {
		skipNameValidation := true
		var mgr ctrl.Manager
		mgr, setupErr = ctrl.NewManager(cfg, ctrl.Options{
			Scheme:                 testScheme,
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
			Controller:             config.Controller{SkipNameValidation: &skipNameValidation},
			NewCache:               opts.NewCache,
		})
		if setupErr != nil {
			return
		}
		if _, setupErr = reconciler.SetupWithManager(mgr, reconciler.Options{}); setupErr != nil {
			return
		}
		if setupErr = ctrl.NewControllerManagedBy(mgr).Named("fault-gateway").For(&netv1alpha1.Ingress{}).
			WithOptions(controller.Options{MaxConcurrentReconciles: reconciler.DefaultWorkers}).
			Complete(&fakeGateway{client: mgr.GetClient()}); setupErr != nil {
			return
		}
		f.cache = mgr.GetCache()
		go func() { f.done <- mgr.Start(ctx) }()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			setupErr = fmt.Errorf("the controller's cache did not sync")
		}
	})
	t.Cleanup(func() { f.stop() })
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return f, counter
}

// stop stops the controller and waits for its manager to return.
func (f *faultController) stop() error {
	if f.cancel == nil {
		return nil
	}
	f.cancel()
	f.cancel = nil
	select {
	case err := <-f.done:
		return err
	case <-time.After(time.Minute):
		return fmt.Errorf("the manager did not stop within a minute")
	}
}

// checkNoLeak stops the controller and checks that every goroutine it started ends,
// allowing a settling time: a goroutine still there after 30 s is a leak.
func (f *faultController) checkNoLeak(t *testing.T) {
	t.Helper()
	if err := f.stop(); err != nil {
		t.Errorf("stopping the controller: %v", err)
	}
	var left int
	var stacks string
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Idle keep-alive connections are the transport's, not a leak; they would
		// otherwise linger for 90 s.
		f.closeIdle()
		if left, stacks = labelledGoroutines(f.label); left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d goroutines of the stopped controller still running after 30 s:\n%s", left, stacks)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// labelledGoroutines counts the goroutines carrying the pprof label ferry-fault=label
// and returns their stacks.
func labelledGoroutines(label string) (int, string) {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
	want := fmt.Sprintf(`"ferry-fault":"%s"`, label)
	n := 0
	var stacks []string
	for _, block := range strings.Split(buf.String(), "\n\n") {
		if !strings.Contains(block, want) {
			continue
		}
		count, _, _ := strings.Cut(block, " ")
		k, _ := strconv.Atoi(count)
		n += k
		stacks = append(stacks, block)
	}
	return n, strings.Join(stacks, "\n\n")
}

// requestCounter counts a controller's LISTs per resource (each informer's first is
// its initial list, any more a relist) and the watch streams that ended with 410
// Gone.
type requestCounter struct {
	mu    sync.Mutex
	lists map[string]int
	gone  atomic.Int64
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		q := req.URL.Query()
		watching := q.Get("watch") == "true"
		if req.Method == http.MethodGet && (!watching || q.Get("sendInitialEvents") == "true") && q.Get("resourceVersion") != "" {
			// Informers list with a resourceVersion; the reconcilers' direct reads have none.
			c.mu.Lock()
			c.lists[req.URL.Path]++
			c.mu.Unlock()
		}
		resp, err := rt.RoundTrip(req)
		if err == nil && watching {
			resp.Body = &goneScanner{ReadCloser: resp.Body, gone: &c.gone}
		}
		return resp, err
	})
}

// relists is how many LISTs informers made beyond their first.
func (c *requestCounter) relists() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, k := range c.lists {
		n += k - 1
	}
	return n
}

// goneScanner counts a watch that carries a 410 Gone: "The resourceVersion for the
// provided watch is too old." from etcd, "too old resource version" from the watch
// cache. The words are plain text in JSON and protobuf alike.
type goneScanner struct {
	io.ReadCloser
	gone *atomic.Int64
	tail []byte
	seen bool
}

func (g *goneScanner) Read(p []byte) (int, error) {
	n, err := g.ReadCloser.Read(p)
	if !g.seen && n > 0 {
		g.tail = append(g.tail, p[:n]...)
		if bytes.Contains(g.tail, []byte("too old")) {
			g.seen = true
			g.gone.Add(1)
		}
		if len(g.tail) > 64 { // enough to find the words across two reads
			g.tail = slices.Clone(g.tail[len(g.tail)-64:])
		}
	}
	return n, err
}

// watchCutter ends watch streams after a random time in [min, max), as an API server
// ending a watch or a dropped connection does: the stream's reader sees EOF, and
// client-go must watch again from the last resourceVersion it saw.
type watchCutter struct {
	min, max time.Duration
	// rewatchDelay, if set, holds a watch request back this long after a cut of a
	// watch on the same path: the connection stays down for a while.
	rewatchDelay time.Duration
	cuts         atomic.Int64
	mu           sync.Mutex
	cutPaths     map[string]bool
}

func (w *watchCutter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.URL.Query().Get("watch") != "true" {
			return rt.RoundTrip(req)
		}
		if w.rewatchDelay > 0 && w.takeCut(req.URL.Path) {
			select {
			case <-time.After(w.rewatchDelay):
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		body := &cutBody{ReadCloser: resp.Body}
		body.timer = time.AfterFunc(w.min+rand.N(w.max-w.min), func() {
			w.cuts.Add(1)
			w.markCut(req.URL.Path)
			body.cut.Store(true)
			body.ReadCloser.Close()
		})
		resp.Body = body
		return resp, nil
	})
}

func (w *watchCutter) markCut(path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cutPaths == nil {
		w.cutPaths = map[string]bool{}
	}
	w.cutPaths[path] = true
}

func (w *watchCutter) takeCut(path string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	cut := w.cutPaths[path]
	delete(w.cutPaths, path)
	return cut
}

// cutBody is a watch stream that reads as ended (EOF) once cut.
type cutBody struct {
	io.ReadCloser
	cut   atomic.Bool
	timer *time.Timer
}

func (b *cutBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.cut.Load() {
		return n, io.EOF
	}
	return n, err
}

func (b *cutBody) Close() error {
	b.timer.Stop()
	return b.ReadCloser.Close()
}

// delayedCache makes every Get from the manager's cache (the reconcilers' reads of
// their object and its children) return 0–max late, so that a reconciler acts on an
// object that much older. Lists are not delayed: with Lists delayed too, 8 of 100
// Services were Ready after 3 minutes, the 8205 reads made at ~45 a second as if one
// after another (docs/faults.md); that measures throughput, not staleness.
type delayedCache struct {
	cache.Cache
	max   time.Duration
	reads atomic.Int64
}

func (c *delayedCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Cache.Get(ctx, key, obj, opts...)
	c.reads.Add(1)
	time.Sleep(rand.N(c.max))
	return err
}

// The fault tests run a second control plane in a child process of the test binary,
// which they can stop and start again on the same data directory and port.
const (
	faultClusterDirEnv   = "FERRY_TEST_FAULT_CLUSTER_DIR"
	faultClusterPortEnv  = "FERRY_TEST_FAULT_CLUSTER_PORT"
	faultClusterFlagsEnv = "FERRY_TEST_FAULT_CLUSTER_APISERVER_FLAGS"
	faultClusterReady    = "fault cluster ready"
)

// faultCluster is a local cluster in a child process.
type faultCluster struct {
	dir, port string
	flags     []string
	cmd       *exec.Cmd
	out       *syncBuffer
	exited    chan struct{}
}

func startFaultCluster(t *testing.T, apiServerFlags ...string) *faultCluster {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	fc := &faultCluster{dir: t.TempDir(), port: port, flags: apiServerFlags}
	fc.start(t)
	t.Cleanup(func() {
		fc.stop(t)
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(fc.dir, "control-plane.log")); err == nil && len(b) > 0 {
				t.Logf("the fault cluster's last log lines:\n%s", lastLines(string(b), 30))
			}
		}
	})
	return fc
}

// start runs a life of the cluster and waits until it serves.
func (fc *faultCluster) start(t *testing.T) {
	t.Helper()
	fc.cmd = exec.Command(os.Args[0], "-test.run=^$")
	fc.cmd.Env = append(os.Environ(), faultClusterDirEnv+"="+fc.dir, faultClusterPortEnv+"="+fc.port,
		faultClusterFlagsEnv+"="+strings.Join(fc.flags, " "))
	stdout, err := fc.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	fc.out = &syncBuffer{}
	fc.cmd.Stderr = fc.out
	if err := fc.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			if sc.Text() == faultClusterReady && !sent {
				ready <- true
				sent = true
			}
		}
		if !sent {
			ready <- false
		}
	}()
	fc.exited = make(chan struct{})
	go func() { _ = fc.cmd.Wait(); close(fc.exited) }()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("the fault cluster exited before it was ready:\n%s", fc.out.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("the fault cluster was not ready after 3 minutes:\n%s", fc.out.String())
	}
}

// stop shuts the cluster down as `ferry up` does on Ctrl-C.
func (fc *faultCluster) stop(t *testing.T) {
	t.Helper()
	if fc.cmd == nil {
		return
	}
	_ = fc.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-fc.exited:
	case <-time.After(30 * time.Second):
		_ = fc.cmd.Process.Kill()
		<-fc.exited
		t.Errorf("the fault cluster did not stop within 30 s")
	}
	fc.cmd = nil
}

// logCount counts the lines of the current life's control-plane log that contain s.
func (fc *faultCluster) logCount(t *testing.T, s string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fc.dir, "control-plane.log"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), s)
}

func (fc *faultCluster) restConfig(t *testing.T) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(fc.dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// runFaultCluster is the body of the child process: a local cluster on the given
// directory and port until SIGTERM.
func runFaultCluster(dir string) int {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer cancel()
	port, err := strconv.Atoi(os.Getenv(faultClusterPortEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cluster, err := localcluster.Start(ctx, localcluster.Options{DataDir: dir, APIServerPort: port,
		APIServerFlags: strings.Fields(os.Getenv(faultClusterFlagsEnv))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(faultClusterReady)
	<-ctx.Done()
	if err := cluster.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return 0
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// createNamespace creates ns on a cluster other than the shared one.
func createNamespace(t *testing.T, c client.Client, ns string) {
	t.Helper()
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
}
