package convergence

import (
	"fmt"
	"time"

	"github.com/ferry-serving/ferry/internal/reconciler/kit/statuswriter"
)

// Scenario is a family of perturbations, after Sieve's three (OSDI '22): what can go
// wrong around a controller, at which rate. The zero Scenario perturbs nothing but
// the order of events, which every run varies.
type Scenario struct {
	Name string
	// Crash is the chance that a write crashes its process: before the write, after
	// it, or with the write in flight, applied by the API server later (intermediate
	// states: a crash between two writes).
	Crash float64
	// MaxCrashes bounds the crashes, timeouts and refusals of a run, so that it ends.
	MaxCrashes int
	// Stale makes a new leader start from caches behind the store, by up to 40
	// writes (stale states: a failed-over replica reading from a cache that lags).
	Stale bool
	// Timeout is the chance that a write times out: the controller sees an error,
	// and the API server applies the write later or never.
	Timeout float64
	// Relist is the chance, at each step, that an informer with undelivered
	// changes relists instead: the intermediate versions are never delivered, only
	// the latest (unobserved states).
	Relist float64
	// Refuse is the chance that a controller's create or update of an object (not
	// its status) is refused as an admission webhook or a quota refuses it: 403, the
	// write not applied. The refusal passes: the same write may be let through when
	// tried again.
	Refuse float64
	// GatewayReplicas is how many gateway replicas reconcile every KIngress (one if
	// unset). With several, each keeps a Lease, and an ingress is Ready only once
	// every replica serves its generation.
	GatewayReplicas int
	// Traffic sends requests (traffic.go): the leader's autoscaler ticks and takes the
	// gateway's load reports, Revisions scale to zero and back, and requests for a
	// Revision at zero are held until it has a pod; config-autoscaler may turn scale
	// to zero off mid-run.
	Traffic bool
}

// Families are the scenario sets the short and long forms run, each seed in each:
// Sieve's three, admission refusing writes, and gateway replicas that crash and come
// back while each marks ingresses Ready only once all serve them.
var Families = []Scenario{
	{Name: "ordering"},
	{Name: "intermediate", Crash: 0.03, MaxCrashes: 3},
	{Name: "stale", Crash: 0.03, MaxCrashes: 3, Stale: true, Timeout: 0.02},
	{Name: "unobserved", Relist: 0.05, Timeout: 0.02, MaxCrashes: 3},
	{Name: "refused", Refuse: 0.05, MaxCrashes: 3},
	{Name: "replicas", GatewayReplicas: 3, Crash: 0.03, MaxCrashes: 3},
	{Name: "zero", Traffic: true, Crash: 0.03, Timeout: 0.02, MaxCrashes: 3},
}

// Weaken switches off one of Ferry's safeguards, to show the simulation finds the
// bug it guards against (the sensitivity tests).
type Weaken struct {
	// Tracker makes Routes read before they track, Knative's order
	// (knative/serving#2954).
	Tracker bool
	// Safeguard is a status writer safeguard to switch off; "" keeps them all.
	Safeguard statuswriter.Safeguard
	// ConfigChanges makes a process take a new configuration without waking the
	// controllers it concerns: only what they reconcile anyway gets it.
	ConfigChanges bool
	// RefusalRetry makes a refused write come back without a time to try again.
	RefusalRetry bool
	// Replicas makes each gateway replica mark an ingress Ready once it serves it
	// itself, without waiting for the others.
	Replicas bool
	// Decisions makes the autoscaler's decisions wake no PodAutoscaler: only what
	// reconciles it anyway acts on them.
	Decisions bool
}

func (w Weaken) without() []statuswriter.Safeguard {
	if w.Safeguard == "" {
		return nil
	}
	return []statuswriter.Safeguard{w.Safeguard}
}

// Result is what a run found.
type Result struct {
	Seed       int64
	Scenario   string
	Violations []string
	Steps      int
	Writes     int
	// Trace is the run's events, reads and writes, one per line.
	Trace []string
}

// maxSteps bounds a run: one that has not gone quiet by then is a livelock.
const maxSteps = 200000

// Run runs the simulation with seed in scenario sc, with weaken's safeguards off.
// The result is a function of its arguments.
func Run(seed int64, sc Scenario, weaken Weaken) Result {
	s := newSim(seed, sc, weaken)
	s.lead("controller-1", 0)
	s.startGateways()
	s.logf("[controller-1] leads; workload: %d steps", len(s.user.ops))
	if !s.runToQuiescence(maxSteps) {
		s.checker.violate("no quiescence after %d steps: a livelock or a write storm", maxSteps)
	} else {
		for len(s.inflight) > 0 {
			// What is still in flight lands now, or never: both are possible.
			if s.rng.Intn(2) == 0 {
				s.inflight = s.inflight[1:]
				continue
			}
			s.enabledInflight(0).run()
			s.runToQuiescence(maxSteps)
		}
		s.checker.quiescent()
	}
	writes := 0
	for _, n := range s.checker.writes {
		writes += n
	}
	return Result{Seed: seed, Scenario: sc.Name, Violations: sortedViolations(s.checker.violations), Steps: s.steps,
		Writes: writes, Trace: s.trace}
}

// runToQuiescence takes steps until nothing is left to happen now or later (false if
// the step budget runs out first).
func (s *Sim) runToQuiescence(budget int) bool {
	for n := 0; n < budget; n++ {
		s.fireDue()
		if s.leader == nil && s.deposed == nil && !s.pendingFailover() && s.user.done() && len(s.inflight) == 0 {
			// No leader will come: nothing reconciles.
			return true
		}
		acts := s.enabled(false, nil)
		if len(acts) == 0 {
			if !s.advance() {
				return true
			}
			continue
		}
		s.steps++
		acts[s.rng.Intn(len(acts))].run()
		s.clock.SetTime(s.now().Add(time.Duration(s.rng.Intn(20)) * time.Millisecond))
	}
	return false
}

func (s *Sim) pendingFailover() bool {
	for _, t := range s.timers {
		if t.what == "failover" {
			return true
		}
	}
	return false
}

// advance moves the clock to the next timer or due world work; false if there is none.
func (s *Sim) advance() bool {
	var next time.Time
	found := false
	for _, t := range s.timers {
		if t.proc == nil || t.proc.alive {
			if !found || t.at.Before(next) {
				next, found = t.at, true
			}
		}
	}
	if at, ok := s.world.nextDue(); ok && (!found || at.Before(next)) {
		next, found = at, true
	}
	if s.traffic != nil {
		if at, ok := s.traffic.nextDue(); ok && (!found || at.Before(next)) {
			next, found = at, true
		}
	}
	if !found || s.onlyBackground() {
		return false
	}
	if next.After(s.now()) {
		s.clock.SetTime(next)
	}
	// Timers of dead processes are dropped as time passes them.
	live := s.timers[:0]
	for _, t := range s.timers {
		if t.proc == nil || t.proc.alive {
			live = append(live, t)
		}
	}
	s.timers = live
	return true
}

// onlyBackground: nothing is due but what recurs and changes nothing by itself —
// gateway replicas renewing Leases that are all theirs, and with traffic the
// autoscaler's ticks and the gateway's reports once no request is planned and
// nothing was written for quietAfter: the run is quiet.
func (s *Sim) onlyBackground() bool {
	if _, due := s.world.nextDue(); due {
		return false
	}
	for _, t := range s.timers {
		if (t.proc == nil || t.proc.alive) && t.what != renewalTimer && t.what != tickTimer && t.what != reportTimer {
			return false
		}
	}
	if s.traffic != nil && (len(s.traffic.planned) > 0 || s.now().Sub(s.lastCommit) < quietAfter) {
		return false
	}
	return s.leasesSettled()
}

func (s *Sim) enabledInflight(i int) action {
	w := s.inflight[i]
	return action{"land in-flight write", func() {
		s.inflight = append(s.inflight[:i:i], s.inflight[i+1:]...)
		s.author = w.proc + " (in flight)"
		err := w.apply()
		s.author = ""
		s.logf("[%s] an in-flight %s lands late: %v", w.proc, w.what, errString(err))
	}}
}

// String is one line for a failing seed.
func (r Result) String() string {
	return fmt.Sprintf("seed %d (%s): %d violations, first: %s", r.Seed, r.Scenario, len(r.Violations), first(r.Violations))
}

func first(v []string) string {
	if len(v) == 0 {
		return "none"
	}
	return v[0]
}
