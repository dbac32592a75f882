package convergence

import (
	"fmt"
	"math/rand"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/autoscaler"
	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
	"github.com/ferry-serving/ferry/internal/reconciler/revision/resources"
)

const (
	// tickTimer is the leader's autoscaler deciding for every Revision with load
	// (autoscaler.Tick), reportTimer the gateway's load report (every second while a
	// request is in flight). Both recur, and neither is work left to do: a run is
	// quiet when nothing else is due (quietAfter).
	tickTimer   = "autoscaler tick"
	reportTimer = "gateway load report"
	// quietAfter is how long a run with traffic goes on with only ticks and reports
	// and no write before it counts as quiet: a Revision reaches zero a stable window
	// and a grace period after its last request (90 s by default), writing on the way.
	quietAfter = 10 * time.Minute
	// zeroDeadline is how long a request planned for a Revision at zero waits for it
	// to get there before it is sent anyway (config-autoscaler may have turned scale
	// to zero off).
	zeroDeadline = 10 * time.Minute
)

// traffic is the requests of a run with Scenario.Traffic, as the gateway and the
// autoscaler see them: a request arrives for the Revision its Service's Route sends
// the most traffic to; when that Revision has no ready pod the gateway holds it and
// pokes the autoscaler (the activation path), and serves it once the Deployment has a
// ready pod; every second while requests are in flight it reports their load to every
// controller process's autoscaler. The requests are planned from the seed: some at
// fixed times, and one per Service once its Revision is at zero.
type traffic struct {
	sim      *Sim
	planned  []*request
	inflight []*request
	// arrivals counts the requests that arrived since the last report, per Revision.
	arrivals  map[string]int
	reporting bool
}

type request struct {
	id, service string
	// at is when it arrives; afterZero: not before its Revision is at zero, unless at
	// (its deadline) comes first.
	at        time.Time
	afterZero bool
	length    time.Duration
	revision  string
	arrived   time.Time
	held      bool
	done      time.Time
}

// newTraffic plans one to three requests per Service, from a source of its own.
func newTraffic(s *Sim, services []string) *traffic {
	t := &traffic{sim: s, arrivals: map[string]int{}}
	rng := rand.New(rand.NewSource(s.seed + 1))
	for _, svc := range services {
		for i := range 1 + rng.Intn(2) {
			t.planned = append(t.planned, &request{id: fmt.Sprintf("%s#%d", svc, i+1), service: svc,
				at: s.now().Add(time.Duration(rng.Int63n(int64(2 * time.Minute)))), length: lengthOf(rng)})
		}
		t.planned = append(t.planned, &request{id: svc + "#from-zero", service: svc, afterZero: true,
			at: s.now().Add(zeroDeadline), length: lengthOf(rng)})
	}
	return t
}

func lengthOf(rng *rand.Rand) time.Duration {
	return time.Duration(rng.Int63n(int64(20*time.Second))) + 100*time.Millisecond
}

// actions are the planned requests that may arrive now.
func (t *traffic) actions() []action {
	var acts []action
	for i, r := range t.planned {
		if !r.at.After(t.sim.now()) || (r.afterZero && t.atZero(r.service)) {
			acts = append(acts, action{"client: request " + r.id + " arrives", func() {
				t.planned = append(t.planned[:i:i], t.planned[i+1:]...)
				t.arrive(r)
			}})
		}
	}
	return acts
}

// nextDue is the earliest planned arrival still to come.
func (t *traffic) nextDue() (time.Time, bool) {
	var next time.Time
	found := false
	for _, r := range t.planned {
		if r.at.After(t.sim.now()) && (!found || r.at.Before(next)) {
			next, found = r.at, true
		}
	}
	return next, found
}

// target is the Revision the Route of service sends the most traffic to ("" if it
// sends none yet: the request is a 404, which no one waits on).
func (t *traffic) target(service string) string {
	o, ok := t.sim.store.get(ref{kind: routeKind, key: key(service)})
	if !ok {
		return ""
	}
	best, most := "", int64(-1)
	for _, tt := range o.(*v1.Route).Status.Traffic {
		if tt.Percent != nil && *tt.Percent > most && tt.RevisionName != "" {
			best, most = tt.RevisionName, *tt.Percent
		}
	}
	return best
}

// deployment is the Revision's Deployment in the store.
func (t *traffic) deployment(revision string) (*appsv1.Deployment, bool) {
	o, ok := t.sim.store.get(ref{kind: deploymentKind, key: key(resources.DeploymentName(revision))})
	if !ok {
		return nil, false
	}
	return o.(*appsv1.Deployment), true
}

// atZero: the Revision service's traffic goes to has no pod and asks for none.
func (t *traffic) atZero(service string) bool {
	rev := t.target(service)
	if rev == "" {
		return false
	}
	d, ok := t.deployment(rev)
	return ok && d.Spec.Replicas != nil && *d.Spec.Replicas == 0 && d.Status.Replicas == 0
}

func (t *traffic) arrive(r *request) {
	s := t.sim
	r.revision = t.target(r.service)
	if r.revision == "" {
		s.logf("[client] request %s: %s has no traffic yet (404)", r.id, r.service)
		return
	}
	r.arrived = s.now()
	t.arrivals[r.revision]++
	t.inflight = append(t.inflight, r)
	if d, ok := t.deployment(r.revision); ok && d.Status.ReadyReplicas > 0 {
		r.done = s.now().Add(r.length)
		s.logf("[client] request %s to %s served at once (%d ready pods), for %v", r.id, r.revision, d.Status.ReadyReplicas, r.length)
	} else {
		r.held = true
		s.logf("[gateway] holds request %s: %s has no ready pod; pokes the autoscaler", r.id, r.revision)
		for _, a := range t.autoscalers() {
			a.Poke(namespace, r.revision)
		}
	}
	if !t.reporting {
		t.reporting = true
		s.after(nil, time.Second, reportTimer, t.report)
	}
}

// autoscalers are those of the controller processes running now (the leader's, and a
// deposed one's that has not noticed yet): the gateway reports to every replica.
func (t *traffic) autoscalers() []*autoscaler.Autoscaler {
	var out []*autoscaler.Autoscaler
	for _, p := range []*process{t.sim.leader, t.sim.deposed} {
		if p != nil && p.alive {
			out = append(out, p.set.Autoscaler)
		}
	}
	return out
}

// report serves the held requests whose Revision has a ready pod now, ends those that
// are over, and reports the second's load.
func (t *traffic) report() {
	s := t.sim
	load := map[string]float64{}
	var still []*request
	for _, r := range t.inflight {
		d, ok := t.deployment(r.revision)
		if _, exists := s.store.get(ref{kind: revisionKind, key: key(r.revision)}); !exists || !ok {
			// Deleted with its Service or by the collector: the answer is a 404 or a
			// 503 that a client of Knative sees too, not a lost request.
			s.logf("[client] request %s: %s is gone", r.id, r.revision)
			continue
		}
		if r.held && d.Status.ReadyReplicas > 0 {
			r.held, r.done = false, s.now().Add(r.length)
			s.logf("[gateway] releases request %s to %s after %v", r.id, r.revision, s.now().Sub(r.arrived))
		}
		load[r.revision]++
		if !r.held && !r.done.After(s.now()) {
			continue
		}
		still = append(still, r)
	}
	t.inflight = still
	rep := stats.Report{Source: "gateway", Time: s.now(), Period: time.Second}
	for _, rev := range sortedNames(load, t.arrivals) {
		rep.Stats = append(rep.Stats, stats.Stat{Namespace: namespace, Revision: rev, AverageConcurrency: load[rev], Requests: float64(t.arrivals[rev])})
	}
	t.arrivals = map[string]int{}
	for _, a := range t.autoscalers() {
		a.Report(rep)
	}
	if len(t.inflight) == 0 {
		t.reporting = false
		return
	}
	s.after(nil, time.Second, reportTimer, t.report)
}

func sortedNames(a map[string]float64, b map[string]int) []string {
	seen := map[string]bool{}
	var out []string
	for k := range a {
		seen[k] = true
		out = append(out, k)
	}
	for k := range b {
		if !seen[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// tick arms p's autoscaler tick: every autoscaler.Tick it decides, and the changes
// wake p's PodAutoscaler reconciler, as the leader's Autoscaler.Start does.
func (s *Sim) tick(p *process) {
	s.after(p, autoscaler.Tick, tickTimer, func() {
		for _, c := range p.set.Autoscaler.DecideAll() {
			s.decided(p, c.Key)
		}
		s.tick(p)
	})
}

// decided wakes p's PodAutoscaler reconciler for key, unless the weakened run's
// decisions wake nothing.
func (s *Sim) decided(p *process, key types.NamespacedName) {
	if s.weaken.Decisions {
		return
	}
	if p.alive {
		p.controller(p.set.PodAutoscaler.Name).queue.Add(reconcile.Request{NamespacedName: key})
	}
}

// checkTraffic: at quiescence no request is still held, and every Revision is where
// config-autoscaler puts one without load: at zero, or at one pod when scale to zero
// is off; its PodAutoscaler says so (Active, actualScale).
func (c *checker) checkTraffic() {
	s := c.sim
	for _, r := range s.traffic.inflight {
		if r.held {
			c.violate("request %s held since %.3fs for %s: no pod came", r.id, r.arrived.Sub(epoch).Seconds(), r.revision)
		}
	}
	for _, o := range s.store.list(paKind, "") {
		pa := o.(*av1alpha1.PodAutoscaler)
		d, ok := s.traffic.deployment(pa.Name)
		if !ok {
			continue
		}
		want := int32(0)
		if !s.config.Autoscaler.EnableScaleToZero {
			want = 1
		}
		active := pa.Status.GetCondition(av1alpha1.PodAutoscalerConditionActive)
		switch {
		case d.Spec.Replicas == nil || *d.Spec.Replicas != want:
			c.violate("PodAutoscaler %s: its Deployment asks for %v pods at quiescence, want %d (no load, enable-scale-to-zero %v)",
				pa.Name, ptr.Deref(d.Spec.Replicas, -1), want, s.config.Autoscaler.EnableScaleToZero)
		case active == nil || active.IsTrue() != (want > 0):
			c.violate("PodAutoscaler %s: Active %+v at quiescence with %d pods", pa.Name, active, want)
		case pa.Status.ActualScale == nil || *pa.Status.ActualScale != want:
			c.violate("PodAutoscaler %s: actualScale %v at quiescence with %d ready pods", pa.Name, ptr.Deref(pa.Status.ActualScale, -1), want)
		}
	}
}
