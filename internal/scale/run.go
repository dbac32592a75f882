package scale

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/explain"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options configure a run.
type Options struct {
	// Config reaches the API server. The run's clients are not rate limited on the
	// client side unless Config.QPS is set: the API server's own limits are what is
	// measured.
	Config *rest.Config
	// Namespace holds the run's Services; it is created when missing. With
	// Namespaces > 1 it is the base of their names.
	Namespace string
	// Namespaces spreads the Services over this many namespaces (default 1: just
	// Namespace), <Namespace>-0 … <Namespace>-<K-1>, each created when missing:
	// Service i goes to namespace i mod K, the warm-up to the first.
	Namespaces int
	// N Services are created, at most Concurrency creates in flight.
	N           int
	Concurrency int
	// TimeoutPerService is each Service's deadline from its create request.
	TimeoutPerService time.Duration
	Image             string
	// GatewayURL, when set, is probed for each Ready Service with its URL's host
	// until a request is routed to its revision.
	GatewayURL string
	// RunID labels the run's objects (default: RunID of the start time).
	RunID string
	// Warmup first creates one Service and waits until it is Ready (and routed), so
	// that the run does not time Ferry's start-up. Its writes are not counted.
	Warmup bool
	// Progress receives progress; Terminal draws a bar in place.
	Progress io.Writer
	Terminal bool
	// InProcess says the control plane runs in this process: Result.Process reports
	// its CPU and memory.
	InProcess bool
	// FerryWrites, if set, counts Ferry's own writes (its rest.Config wrapped).
	FerryWrites *WriteCounter
	// Phases also watches the Services' Configurations, Revisions, Deployments,
	// pods, Routes and KIngresses, to tell when each reached which milestone: where
	// the time goes. The watches add some load on the API server.
	Phases bool
	// Rand draws the names (default: seeded at random).
	Rand *rand.Rand
}

func (o Options) withDefaults() (Options, error) {
	if o.Config == nil {
		return o, errors.New("scale: no rest.Config")
	}
	if o.N <= 0 {
		return o, fmt.Errorf("scale: N must be positive, not %d", o.N)
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.TimeoutPerService <= 0 {
		o.TimeoutPerService = DefaultTimeoutPerService
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if o.RunID == "" {
		o.RunID = RunID(time.Now(), o.Rand)
	}
	if o.Namespace == "" {
		o.Namespace = "ferry-scale-" + o.RunID
	}
	switch {
	case o.Namespaces == 0:
		o.Namespaces = 1
	case o.Namespaces < 0 || o.Namespaces > o.N:
		return o, fmt.Errorf("scale: Namespaces must be between 1 and N (%d), not %d", o.N, o.Namespaces)
	case o.Namespaces > 1:
		if err := validNamespaces(NamespaceNames(o.Namespace, o.Namespaces)); err != nil {
			return o, err
		}
	}
	if o.GatewayURL != "" && !strings.Contains(o.GatewayURL, "://") {
		o.GatewayURL = "http://" + o.GatewayURL
	}
	return o, nil
}

// runner is the state of one run. The per-Service slices are indexed like the names
// and guarded by mu.
type runner struct {
	o    Options
	cfg  *rest.Config
	c    client.WithWatch
	http *http.Client
	// namespaces are the run's, the first one's Services and the warm-up in it;
	// inRun is them as a set.
	namespaces []string
	inRun      map[string]bool

	mu         sync.Mutex
	names      []string
	index      map[string]int
	start      []time.Time
	createdAt  []time.Time
	readyAt    []time.Time
	routedAt   []time.Time
	createErr  []string
	createWarn [][]string
	probing    []bool
	probeDone  []bool
	attempts   []int
	lastAnswer []string
	reached    [][numMilestones]time.Time

	probeSem chan struct{}
	probes   sync.WaitGroup
	// closed stops new probes once the run waits for the last ones.
	closed bool
}

// Run creates o.N Services, follows them until each is Ready (and routed, with a
// gateway) or past its deadline, and returns what it measured, with an explanation
// for each Service that missed its deadline. A cancelled ctx ends the run early; the
// partial result is returned with the error.
func Run(ctx context.Context, o Options) (*Result, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &runner{o: o, cfg: unthrottled(o.Config), probeSem: make(chan struct{}, o.Concurrency),
		namespaces: NamespaceNames(o.Namespace, o.Namespaces), inRun: map[string]bool{}}
	for _, ns := range r.namespaces {
		r.inRun[ns] = true
	}
	// Warnings are the run's to report (as each Service's CreateWarning), not to print.
	r.cfg.WarningHandler, r.cfg.WarningHandlerWithContext = nil, r
	if r.c, err = client.NewWithWatch(r.cfg, client.Options{Scheme: Scheme()}); err != nil {
		return nil, err
	}
	r.http = &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: o.Concurrency, IdleConnTimeout: 30 * time.Second},
	}
	defer r.http.CloseIdleConnections()

	res := &Result{RunID: o.RunID, Namespace: r.namespaces[0], Namespaces: r.namespaces, N: o.N, Concurrency: o.Concurrency,
		Image: o.Image, TimeoutPerService: o.TimeoutPerService, Gateway: o.GatewayURL, InProcess: o.InProcess}
	res.NamespacesCreated, err = ensureNamespaces(ctx, r.c, r.namespaces)
	res.NamespaceCreated = len(res.NamespacesCreated) > 0 && res.NamespacesCreated[0] == r.namespaces[0]
	if err != nil {
		return nil, err
	}
	if o.Warmup {
		if err := r.warmup(ctx); err != nil {
			return nil, err
		}
	}

	r.names = make([]string, o.N)
	r.index = make(map[string]int, o.N)
	for i := range r.names {
		r.names[i] = ServiceName(o.N, i, RandomSuffix(o.Rand))
		r.index[r.names[i]] = i
	}
	r.start, r.createdAt, r.readyAt, r.routedAt = make([]time.Time, o.N), make([]time.Time, o.N), make([]time.Time, o.N), make([]time.Time, o.N)
	r.createErr, r.createWarn, r.lastAnswer = make([]string, o.N), make([][]string, o.N), make([]string, o.N)
	r.probing, r.probeDone, r.attempts = make([]bool, o.N), make([]bool, o.N), make([]int, o.N)
	r.reached = make([][numMilestones]time.Time, o.N)

	// Follow the run's Services (and, for the phases, their children) with watches
	// before the first create.
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	informer, err := r.watchServices(watchCtx, r.scope(), labels.Set{RunLabel: o.RunID}, func(svc *v1.Service) { r.observe(ctx, svc) })
	if err != nil {
		return nil, err
	}
	if o.Phases {
		if err := r.watchChildren(watchCtx); err != nil {
			return nil, err
		}
	}

	before, beforeErr := ScrapeRequestTotals(ctx, r.cfg)
	var ferryBefore Counts
	if o.FerryWrites != nil {
		ferryBefore = o.FerryWrites.Snapshot()
	}
	proc := takeProcessSnapshot()

	t0 := time.Now()
	res.Started = t0
	createsDone := make(chan struct{})
	go func() { defer close(createsDone); r.createAll(ctx) }()

	prog := newProgress(o.Progress, o.Terminal)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var runErr error
	for {
		c, settled := r.counters(time.Now(), t0)
		if settled {
			<-createsDone
			prog.show(c, true)
			break
		}
		prog.show(c, false)
		select {
		case <-ctx.Done():
			runErr = ctx.Err()
		case <-tick.C:
		}
		if runErr != nil {
			c, _ := r.counters(time.Now(), t0)
			prog.show(c, true)
			break
		}
	}
	end := time.Now()
	stopWatch()
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.probes.Wait()

	// What it cost: the API server's writes, Ferry's, the process's.
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	after, afterErr := ScrapeRequestTotals(mctx, r.cfg)
	switch {
	case beforeErr != nil:
		res.WritesError = "scraping the API server's /metrics before the run: " + beforeErr.Error()
	case afterErr != nil:
		res.WritesError = "scraping the API server's /metrics after the run: " + afterErr.Error()
	default:
		res.Writes = after.Sub(before).Writes()
	}
	if o.FerryWrites != nil {
		res.FerryWrites = o.FerryWrites.Snapshot().Sub(ferryBefore).Writes()
	}
	if o.InProcess {
		res.Process = usageBetween(proc, end.Sub(t0).Seconds())
	}

	r.fillResult(res, t0, end)
	if err := r.explainStuck(mctx, res, informer.GetStore()); err != nil {
		res.Notes = append(res.Notes, "could not read the stuck Services' objects to explain them: "+err.Error())
	}
	return res, runErr
}

// counters are the live counts; settled says every Service is done: Ready (and
// routed, or given up on), failed to create, or past its deadline.
func (r *runner) counters(now, t0 time.Time) (Counters, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := Counters{N: r.o.N, Probing: r.o.GatewayURL != "", Elapsed: now.Sub(t0)}
	settled := true
	for i := range r.names {
		switch {
		case r.createErr[i] != "":
			c.Failed++
			continue
		case r.start[i].IsZero():
			settled = false
			continue
		}
		if !r.createdAt[i].IsZero() {
			c.Created++
		}
		late := now.After(r.start[i].Add(r.o.TimeoutPerService))
		if !r.routedAt[i].IsZero() {
			c.Routed++
		}
		if r.readyAt[i].IsZero() {
			if late {
				c.Stuck++
			} else {
				settled = false
			}
			continue
		}
		c.Ready++
		if c.Probing && r.routedAt[i].IsZero() && !r.probeDone[i] {
			settled = false
		}
	}
	return c, settled
}

// createAll creates the Services, at most Concurrency at once.
func (r *runner) createAll(ctx context.Context) {
	sem := make(chan struct{}, r.o.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range r.names {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			r.mu.Lock()
			for j := i; j < len(r.names); j++ {
				r.createErr[j] = "not created: the run was cancelled"
			}
			r.mu.Unlock()
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			r.create(ctx, i)
		})
	}
}

func (r *runner) create(ctx context.Context, i int) {
	ctx = context.WithValue(ctx, sampleKey{}, i)
	svc := r.service(r.nsOf(i), r.names[i], r.o.RunID)
	r.mu.Lock()
	r.start[i] = time.Now()
	r.mu.Unlock()
	err := createWithRetry(ctx, r.c, svc)
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.createErr[i] = err.Error()
		return
	}
	r.createdAt[i] = now
}

// sampleKey marks a create request's context with its Service's index, so that the
// warning it is answered with is recorded with the Service.
type sampleKey struct{}

// HandleWarningHeaderWithContext records a create's warnings (rest.WarningHandlerWithContext).
func (r *runner) HandleWarningHeaderWithContext(ctx context.Context, _ int, _ string, text string) {
	if i, ok := ctx.Value(sampleKey{}).(int); ok {
		r.mu.Lock()
		r.createWarn[i] = append(r.createWarn[i], text)
		r.mu.Unlock()
	}
}

// createWithRetry retries what an overloaded API server answers (429, timeouts,
// 500s) a few times; AlreadyExists on a retry means the earlier attempt went
// through.
func createWithRetry(ctx context.Context, c client.Client, obj client.Object) error {
	delay := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := c.Create(ctx, obj)
		if err == nil || (attempt > 0 && apierrors.IsAlreadyExists(err)) {
			return nil
		}
		transient := apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
			apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
		if !transient || attempt >= 4 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay *= 2
	}
}

// service is the Service the run creates in ns: the image, and the run label on the
// Service and its template (so Revisions, Deployments and pods carry it too).
func (r *runner) service(ns, name, runLabel string) *v1.Service {
	l := map[string]string{RunLabel: runLabel}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l}}
	svc.Spec.Template.ObjectMeta.Labels = map[string]string{RunLabel: runLabel}
	svc.Spec.Template.Spec.Containers = []corev1.Container{{Image: r.o.Image}}
	return svc
}

// observe records the first time a Service is seen Ready and starts its probe.
func (r *runner) observe(ctx context.Context, svc *v1.Service) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	i, ok := r.index[svc.Name]
	if !ok || svc.Namespace != r.nsOf(i) || !r.readyAt[i].IsZero() || !svc.IsReady() {
		return
	}
	r.readyAt[i] = now
	r.reached[i][ServiceReady] = now
	if r.o.GatewayURL == "" || r.probing[i] || r.closed {
		return
	}
	r.probing[i] = true
	start := r.start[i]
	if start.IsZero() { // the watch beat the create's bookkeeping
		start = now
	}
	deadline := start.Add(r.o.TimeoutPerService)
	host := hostOf(svc.Status.URL)
	r.probes.Go(func() {
		routed, attempts, answer := r.probe(ctx, host, deadline)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.attempts[i], r.probeDone[i] = attempts, true
		if routed.IsZero() {
			r.lastAnswer[i] = answer
		} else {
			r.routedAt[i] = routed
		}
	})
}

func hostOf(u string) string { return explain.HostOf(u) }

// maxProbeAttempts bounds the requests sent to one Service.
const maxProbeAttempts = 200

// probe sends requests to the gateway with the Service's host until one is routed
// to a revision, the deadline passes or the attempts run out. It returns when the
// routed answer came (zero if none), the attempts and the last answer.
func (r *runner) probe(ctx context.Context, host string, deadline time.Time) (time.Time, int, string) {
	if host == "" {
		return time.Time{}, 0, "the Ready Service has no status.url"
	}
	select {
	case r.probeSem <- struct{}{}:
	case <-ctx.Done():
		return time.Time{}, 0, ctx.Err().Error()
	}
	defer func() { <-r.probeSem }()
	delay := 10 * time.Millisecond
	var last string
	for attempt := 1; ; attempt++ {
		ok, answer := r.probeOnce(ctx, host)
		if ok {
			return time.Now(), attempt, ""
		}
		last = answer
		if attempt >= maxProbeAttempts || time.Now().Add(delay).After(deadline) {
			return time.Time{}, attempt, last
		}
		select {
		case <-ctx.Done():
			return time.Time{}, attempt, last
		case <-time.After(delay):
		}
		delay = min(delay*2, 500*time.Millisecond)
	}
}

func (r *runner) probeOnce(ctx context.Context, host string) (bool, string) {
	return explain.Probe(ctx, r.http, r.o.GatewayURL, host)
}

// Routed says whether a gateway answer means the request reached a revision (see
// explain.Routed).
func Routed(status int, body string) bool { return explain.Routed(status, body) }

// nsOf is the namespace of the i-th Service.
func (r *runner) nsOf(i int) string { return r.namespaces[NamespaceIndex(i, len(r.namespaces))] }

// sampleNamespace is the i-th Service's namespace for its Sample: only when the run
// has several (else it is the Result's).
func (r *runner) sampleNamespace(i int) string {
	if len(r.namespaces) == 1 {
		return ""
	}
	return r.nsOf(i)
}

// scope is where the run's watches and lists look: its namespace, or the whole
// cluster when it has several (with the run's label, or filtered to its
// namespaces).
func (r *runner) scope() string {
	if len(r.namespaces) == 1 {
		return r.namespaces[0]
	}
	return metav1.NamespaceAll
}

// watchServices runs an informer on the Services in ns ("": all namespaces) that
// match sel, calling f on every add and update, and returns once it has synced.
func (r *runner) watchServices(ctx context.Context, ns string, sel labels.Set, f func(*v1.Service)) (cache.SharedIndexInformer, error) {
	inf, err := r.watch(ctx, ns, nil, func() client.ObjectList { return &v1.ServiceList{} }, &v1.Service{}, sel.AsSelector().String(), func(obj any) {
		if svc, ok := obj.(*v1.Service); ok {
			f(svc)
		}
	})
	if err != nil {
		return nil, err
	}
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("the watch on Services in %s did not sync: %w", r.where(ns), context.Cause(ctx))
	}
	return inf, nil
}

// watchChildren watches the objects the run's Services own, down to the pods, and
// records the milestones they reach. KIngresses do not carry the run's label; all
// of the namespace's Knative ones are watched (with several namespaces: the
// cluster's, those outside the run's namespaces dropped as they arrive).
func (r *runner) watchChildren(ctx context.Context) error {
	run := labels.Set{RunLabel: r.o.RunID}.AsSelector().String()
	var only map[string]bool
	if r.scope() == metav1.NamespaceAll {
		only = r.inRun
	}
	kinds := []struct {
		newList  func() client.ObjectList
		example  runtime.Object
		selector string
		only     map[string]bool
	}{
		{func() client.ObjectList { return &v1.ConfigurationList{} }, &v1.Configuration{}, run, nil},
		{func() client.ObjectList { return &v1.RouteList{} }, &v1.Route{}, run, nil},
		{func() client.ObjectList { return &v1.RevisionList{} }, &v1.Revision{}, run, nil},
		{func() client.ObjectList { return &appsv1.DeploymentList{} }, &appsv1.Deployment{}, run, nil},
		{func() client.ObjectList { return &corev1.PodList{} }, &corev1.Pod{}, run, nil},
		{func() client.ObjectList { return &netv1alpha1.IngressList{} }, &netv1alpha1.Ingress{}, v1.ServiceLabelKey, only},
	}
	var synced []cache.InformerSynced
	for _, k := range kinds {
		inf, err := r.watch(ctx, r.scope(), k.only, k.newList, k.example, k.selector, r.reach)
		if err != nil {
			return err
		}
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("the watches in %s did not sync: %w", r.where(r.scope()), context.Cause(ctx))
	}
	return nil
}

// reach records the milestones obj shows, the first time each is seen.
func (r *runner) reach(obj any) {
	now := time.Now()
	name, reached := milestonesOf(obj)
	if len(reached) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	i, ok := r.index[name]
	if !ok || namespaceOf(obj) != r.nsOf(i) {
		return
	}
	for _, m := range reached {
		if r.reached[i][m].IsZero() {
			r.reached[i][m] = now
		}
	}
}

// where names ns for a message: the namespace, or the run's namespaces.
func (r *runner) where(ns string) string {
	if ns != metav1.NamespaceAll {
		return "namespace " + ns
	}
	return describeNamespaces(r.namespaces)
}

// watch runs an informer on one kind in ns ("": all namespaces), calling f on every
// add and update. With only, objects outside those namespaces are dropped before
// they reach the cache. Managed fields are dropped from its cache.
func (r *runner) watch(ctx context.Context, ns string, only map[string]bool, newList func() client.ObjectList, example runtime.Object, selector string, f func(any)) (cache.SharedIndexInformer, error) {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = selector
			l := newList()
			if err := r.c.List(ctx, l, &client.ListOptions{Namespace: ns, Raw: &opts}); err != nil || only == nil {
				return l, err
			}
			return l, filterList(l, only)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			w, err := r.c.Watch(ctx, newList(), &client.ListOptions{Namespace: ns, Raw: &opts})
			if err != nil || only == nil {
				return w, err
			}
			return filterWatch(w, only), nil
		},
	}
	inf := cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{})
	if err := inf.SetTransform(func(obj any) (any, error) {
		if o, ok := obj.(metav1.Object); ok {
			o.SetManagedFields(nil)
		}
		return obj, nil
	}); err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    f,
		UpdateFunc: func(_, obj any) { f(obj) },
	}); err != nil {
		return nil, err
	}
	go inf.RunWithContext(ctx)
	return inf, nil
}

// warmup creates one Service and waits until it is Ready and, with a gateway,
// routed: Ferry is up and its caches are synced.
func (r *runner) warmup(ctx context.Context) error {
	name := "scale-warmup-" + RandomSuffix(r.o.Rand)
	runLabel := r.o.RunID + "-warmup"
	ctx, cancel := context.WithTimeout(ctx, r.o.TimeoutPerService)
	defer cancel()
	ready := make(chan *v1.Service, 1)
	var once sync.Once
	first := r.namespaces[0]
	if _, err := r.watchServices(ctx, first, labels.Set{RunLabel: runLabel}, func(svc *v1.Service) {
		if svc.IsReady() {
			once.Do(func() { ready <- svc })
		}
	}); err != nil {
		return err
	}
	svc := r.service(first, name, runLabel)
	if err := createWithRetry(ctx, r.c, svc); err != nil {
		return fmt.Errorf("warm-up: creating Service %s: %w", name, err)
	}
	start := time.Now()
	select {
	case got := <-ready:
		if r.o.GatewayURL == "" {
			return nil
		}
		routed, _, answer := r.probe(ctx, hostOf(got.Status.URL), time.Now().Add(r.o.TimeoutPerService))
		if routed.IsZero() {
			return fmt.Errorf("warm-up: Service %s is Ready but the gateway at %s never routed to it; last answer: %s", name, r.o.GatewayURL, answer)
		}
		return nil
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), context.Canceled) {
			return ctx.Err()
		}
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer rcancel()
		snap, _ := r.readRun(rctx, runLabel, first)
		chain, _ := explain.Read(rctx, snap, explain.Target{Kind: explain.KindService, Namespace: first, Name: name})
		return fmt.Errorf("warm-up: Service %s was not Ready after %s; is Ferry running?\n%s", name, fmtDur(time.Since(start)), explain.Explain(chain))
	}
}

// fillResult turns the bookkeeping into samples and totals.
func (r *runner) fillResult(res *Result, t0, end time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	since := func(from, t time.Time) time.Duration {
		if t.IsZero() || from.IsZero() {
			return 0
		}
		return max(t.Sub(from), time.Nanosecond)
	}
	var lastReady, lastRouted time.Time
	allReady, allRouted := true, r.o.GatewayURL != ""
	res.Samples = make([]Sample, len(r.names))
	for i, name := range r.names {
		s := Sample{Index: i, Name: name, Namespace: r.sampleNamespace(i), Created: since(r.start[i], r.createdAt[i]), Ready: since(r.start[i], r.readyAt[i]),
			Routed: since(r.start[i], r.routedAt[i]), RouteAttempts: r.attempts[i], LastAnswer: r.lastAnswer[i], Error: r.createErr[i],
			CreateWarnings: r.createWarn[i]}
		if !r.start[i].IsZero() {
			s.Start = r.start[i].Sub(t0)
		}
		if r.o.Phases {
			s.Milestones = &Milestones{}
			for m, at := range r.reached[i] {
				s.Milestones[m] = since(r.start[i], at)
			}
		}
		deadline := r.o.TimeoutPerService
		switch {
		case s.Error != "", s.Ready == 0, s.Ready > deadline:
			s.Stuck = true
		case r.o.GatewayURL != "" && (s.Routed == 0 || s.Routed > deadline):
			s.Stuck = true
		}
		if s.Ready == 0 {
			allReady = false
		} else if r.readyAt[i].After(lastReady) {
			lastReady = r.readyAt[i]
		}
		if s.Routed == 0 {
			allRouted = false
		} else if r.routedAt[i].After(lastRouted) {
			lastRouted = r.routedAt[i]
		}
		res.Samples[i] = s
	}
	res.AllReady = allReady
	if allReady {
		res.Total = lastReady.Sub(t0)
	} else {
		res.Total = end.Sub(t0)
	}
	if allRouted {
		res.TotalRouted = lastRouted.Sub(t0)
	}
}

// explainStuck reads the stuck Services' objects and explains each.
func (r *runner) explainStuck(ctx context.Context, res *Result, store cache.Store) error {
	var stuck []int
	for i, s := range res.Samples {
		if s.Stuck {
			stuck = append(stuck, i)
		}
	}
	if len(stuck) == 0 {
		return nil
	}
	snap, err := r.readRun(ctx, r.o.RunID, r.scope())
	errs := []error{err}
	for _, i := range stuck {
		s := &res.Samples[i]
		ns := r.nsOf(i)
		// After a failed list, the watch's copy is the next best thing.
		if obj, ok, _ := store.GetByKey(ns + "/" + s.Name); ok {
			snap.Add(obj.(*v1.Service))
		}
		chain, err := explain.Read(ctx, snap, explain.Target{Kind: explain.KindService, Namespace: ns, Name: s.Name})
		errs = append(errs, err)
		chain.CreateError = s.Error
		chain.Deadline = r.o.TimeoutPerService
		chain.ReadyAfter = s.Ready
		chain.Probed = r.o.GatewayURL != "" && s.Ready > 0
		chain.LastAnswer = s.LastAnswer
		if chain.Probed && s.Routed == 0 && chain.LastAnswer == "" {
			chain.LastAnswer = "(no answer recorded)"
		}
		e := explain.Explain(chain)
		s.Explanation = &e
	}
	return errors.Join(errs...)
}

// readRun lists the objects labelled runLabel in ns ("": the cluster), and the
// KIngresses there, which do not carry the label: one list per kind, for
// explain.Read to build every stuck Service's chain from.
func (r *runner) readRun(ctx context.Context, runLabel, ns string) (*explain.Snapshot, error) {
	sel := client.MatchingLabels{RunLabel: runLabel}
	lists := []struct {
		l   client.ObjectList
		all bool
	}{{&v1.ServiceList{}, false}, {&v1.ConfigurationList{}, false}, {&v1.RevisionList{}, false}, {&v1.RouteList{}, false},
		{&netv1alpha1.IngressList{}, true}, {&appsv1.DeploymentList{}, false}, {&corev1.PodList{}, false}}
	snap := &explain.Snapshot{}
	var errs []error
	for _, l := range lists {
		opts := []client.ListOption{client.InNamespace(ns)}
		switch {
		case !l.all:
			opts = append(opts, sel)
		case ns == metav1.NamespaceAll:
			opts = append(opts, client.HasLabels{v1.ServiceLabelKey})
		}
		err := r.c.List(ctx, l.l, opts...)
		if err == nil {
			err = snap.AddList(l.l)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("listing %T: %w", l.l, err))
		}
	}
	return snap, errors.Join(errs...)
}
