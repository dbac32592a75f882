package soak

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/scheme"
)

// run is one soak's state.
type run struct {
	o         Options
	c         client.WithWatch
	started   time.Time
	traffic   *trafficLog
	readiness *readinessLog
	requests  *recorder
	memory    *memoryLog
	pods      *podLog

	zeroBurst atomic.Bool

	mu          sync.Mutex
	events      []Event
	crashes     []crashWindow
	zeroPods    map[string]int32 // the zero Service's Revisions' ready pods
	toZero      int              // times the zero Service went to no pods
	fromZero    int              // and came back
	crashUnseen int

	// The run loop's own: what it changed last.
	generation  map[string]int
	churn       int
	splitToA    bool
	ownDomain   bool
	shortWindow bool
	original    map[string]map[string]string
}

// fleetReadyTimeout is how long the fleet may take to be Ready at first: the first
// pod of a program may have to be built.
const fleetReadyTimeout = 5 * time.Minute

// Run soaks the cluster for o.Duration and judges it. The error is for a run that
// could not be carried out; what the run found is in the Report (Report.Failed).
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(o.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	r := &run{o: o, c: c, traffic: newTrafficLog(), readiness: newReadinessLog(), memory: newMemoryLog(), pods: newPodLog(),
		zeroPods: map[string]int32{}, generation: map[string]int{}, original: map[string]map[string]string{}}
	r.requests = newRecorder(time.Now(), r.traffic, grace)

	if err := r.ensureNamespace(ctx); err != nil {
		return nil, err
	}
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	if err := r.watchAll(watchCtx); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Progress, "Creating the fleet in namespace %s: %v ...\n", o.Namespace, o.fleet())
	if err := r.createFleet(ctx); err != nil {
		return nil, err
	}

	r.started = time.Now()
	r.requests = newRecorder(r.started, r.traffic, grace)
	fmt.Fprintf(o.Progress, "Soaking for %s: %.0f requests/s, a change every %s, faults: %v\n", o.Duration, o.Rate, o.Cycle, o.Faults)
	loadCtx, stopLoad := context.WithCancel(context.WithoutCancel(ctx))
	var loadDone sync.WaitGroup
	loadDone.Go(func() { r.load(loadCtx) })
	sampleCtx, stopSampling := context.WithCancel(ctx)
	go r.sampleMemory(sampleCtx)

	interrupted := r.cycles(ctx)
	if interrupted != nil {
		// Whatever runs Ferry here stops with the same signal: answers from now on
		// say nothing about Ferry.
		r.requests.stopJudging(time.Now())
		stopLoad()
	}

	// Settle: every object gets its bound to be Ready after the last change; an
	// interrupted run only puts the configuration back.
	settleCtx, cancelSettle := context.WithTimeout(context.WithoutCancel(ctx), o.ReadyBound)
	if err := r.restoreConfig(settleCtx); err != nil {
		r.note(Event{At: time.Now(), Kind: "change", What: "restoring the configuration", Err: err.Error()})
	}
	if interrupted == nil {
		r.settleReady(settleCtx)
	}
	cancelSettle()
	stopLoad()
	loadDone.Wait()
	stopSampling()
	r.requests.settle()
	ended := time.Now()
	stopWatching()
	rep := r.report(ended)
	if interrupted != nil {
		rep.Failures = append(rep.Failures, "interrupted ("+interrupted.Error()+"): answers after the interruption are not judged, nor is readiness after it")
	}
	return rep, nil
}

// settleReady waits until every object is Ready or ctx ends.
func (r *run) settleReady(ctx context.Context) {
	for {
		if ok, _ := r.readiness.allReady(); ok {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (r *run) ensureNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.o.Namespace, Labels: map[string]string{RunLabel: r.o.RunID}}}
	if err := r.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", r.o.Namespace, err)
	}
	return nil
}

// createFleet creates the fleet, gives the split Service its second Revision, and
// waits until all is Ready.
func (r *run) createFleet(ctx context.Context) error {
	for _, name := range r.o.fleet() {
		if err := r.c.Create(ctx, r.o.service(name)); err != nil {
			return fmt.Errorf("creating Service %s: %w", name, err)
		}
	}
	if err := r.waitReady(ctx, fleetReadyTimeout); err != nil {
		return err
	}
	r.generation[split] = 1
	if err := r.updateService(ctx, split, func(s *v1.Service) { r.o.update(s, 1, false) }); err != nil {
		return fmt.Errorf("giving Service split its second Revision: %w", err)
	}
	r.splitToA = true
	return r.waitReady(ctx, fleetReadyTimeout)
}

func (r *run) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	time.Sleep(time.Second) // the watch sees the writes just made
	for {
		ok, which := r.readiness.allReady()
		if ok && r.readiness.count() > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the fleet was not Ready within %s: %s", timeout, which)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// cycles makes one change per cycle and strikes one fault halfway through it, until
// the duration is over; it returns why it stopped early, if it did.
func (r *run) cycles(ctx context.Context) error {
	end := r.started.Add(r.o.Duration)
	changes := r.changes()
	for i := 0; ; i++ {
		cycleStart := r.started.Add(time.Duration(i) * r.o.Cycle)
		if !cycleStart.Before(end) {
			return nil
		}
		if err := sleepUntil(ctx, cycleStart); err != nil {
			return err
		}
		// The zero Service's load is on in even cycles, off in odd ones: off for a
		// cycle is long enough to scale to zero, and the next burst wakes it.
		r.zeroBurst.Store(i%2 == 0)
		if i > 0 {
			n, failed, wrong := r.requests.totals()
			fmt.Fprintf(r.o.Progress, "%7s so far: %d requests, %d failed, %d from a Revision not named\n",
				time.Since(r.started).Round(time.Second), n, failed, wrong)
		}
		r.act(ctx, "change", func(ctx context.Context) (string, error) { return changes[i%len(changes)](ctx) })
		if len(r.o.Faults) == 0 {
			continue
		}
		if err := sleepUntil(ctx, cycleStart.Add(r.o.Cycle/2)); err != nil {
			return err
		}
		f := r.o.Faults[i%len(r.o.Faults)]
		r.act(ctx, "fault", func(ctx context.Context) (string, error) {
			what, err := r.fault(ctx, f)
			return string(f) + ": " + what, err
		})
	}
}

func (r *run) act(ctx context.Context, kind string, f func(context.Context) (string, error)) {
	at := time.Now()
	what, err := f(ctx)
	e := Event{At: at, Kind: kind, What: what, Took: time.Since(at)}
	if err != nil {
		e.Err = err.Error()
	}
	r.note(e)
	status := ""
	if err != nil {
		status = " — " + e.Err
	}
	fmt.Fprintf(r.o.Progress, "%7s %s %s%s\n", at.Sub(r.started).Round(time.Second), kind, what, status)
}

func (r *run) note(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// zeroReplicas counts the zero Service's trips to no pods and back.
func (r *run) zeroReplicas(revision string, ready int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	total := func() (n int32) {
		for _, v := range r.zeroPods {
			n += v
		}
		return n
	}
	before := total()
	r.zeroPods[revision] = ready
	after := total()
	switch {
	case before > 0 && after == 0:
		r.toZero++
	case before == 0 && after > 0 && r.toZero > 0:
		r.fromZero++
	}
}

func (r *run) sampleMemory(ctx context.Context) {
	if r.o.Processes == nil {
		return
	}
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		r.memory.sample(time.Now(), r.o.Processes())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
