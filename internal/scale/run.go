package scale

// The runner's bookkeeping, the loop that waits until every Service has settled,
// and the Result made of it. Creating, watching, probing and explaining are each in
// their own file.

import (
	"cmp"
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/ferry-serving/ferry/api/scheme"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
	if r.c, err = client.NewWithWatch(r.cfg, client.Options{Scheme: scheme.New()}); err != nil {
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
	waitsBefore, waitsErr := readQueueWaits(o.Metrics)

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
	if waitsAfter, err := readQueueWaits(o.Metrics); o.Metrics != nil {
		if err = cmp.Or(waitsErr, err); err != nil {
			res.QueueWaitsError = "reading the controller's metrics: " + err.Error()
		} else {
			res.QueueWaits = queueWaitsBetween(waitsBefore, waitsAfter)
		}
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
