package convergence

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/api/scheme"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/reconciler"
)

// start of every run's clock: any fixed time will do.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Sim is one run: a store, the controller processes that lead in turn, the simulated
// rest of the cluster (world), a user's workload, and one random source that makes
// every choice. Nothing in it reads the wall clock or starts a goroutine.
type Sim struct {
	seed     int64
	rng      *rand.Rand
	scenario Scenario
	weaken   Weaken
	scheme   *runtime.Scheme
	mapper   simMapper
	clock    *clocktesting.FakePassiveClock
	store    *store
	recorder events.EventRecorder

	// leader is the process that runs the controllers; nil while none leads.
	leader *process
	// deposed is a former leader that has not noticed yet, for deposedSteps more
	// of its actions.
	deposed      *process
	deposedSteps int
	// gateways are the gateway replicas, one per slot; nil while a crashed one's pod
	// restarts. gatewayStarts counts the replicas started, for their names.
	gateways      []*process
	gatewayStarts int
	crashes       int
	timers        []timer
	seq           int
	// inflight are writes sent by a process that crashed or timed out, which the API
	// server applies at a later step, or never.
	inflight []pendingWrite
	world    *world
	user     *workload
	// traffic is the requests of a Scenario.Traffic run (nil in others); lastCommit
	// when the store last changed.
	traffic    *traffic
	lastCommit time.Time

	// config is the configuration the ConfigMaps hold now; each process sees it when
	// its informer catches up.
	config *config.Config

	// author is who is writing right now, for the log.
	author  string
	steps   int
	depth   int
	trace   []string
	checker *checker
}

type timer struct {
	at   time.Time
	seq  int
	proc *process // nil: the world's
	what string
	fn   func()
}

type pendingWrite struct {
	proc, what string
	apply      func() error
}

// options are the reconcilers' options in process p: Ferry's defaults, with the
// configuration as p's ConfigMap informer last saw it.
func (s *Sim) options(p *process) reconciler.Options {
	return reconciler.Options{
		Config:         func() *config.Config { return p.config },
		OnConfigChange: func(f func(old, new *config.Config)) { p.onConfig = append(p.onConfig, f) },
	}
}

// simMapper maps every kind of the scheme as namespaced.
type simMapper struct {
	meta.RESTMapper
	scheme *runtime.Scheme
}

func (m simMapper) gvkFor(obj runtime.Object) (schema.GroupVersionKind, error) {
	return apiutil.GVKForObject(obj, m.scheme)
}

// sharedTypes are the scheme and the mapper every run shares: made once (they were a tenth of
// a run), and only read.
var sharedTypes = sync.OnceValues(func() (*runtime.Scheme, simMapper) {
	s := scheme.New()
	rm := meta.NewDefaultRESTMapper(nil)
	for gvk := range s.AllKnownTypes() {
		rm.Add(gvk, meta.RESTScopeNamespace)
	}
	return s, simMapper{RESTMapper: rm, scheme: s}
})

func newSim(seed int64, sc Scenario, weaken Weaken) *Sim {
	scheme, mapper := sharedTypes()
	clk := clocktesting.NewFakePassiveClock(epoch)
	s := &Sim{seed: seed, rng: rand.New(rand.NewSource(seed)), scenario: sc, weaken: weaken, scheme: scheme,
		mapper: mapper, clock: clk, config: config.Default()}
	s.recorder = traceRecorder{s}
	s.store = newStore(scheme, clk.Now)
	s.store.onCommit = s.observe
	s.checker = newChecker(s)
	s.world = newWorld(s)
	s.user = newWorkload(s)
	if sc.Traffic {
		s.traffic = newTraffic(s, s.user.services)
	}
	return s
}

func (s *Sim) now() time.Time { return s.clock.Now() }

func (s *Sim) logf(format string, args ...any) {
	line := fmt.Sprintf("%8.3fs #%-6d %s", s.now().Sub(epoch).Seconds(), s.steps, fmt.Sprintf(format, args...))
	s.trace = append(s.trace, line)
}

// after runs fn d from now, unless it belongs to a process that is gone by then.
func (s *Sim) after(p *process, d time.Duration, what string, fn func()) {
	s.seq++
	s.timers = append(s.timers, timer{at: s.now().Add(d), seq: s.seq, proc: p, what: what, fn: fn})
}

// fireDue runs every timer that is due, in time order.
func (s *Sim) fireDue() {
	for {
		sort.Slice(s.timers, func(i, j int) bool {
			if !s.timers[i].at.Equal(s.timers[j].at) {
				return s.timers[i].at.Before(s.timers[j].at)
			}
			return s.timers[i].seq < s.timers[j].seq
		})
		if len(s.timers) == 0 || s.timers[0].at.After(s.now()) {
			return
		}
		t := s.timers[0]
		s.timers = s.timers[1:]
		if t.proc == nil || t.proc.alive {
			t.fn()
		}
	}
}

// action is one thing that can happen next.
type action struct {
	what string
	run  func()
}

// enabled lists what can happen now, in a deterministic order: nested, only the
// process p's own work (while one of its reconciles waits).
func (s *Sim) enabled(nested bool, p *process) []action {
	if nested {
		return s.processActions(p, true)
	}
	var acts []action
	for _, p := range s.processes() {
		if p.alive {
			acts = append(acts, s.processActions(p, false)...)
		}
	}
	acts = append(acts, s.world.actions()...)
	acts = append(acts, s.user.actions()...)
	if s.traffic != nil {
		acts = append(acts, s.traffic.actions()...)
	}
	for i := range s.inflight {
		acts = append(acts, s.enabledInflight(i))
	}
	return acts
}

// processes are the controller and gateway processes there are now.
func (s *Sim) processes() []*process {
	var out []*process
	for _, p := range append([]*process{s.leader, s.deposed}, s.gateways...) {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// processActions is what process p can do now: deliver a watch event, run a
// handler, reconcile.
func (s *Sim) processActions(p *process, nested bool) []action {
	var acts []action
	{
		for _, kind := range sortedKinds(p.informers) {
			inf := p.informers[kind]
			if inf.pending(s.store) {
				acts = append(acts, action{"deliver " + kind, func() {
					c, _ := inf.deliverNext(s.store)
					s.logf("[%s] watch delivers %s rv=%d%s", p.name, c.ref, c.rv, map[bool]string{true: " (deleted)"}[c.deleted])
				}})
				if s.scenario.Relist > 0 && s.rng.Float64() < s.scenario.Relist {
					acts = append(acts, action{"relist " + kind, func() {
						n := inf.relist(s.store)
						s.logf("[%s] informer of %s relists: %d objects changed", p.name, kind, n)
					}})
				}
			}
			for _, l := range inf.listeners {
				if len(l.pending) > 0 {
					acts = append(acts, action{"handle " + kind + " for " + l.control.name, func() {
						n := l.handleNext()
						s.logf("[%s] %s handler gets %s", p.name, l.control.name, describeNotification(n))
					}})
				}
			}
		}
		if a, ok := s.requeueAction(p); ok {
			acts = append(acts, a)
		}
		if a, ok := s.configAction(p); ok {
			acts = append(acts, a)
		}
		if a, ok := s.flushAction(p); ok {
			acts = append(acts, a)
		}
		for _, c := range p.controllers {
			if c.queue.Len() > 0 && (!nested || s.rng.Intn(4) == 0) {
				acts = append(acts, action{"reconcile in " + c.name, func() { s.reconcile(c) }})
			}
		}
	}
	if p == s.deposed {
		// A deposed leader works on until it notices, a few steps later.
		for i := range acts {
			run := acts[i].run
			acts[i].run = func() {
				run()
				if s.deposedSteps--; s.deposedSteps <= 0 && p.alive {
					p.alive = false
					s.deposed = nil
					s.logf("[%s] notices it lost its lease and exits", p.name)
				}
			}
		}
	}
	return acts
}

func sortedKinds(m map[string]*informer) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func describeNotification(n notification) string {
	switch {
	case n.deleted && n.tombstone:
		return "delete (tombstone) of " + client.ObjectKeyFromObject(n.new).String()
	case n.deleted:
		return "delete of " + client.ObjectKeyFromObject(n.new).String()
	case n.old == nil && n.initial:
		return "initial list of " + client.ObjectKeyFromObject(n.new).String()
	case n.old == nil:
		return "create of " + client.ObjectKeyFromObject(n.new).String() + " rv=" + n.new.GetResourceVersion()
	}
	return fmt.Sprintf("update of %s rv=%s→%s", client.ObjectKeyFromObject(n.new), n.old.GetResourceVersion(), n.new.GetResourceVersion())
}

// reconcile runs one request of c as controller-runtime's worker does, and handles its
// result the same way.
func (s *Sim) reconcile(c *controller) {
	p := c.proc
	req := c.queue.take(s.rng.Intn(c.queue.Len()))
	s.logf("[%s] %s reconciles %s", p.name, c.name, req)
	s.depth++
	res, err, crash := s.run(c, req)
	s.depth--
	if crash {
		return
	}
	switch {
	case err != nil:
		c.queue.AddRateLimited(req)
	case res.RequeueAfter > 0:
		c.queue.Forget(req)
		c.queue.AddAfter(req, res.RequeueAfter)
	case res.Requeue: //nolint:staticcheck // controller-runtime still honours it
		c.queue.AddRateLimited(req)
	default:
		c.queue.Forget(req)
	}
	c.queue.Done(req)
	if err != nil || res.RequeueAfter > 0 {
		s.logf("[%s] %s done with %s: requeue after %v, error %v", p.name, c.name, req, res.RequeueAfter, errString(err))
	}
}

func (s *Sim) run(c *controller, req reconcile.Request) (res reconcile.Result, err error, crash bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crashed); !ok {
				panic(r)
			}
			crash = true
		}
	}()
	res, err = c.do.Reconcile(context.Background(), req)
	return res, err, false
}

// interleave lets other things happen while a reconcile of p waits on a read or a
// write: its informers move on, its handlers run, its other workers reconcile.
func (s *Sim) interleave(p *process) {
	if s.depth > 3 || s.rng.Intn(3) != 0 {
		return
	}
	for n := s.rng.Intn(4); n > 0 && p.alive; n-- {
		acts := s.enabled(true, p)
		if len(acts) == 0 {
			return
		}
		acts[s.rng.Intn(len(acts))].run()
	}
}

// racePastRead is the race a read loses: at times the informer just read delivers
// its next change, and every handler of that kind runs, before the reconciler goes on
// with what it read. Then anything else may happen (interleave).
func (s *Sim) racePastRead(p *process, inf *informer) {
	if s.depth <= 3 && s.rng.Intn(4) == 0 && inf.pending(s.store) {
		c, _ := inf.deliverNext(s.store)
		s.logf("[%s] watch delivers %s rv=%d right after a read of it", p.name, c.ref, c.rv)
		for _, l := range inf.listeners {
			for len(l.pending) > 0 {
				n := l.handleNext()
				s.logf("[%s] %s handler gets %s", p.name, l.control.name, describeNotification(n))
			}
		}
	}
	s.interleave(p)
}

// write is every controller write: the simulation may crash the process before it,
// after it, or with it in flight, or time it out, as the scenario allows.
func (s *Sim) write(p *process, verb string, obj client.Object, status bool, apply func(client.Object) error) error {
	s.interleave(p)
	if !p.alive {
		panic(crashed{p.name})
	}
	what := fmt.Sprintf("%s of %s", verb, s.store.refOf(obj))
	sc := s.scenario
	if s.crashes < sc.MaxCrashes && s.rng.Float64() < sc.Crash {
		switch s.rng.Intn(3) {
		case 0:
			s.logf("[%s] crashes before its %s", p.name, what)
		case 1:
			s.do(p, what, obj, apply)
			s.logf("[%s] crashes after its %s", p.name, what)
		case 2:
			s.hold(p, what, obj, apply)
			s.logf("[%s] crashes with its %s in flight", p.name, what)
		}
		s.crash(p)
		panic(crashed{p.name})
	}
	if sc.Stale && p == s.leader && s.deposed == nil && s.crashes < sc.MaxCrashes && s.rng.Float64() < sc.Crash {
		s.depose(p)
	}
	if (verb == "create" || verb == "update") && s.crashes < sc.MaxCrashes && s.rng.Float64() < sc.Refuse {
		s.crashes++
		s.checker.faults++
		s.logf("[%s] its %s is refused by admission", p.name, what)
		return apierrors.NewForbidden(s.store.groupResource(s.store.refOf(obj)), obj.GetName(), errors.New("admission webhook \"simulated.ferry.dev\" denied the request"))
	}
	if s.crashes < sc.MaxCrashes && s.rng.Float64() < sc.Timeout {
		s.hold(p, what, obj, apply)
		s.logf("[%s] its %s times out; the API server may still apply it", p.name, what)
		return fmt.Errorf("simulated timeout: %s", what)
	}
	return s.do(p, what, obj, apply)
}

func (s *Sim) do(p *process, what string, obj client.Object, apply func(client.Object) error) error {
	s.author = p.name
	err := apply(obj)
	s.author = ""
	s.logf("[%s] %s: %s", p.name, what, resultOf(obj, err))
	return err
}

// hold keeps a copy of the write for the API server to apply later, or never.
func (s *Sim) hold(p *process, what string, obj client.Object, apply func(client.Object) error) {
	o := obj.DeepCopyObject().(client.Object)
	s.inflight = append(s.inflight, pendingWrite{proc: p.name, what: what, apply: func() error { return apply(o) }})
}

// crash stops p; a new process leads after a lease's time, or a gateway's pod
// restarts.
func (s *Sim) crash(p *process) {
	s.crashes++
	p.alive = false
	if p == s.deposed {
		s.deposed = nil
		return
	}
	for i, g := range s.gateways {
		if g == p {
			s.gateways[i] = nil
			s.after(nil, s.gatewayRestart(), "gateway restart", func() { s.restartGateway(i) })
			return
		}
	}
	s.leader = nil
	lease := time.Duration(1+s.rng.Intn(15)) * time.Second
	s.after(nil, lease, "failover", s.failover)
}

// depose makes p lose its lease without knowing it yet (a stalled renewal): a new
// leader starts at once and both run for a few steps, p's writes computed from what
// it last saw.
func (s *Sim) depose(p *process) {
	s.crashes++
	s.checker.faults++
	s.deposed, s.deposedSteps = p, 1+s.rng.Intn(30)
	s.logf("[%s] loses its lease but works on for %d steps", p.name, s.deposedSteps)
	s.failover()
}

// failover starts a new leader from the store as it is or, in stale scenarios, from
// caches behind it.
func (s *Sim) failover() {
	asOf := s.staleStart()
	name := fmt.Sprintf("controller-%d", s.crashes+1)
	s.lead(name, asOf)
	s.logf("[%s] leads, its caches as of rv=%d (the store is at rv=%d)", name, s.rvAt(asOf), s.store.rv)
}

// lead starts the leader process; with traffic its autoscaler ticks.
func (s *Sim) lead(name string, asOf int) {
	s.leader = s.start(name, asOf)
	if s.scenario.Traffic {
		s.tick(s.leader)
	}
}

// staleStart is the store's log index a process starting now lists from: the store
// as it is or, in stale scenarios, up to 40 writes behind it.
func (s *Sim) staleStart() int {
	asOf := len(s.store.log)
	if s.scenario.Stale && asOf > 0 {
		asOf -= s.rng.Intn(min(asOf, 40) + 1)
	}
	if asOf < len(s.store.log) {
		s.checker.faults++
	}
	return asOf
}

func (s *Sim) rvAt(i int) int64 {
	if i == 0 {
		return 0
	}
	return s.store.log[i-1].rv
}

func resultOf(obj client.Object, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return "ok, rv=" + obj.GetResourceVersion() + summary(obj)
}

func errString(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}

// summary is the Ready condition of a Knative object, for the trace.
func summary(obj client.Object) string {
	st := duckStatusOf(obj)
	if st == nil {
		return ""
	}
	c := st.GetCondition("Ready")
	if c == nil {
		return ""
	}
	msg := c.Message
	if len(msg) > 60 {
		msg = msg[:60] + "…"
	}
	return fmt.Sprintf(" (Ready=%s %s %s)", c.Status, c.Reason, strings.TrimSpace(msg))
}

// traceRecorder puts the controllers' Events in the trace.
type traceRecorder struct{ sim *Sim }

func (r traceRecorder) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	name := ""
	if o, ok := regarding.(client.Object); ok {
		name = client.ObjectKeyFromObject(o).String()
	}
	r.sim.logf("event %s %s on %s: %s", eventtype, reason, name, fmt.Sprintf(note, args...))
}
