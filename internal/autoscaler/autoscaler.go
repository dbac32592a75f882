package autoscaler

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ferry-serving/ferry/internal/autoscaler/decider"
	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
)

// Tick is how often the Autoscaler decides for Revisions with load: Knative's.
const Tick = 2 * time.Second

// NoDecision is a desired scale the reconciler must not act on: nothing is known yet.
const NoDecision = -1

// Autoscaler keeps Revisions' load and decider state. It is a stats.Sink for the
// gateways and a manager Runnable that ticks on the leader.
type Autoscaler struct {
	// notify tells the PodAutoscaler reconciler that key's decision changed;
	// background, when set, takes the changes to fewer pods (see Change).
	notify, background func(key types.NamespacedName)
	now                func() time.Time
	tick               time.Duration
	log                logr.Logger

	mu   sync.Mutex
	revs map[types.NamespacedName]*revision
	// leading is set while Start runs: only the leader's numbers move (see Numbers).
	leading atomic.Bool
}

// revision is one Revision's history. Its load is recorded whether or not a
// PodAutoscaler registered it yet, so that no report is lost to ordering.
type revision struct {
	watched bool
	// since is when the Autoscaler began watching: until a stable window has passed,
	// an empty history means "not known yet", not "no load" (after a restart).
	since     time.Time
	settings  decider.Settings
	ready     int32
	reachable bool

	concurrency, rps decider.Window
	state            decider.State
	last             decider.Decision
	decided          bool
	// seen is the last time load was recorded: unwatched entries without load are
	// dropped after a while.
	seen time.Time
	// poked is when the first poke of a wake-up came, until the wake's scale write.
	poked time.Time
	// wakes counts the wake-ups from zero (Woken) and lastWake is the latest one's
	// wait from poke to scale write, for the dashboard.
	wakes    int64
	lastWake time.Duration
	// pokeCounted: a poke recorded one request that the next report counts again.
	pokeCounted bool
	// pods are the latest per-pod loads of the Revision, by gateway replica
	// (Report.Source): each replica's next report replaces its own.
	pods map[string]podReport
}

// podReport is one gateway replica's latest per-pod loads of a Revision.
type podReport struct {
	// until is when it goes stale: a replica that stops reporting the Revision (it
	// has no load there) no longer counts after two of its periods.
	until time.Time
	pods  []PodLoad
}

// PodLoad is one pod's load over the latest period, summed over the gateway
// replicas that reported it.
type PodLoad struct {
	// Revision is the pod's Revision.
	Revision types.NamespacedName
	// Pod is the pod's name.
	Pod string
	// AverageConcurrency is the time-weighted mean number of requests in flight on
	// the pod.
	AverageConcurrency float64
	// RequestsPerSecond is the pod's request rate.
	RequestsPerSecond float64
}

// New returns an Autoscaler that calls notify when a decision changes. notify must
// not block.
func New(notify func(types.NamespacedName)) *Autoscaler {
	return &Autoscaler{notify: notify, now: time.Now, tick: Tick, log: ctrllog.Log.WithName("autoscaler"),
		revs: map[types.NamespacedName]*revision{}}
}

// WithBackground sends the changes to fewer pods to f instead of notify: no request
// waits for them, so the reconciler can take them after the work users wait for (a
// wave of Revisions scaling to zero must not delay a new Service or a cold start).
// Call it before the Autoscaler is used.
func (a *Autoscaler) WithBackground(f func(types.NamespacedName)) *Autoscaler {
	a.background = f
	return a
}

// Change is a decision the reconciler acts on. Lower marks a change to fewer pods
// (or of the excess burst capacity alone), which no request waits for.
type Change struct {
	Key   types.NamespacedName
	Lower bool
}

func (a *Autoscaler) tell(c Change) {
	if c.Lower && a.background != nil {
		a.background(c.Key)
		return
	}
	a.notify(c.Key)
}

// WithClock makes the Autoscaler tell time by c (the convergence simulation's clock).
// Call it before the Autoscaler is used.
func (a *Autoscaler) WithClock(c clock.PassiveClock) *Autoscaler {
	a.now = c.Now
	return a
}

var _ stats.Sink = (*Autoscaler)(nil)

// Report implements stats.Sink: it adds one gateway's period to each Revision's
// windows. Several gateways' reports for the same second add up.
func (a *Autoscaler) Report(r stats.Report) {
	period := r.Period.Seconds()
	if period <= 0 {
		period = 1
	}
	// Staleness is told by the Autoscaler's clock: the gateways' may differ.
	now := a.now()
	until := now.Add(2 * time.Duration(period*float64(time.Second)))
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range r.Stats {
		key := types.NamespacedName{Namespace: s.Namespace, Name: s.Revision}
		rev := a.getLocked(key)
		rev.recordPods(key, r.Source, now, until, s.Pods, period)
		concurrency, requests := s.AverageConcurrency, s.Requests
		if rev.pokeCounted {
			// The poked request is in this report too: take it out once, as Knative's
			// activator takes its first-request stat out of its next report.
			concurrency, requests = max(concurrency-1, 0), max(requests-1, 0)
			rev.pokeCounted = false
		}
		rev.concurrency.Record(r.Time, concurrency)
		rev.rps.Record(r.Time, requests/period)
		rev.seen = r.Time
	}
}

// recordPods replaces what source reported of rev's pods, and drops what other
// replicas reported that went stale.
func (rev *revision) recordPods(key types.NamespacedName, source string, now, until time.Time, pods []stats.PodStat, period float64) {
	if rev.pods == nil {
		rev.pods = map[string]podReport{}
	}
	for src, pr := range rev.pods {
		if pr.until.Before(now) {
			delete(rev.pods, src)
		}
	}
	loads := make([]PodLoad, 0, len(pods))
	for _, p := range pods {
		loads = append(loads, PodLoad{Revision: key, Pod: p.Name, AverageConcurrency: p.AverageConcurrency,
			RequestsPerSecond: p.Requests / period})
	}
	rev.pods[source] = podReport{until: until, pods: loads}
}

// PodLoads returns the latest load of every pod that a gateway replica reported in
// its latest period (one with no load anywhere is not reported): summed over the
// replicas, for the controller's metrics. A pod that stops being reported is gone
// two periods later, and with its Revision.
func (a *Autoscaler) PodLoads() []PodLoad {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []PodLoad
	type podKey struct {
		rev types.NamespacedName
		pod string
	}
	index := map[podKey]int{}
	for _, rev := range a.revs {
		for src, pr := range rev.pods {
			if pr.until.Before(now) {
				delete(rev.pods, src)
				continue
			}
			for _, p := range pr.pods {
				k := podKey{p.Revision, p.Pod}
				i, ok := index[k]
				if !ok {
					i = len(out)
					index[k] = i
					out = append(out, PodLoad{Revision: p.Revision, Pod: p.Pod})
				}
				out[i].AverageConcurrency += p.AverageConcurrency
				out[i].RequestsPerSecond += p.RequestsPerSecond
			}
		}
	}
	return out
}

// Poke implements stats.Sink: a request is waiting for a Revision with no ready pod.
// If the Revision's last decision was zero (or there was none), it counts as one
// request in flight now, and as one fewer in the next report, which sees the same
// request; the Revision is decided at once.
func (a *Autoscaler) Poke(namespace, name string) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	now := a.now()
	a.mu.Lock()
	rev := a.getLocked(key)
	if rev.decided && rev.last.DesiredPods > 0 {
		a.mu.Unlock()
		return
	}
	rev.concurrency.Record(now, 1)
	rev.rps.Record(now, 1)
	rev.pokeCounted = true
	rev.seen = now
	if rev.poked.IsZero() {
		rev.poked = now
	}
	var changed, lower bool
	if rev.watched {
		changed, lower = a.decideLocked(key, rev, now)
	}
	a.mu.Unlock()
	if changed {
		a.tell(Change{Key: key, Lower: lower})
	}
}

func (a *Autoscaler) getLocked(key types.NamespacedName) *revision {
	rev, ok := a.revs[key]
	if !ok {
		rev = &revision{}
		a.revs[key] = rev
	}
	return rev
}

// Watch registers or refreshes a PodAutoscaler's settings and what its Deployment
// has ready; the reconciler calls it on every reconcile.
func (a *Autoscaler) Watch(key types.NamespacedName, s decider.Settings, ready int32, reachable bool) {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	rev := a.getLocked(key)
	if !rev.watched {
		rev.watched, rev.since = true, now
		rev.state = decider.NewState(now, ready)
	}
	if ready == 0 && rev.ready > 0 && rev.decided && rev.last.DesiredPods == 0 &&
		rev.concurrency.IsEmpty(now, rev.settings.StableWindow) && rev.rps.IsEmpty(now, rev.settings.StableWindow) {
		// At zero the history is over: the next burst is measured from its own start,
		// not averaged into a window of the idleness that scaled the Revision down.
		// Unless a request came in after the decision: its load stays in the window.
		rev.concurrency.Reset()
		rev.rps.Reset()
	}
	if ready > 0 {
		rev.poked = time.Time{} // any wake-up is over
	}
	rev.settings, rev.ready, rev.reachable = s, ready, reachable
}

// Woken returns how long ago the poke that woke key came, once: the reconciler calls
// it after the scale write that asks for the first pod.
func (a *Autoscaler) Woken(key types.NamespacedName) (time.Duration, bool) {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	rev, ok := a.revs[key]
	if !ok || rev.poked.IsZero() {
		return 0, false
	}
	d := now.Sub(rev.poked)
	rev.poked = time.Time{}
	rev.wakes++
	rev.lastWake = d
	return d, true
}

// Forget drops a Revision whose PodAutoscaler is gone.
func (a *Autoscaler) Forget(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.revs, key)
}

// Decision returns the latest decision for a watched Revision, deciding now if there
// is none yet. DesiredPods is NoDecision while the Revision's load is not known.
func (a *Autoscaler) Decision(key types.NamespacedName) decider.Decision {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	rev, ok := a.revs[key]
	if !ok || !rev.watched {
		return decider.Decision{DesiredPods: NoDecision}
	}
	if !rev.decided {
		a.decideLocked(key, rev, now)
	}
	return rev.last
}

// decideLocked runs the decider for rev and reports whether the outcome changed in a
// way the reconciler acts on: the desired scale, or the sign of the excess burst
// capacity (as Knative publishes); lower says the change asks for no more pods.
func (a *Autoscaler) decideLocked(key types.NamespacedName, rev *revision, now time.Time) (changed, lower bool) {
	s := rev.settings
	w := &rev.concurrency
	if s.Metric == decider.MetricRPS {
		w = &rev.rps
	}
	var d decider.Decision
	if w.IsEmpty(now, s.StableWindow) && now.Sub(rev.since) < s.StableWindow {
		// Nothing recorded since watching began, and not for long: after a restart
		// the history is simply missing, and zero would scale a busy Revision down.
		d = decider.Decision{DesiredPods: NoDecision}
	} else {
		average := w.Average
		if s.Aggregation == decider.AggregationWeighted {
			average = w.WeightedAverage
		}
		d = rev.state.Decide(s, now, rev.ready, rev.reachable, average(now, s.StableWindow), average(now, s.PanicWindow))
	}
	if d.Panicking != rev.last.Panicking {
		// Panic is where a decision jumps: say what it saw, so that a Revision with
		// many more pods than its load needs can be traced to its numbers.
		a.log.Info("panic mode", "revision", key, "panicking", d.Panicking, "desiredPods", d.DesiredPods,
			"readyPods", rev.ready, "panicValue", d.PanicValue, "stableValue", d.StableValue, "target", s.Target, "metric", s.Metric)
	}
	changed = !rev.decided || d.DesiredPods != rev.last.DesiredPods ||
		(d.ExcessBurstCapacity < 0) != (rev.last.ExcessBurstCapacity < 0)
	lower = rev.decided && d.DesiredPods <= rev.last.DesiredPods
	rev.last, rev.decided = d, true
	return changed, lower
}

// Start ticks until ctx ends. It runs on the leader only (NeedLeaderElection): its
// results wake the leader's reconciler.
func (a *Autoscaler) Start(ctx context.Context) error {
	a.leading.Store(true)
	defer a.leading.Store(false)
	t := time.NewTicker(a.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			for _, c := range a.DecideAll() {
				a.tell(c)
			}
		}
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (a *Autoscaler) NeedLeaderElection() bool { return true }

// idleForget is how long an unwatched Revision's load is kept: long enough for its
// PodAutoscaler to be created, short enough that load for deleted Revisions goes.
const idleForget = 5 * time.Minute

// DecideAll is one tick, which Start runs every Tick (and tests drive by hand): it
// decides for every watched Revision that can change: one with load in its
// window, pods to shed, or a panic to leave. An idle Revision at zero is skipped.
func (a *Autoscaler) DecideAll() []Change {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	var changed []Change
	for key, rev := range a.revs {
		if !rev.watched {
			if now.Sub(rev.seen) > idleForget {
				delete(a.revs, key)
			}
			continue
		}
		if rev.decided && rev.last.DesiredPods == 0 && !rev.last.Panicking && rev.ready == 0 &&
			rev.concurrency.IsEmpty(now, rev.settings.StableWindow) && rev.rps.IsEmpty(now, rev.settings.StableWindow) {
			continue
		}
		if c, lower := a.decideLocked(key, rev, now); c {
			changed = append(changed, Change{Key: key, Lower: lower})
		}
	}
	return changed
}

// Numbers is what the Autoscaler holds of one Revision at one moment: the dashboard
// charts a series of them.
type Numbers struct {
	Namespace string `json:"namespace"`
	Revision  string `json:"revision"`
	// RequestsPerSecond and Concurrency are averaged over the panic window: the
	// load as the decider sees a burst.
	RequestsPerSecond float64 `json:"requestsPerSecond"`
	Concurrency       float64 `json:"concurrency"`
	// Metric is what the decider scales on (concurrency or rps) and Target the
	// per-pod value it aims for.
	Metric string  `json:"metric"`
	Target float64 `json:"target"`
	// DesiredPods is the latest decision (NoDecision while nothing is known), before
	// min/max-scale; ReadyPods what the Deployment had ready at the last reconcile.
	DesiredPods int32 `json:"desiredPods"`
	ReadyPods   int32 `json:"readyPods"`
	Panicking   bool  `json:"panicking"`
	// Waking: a request waits for a Revision at zero. Activations counts the
	// wake-ups and LastActivationWait is the latest one's seconds from the poke to
	// the scale write that asked for the first pod.
	Waking             bool    `json:"waking"`
	Activations        int64   `json:"activations"`
	LastActivationWait float64 `json:"lastActivationWaitSeconds"`
}

// Leading reports whether this Autoscaler ticks (its replica leads): a standby takes
// the same reports but decides nothing, so its desired pods stand still.
func (a *Autoscaler) Leading() bool { return a.leading.Load() }

// Numbers returns the numbers of the watched Revision key, if any.
func (a *Autoscaler) Numbers(key types.NamespacedName) (Numbers, bool) {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	rev, ok := a.revs[key]
	if !ok || !rev.watched {
		return Numbers{}, false
	}
	n := Numbers{Namespace: key.Namespace, Revision: key.Name, Metric: rev.settings.Metric, Target: rev.settings.Target,
		DesiredPods: NoDecision, ReadyPods: rev.ready, Waking: !rev.poked.IsZero(), Activations: rev.wakes,
		LastActivationWait: rev.lastWake.Seconds()}
	if w := rev.settings.PanicWindow; w > 0 {
		n.RequestsPerSecond, n.Concurrency = rev.rps.Average(now, w), rev.concurrency.Average(now, w)
	}
	if rev.decided {
		n.DesiredPods, n.Panicking = rev.last.DesiredPods, rev.last.Panicking
	}
	return n, true
}
