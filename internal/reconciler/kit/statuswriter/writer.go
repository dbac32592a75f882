// Package statuswriter writes the status of Knative objects the way every Ferry
// reconciler must: once per change, whole, without conflicts, and with a Warning Event
// when the object newly fails.
//
// It also holds back statuses that are on their way (Ready Unknown) for a short settle
// time: after the object's creation, and after the first change that could not be
// written at once. Most steps finish within it, so each object's status is written
// about once, when it is Ready or has failed, instead of once per step (Deploying,
// RevisionMissing, IngressNotConfigured, ...): a change is written settle after it
// began, with whatever the status is by then. The reconciler requeues itself for the end
// of the wait, so a rollout that takes longer still shows its progress, at most settle
// late. Losing Ready is written at once. Knative's readiness rule (observedGeneration equals
// generation and Ready is True) makes an object whose status is held back read as not
// ready, as it is.
//
// Because it sees every status before and after its write, the Writer is also where
// an object's time to Ready is measured (OnReady), once per generation.
package statuswriter

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/api/duck"
)

// Status is the status of a Knative object: a struct embedding duck.Status.
type Status interface {
	GetCondition(duck.ConditionType) *duck.Condition
	Duck() *duck.Status
}

// Writer writes the status of one kind of object. It is safe for concurrent use.
type Writer struct {
	client   client.Client
	recorder events.EventRecorder
	settle   time.Duration
	now      func() time.Time
	// busy and busySettle lengthen settle while busy says so.
	busy       func() bool
	busySettle time.Duration

	// onReady, if set, receives each object's time to Ready.
	onReady func(time.Duration)
	// states are Ready=False reasons that are states, not failures: no Event.
	states map[string]bool
	// progress are Ready=Unknown reasons written at once (Progress).
	progress map[string]bool

	mu sync.Mutex
	// last holds what was last written for each object, so that a reconcile reading a
	// cache that has not caught up with that write does not write it again.
	last map[types.NamespacedName]written
	// since holds when the watch brought each object's current generation, while it
	// is not yet Ready: the API server records no time for a generation change.
	since map[types.NamespacedName]arrival
	// held holds since when a change of each object's status has been held back.
	held map[types.NamespacedName]time.Time
	// off are the safeguards switched off (Without).
	off map[Safeguard]bool
}

// Safeguard names one of the Writer's rules against a lost status update, so that
// the convergence simulation (internal/convergence) can switch it off and show that
// it then finds the loss. Nothing else switches one off.
type Safeguard string

const (
	// RewriteWhileBehind writes a status equal to the cached one while the cache
	// shows a version older than this Writer's last write: the API server holds
	// that write, not the cached status.
	RewriteWhileBehind Safeguard = "rewrite-while-behind"
	// RepairOthersWrites writes again a status this Writer wrote before, once the
	// cache shows a later version that differs: someone else's write.
	RepairOthersWrites Safeguard = "repair-others-writes"
	// OthersWritesWake lets through every status update but this Writer's own
	// echo: a stale status another replica wrote wakes the reconciler.
	OthersWritesWake Safeguard = "others-writes-wake"
	// RelistKeepsSpec lets through this Writer's echo when it also carries a
	// change of spec or metadata, as an update after a relist can.
	RelistKeepsSpec Safeguard = "relist-keeps-spec"
)

// Safeguards are all of them, for the simulation's sensitivity tests.
var Safeguards = []Safeguard{RewriteWhileBehind, RepairOthersWrites, OthersWritesWake, RelistKeepsSpec}

// Without switches the safeguards off (the simulation's sensitivity tests only). Call
// it before the Writer is used.
func (w *Writer) Without(s ...Safeguard) *Writer {
	w.off = make(map[Safeguard]bool, len(s))
	for _, g := range s {
		w.off[g] = true
	}
	return w
}

// arrival is when the Writer's watch brought generation of the object with uid.
type arrival struct {
	uid        types.UID
	generation int64
	at         time.Time
}

type written struct {
	uid types.UID
	sum uint64
	at  time.Time
	// from is the resourceVersion the write was computed from: while the cache still
	// shows it, the cache is behind the write.
	from string
	// to is the resourceVersion the write made: the watch event that brings it is
	// this Writer's echo.
	to string
	// readyGeneration is the generation this Writer last wrote Ready=True for, so that
	// a generation's time to Ready is observed once.
	readyGeneration int64
}

// New returns a Writer that writes through c and records Events with recorder (which
// may be nil), holding back statuses on their way for settle (none if settle <= 0).
func New(c client.Client, recorder events.EventRecorder, settle time.Duration) *Writer {
	return &Writer{client: c, recorder: recorder, settle: settle, now: time.Now,
		last: make(map[types.NamespacedName]written), since: make(map[types.NamespacedName]arrival),
		held: make(map[types.NamespacedName]time.Time)}
}

// WithClock makes the Writer tell time by c (the convergence simulation's clock).
// Call it before the Writer is used.
func (w *Writer) WithClock(c clock.PassiveClock) *Writer {
	w.now = c.Now
	return w
}

// OnReady makes the Writer call f with an object's time to Ready when it writes
// Ready=True for a generation for the first time. The time runs from when the watch of
// Changes brought that generation: the object's creation or the update that raised its
// generation. An object created while no Writer watched (the controller was down or
// not the leader) counts from its creationTimestamp instead, and a later generation
// that no Writer saw arrive is not observed. Call it before the Writer is used.
func (w *Writer) OnReady(f func(time.Duration)) *Writer {
	w.onReady = f
	return w
}

// SettleLongerWhileBusy holds statuses on their way back for d instead of the settle
// time while busy reports true (a burst of Services on its way to Ready, whose steps
// take longer than the usual settle under load: each status written once instead of
// twice). Failures and Ready are still written at once. Call it before the Writer is
// used.
func (w *Writer) SettleLongerWhileBusy(busy func() bool, d time.Duration) *Writer {
	w.busy, w.busySettle = busy, d
	return w
}

// Behind reports that the cache shows obj at a version older than this Writer's last
// write of its status. A reconciler whose status is also its state (a PodAutoscaler's
// Active condition and its transition time drive scale to zero and the activation
// timeout) must not compute from such a copy: its own last status is not in it. The
// write's echo is filtered (Changes), so the caller requeues itself shortly.
func (w *Writer) Behind(obj client.Object) bool {
	w.mu.Lock()
	last, seen := w.last[client.ObjectKeyFromObject(obj)]
	w.mu.Unlock()
	return seen && last.uid == obj.GetUID() && cacheBehind(last, obj.GetResourceVersion())
}

// NotFailures names reasons of Ready=False that are states an object goes through in
// normal operation (a PodAutoscaler at zero: NoTraffic), for which the Writer records
// no Warning Event. Call it before the Writer is used.
func (w *Writer) NotFailures(reasons ...string) *Writer {
	w.states = make(map[string]bool, len(reasons))
	for _, r := range reasons {
		w.states[r] = true
	}
	return w
}

// Progress names reasons of Ready=Unknown that last, and whose every change users
// follow (a gradual rollout's RolloutInProgress, one status.traffic per step): their
// statuses are written at once, not held back. Call it before the Writer is used.
func (w *Writer) Progress(reasons ...string) *Writer {
	w.progress = make(map[string]bool, len(reasons))
	for _, r := range reasons {
		w.progress[r] = true
	}
	return w
}

// Write makes obj's status desired, given cached, the status obj has in the cache. It
// writes nothing when they are equal, or when desired is what this Writer last wrote
// for obj from the version the cache still shows (the cache is behind). When it holds desired back, the result requeues the
// object for the end of the wait; a reconciler returns what Write returns.
//
// The write replaces the whole status (a JSON patch "add /status", for this object's
// UID only) without a resourceVersion precondition. A reconcile that runs before the cache has seen the
// previous write computes its status from children at least as fresh, so its status is
// the right one: a precondition would only turn it into a conflict, a wasted write and
// a retry, and a merge patch computed against the stale copy could drop changes.
func (w *Writer) Write(ctx context.Context, obj client.Object, cached, desired Status) (reconcile.Result, error) {
	key := client.ObjectKeyFromObject(obj)
	w.mu.Lock()
	last, seen := w.last[key]
	w.mu.Unlock()
	if seen && last.uid != obj.GetUID() {
		seen = false
	}
	// While the cache shows a version older than this Writer's last write, the API
	// server holds that write, not the cached status: a status that went back to the
	// cached one (Ready, Unknown, Ready again before the cache caught up) must be
	// written, or it is lost — the write's own watch event is filtered out (Changes)
	// and wakes no one.
	behind := seen && cacheBehind(last, obj.GetResourceVersion()) && !w.off[RewriteWhileBehind]
	desired.Duck().KeepTransitionTimes(cached.Duck(), w.now())
	if equality.Semantic.DeepEqual(cached, desired) && !behind {
		w.release(key)
		return reconcile.Result{}, nil
	}
	// The test pins the object: a status computed for an object that was deleted and
	// created again under its name must not land on its successor (the convergence
	// simulation found one that did); the API server refuses it with 422, and the
	// retry reads the successor.
	patch, err := json.Marshal([]any{
		map[string]any{"op": "test", "path": "/metadata/uid", "value": obj.GetUID()},
		map[string]any{"op": "add", "path": "/status", "value": desired},
	})
	if err != nil {
		return reconcile.Result{}, err
	}
	// Read before the write, which refreshes obj with whatever generation is current.
	generation, created := obj.GetGeneration(), obj.GetCreationTimestamp().Time
	h := fnv.New64a()
	h.Write(patch)
	now := w.now()
	this := written{uid: obj.GetUID(), sum: h.Sum64(), at: now, from: obj.GetResourceVersion()}

	if seen {
		this.readyGeneration = last.readyGeneration
	}
	if seen && last.sum == this.sum && (cacheBehind(last, this.from) || w.off[RepairOthersWrites]) {
		// The cache has not caught up with this Writer's write yet. Once it shows a
		// later version whose status still differs, someone else wrote it (another
		// controller, a stale write across a failover), and it is written again.
		return reconcile.Result{}, nil
	}
	if wait := w.holdBack(key, obj, cached, desired, now); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}

	// Decided before the write (which refreshes obj, and cached with it), recorded
	// after it succeeds, so that a write that failed and is retried warns once.
	failure := newFailure(cached, desired)
	if failure != nil && w.states[failure.Reason] {
		failure = nil
	}
	wasReady := cached.GetCondition(duck.ConditionReady).IsTrue()
	if err := w.client.Status().Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	this.to = obj.GetResourceVersion()
	becameReady := desired.GetCondition(duck.ConditionReady).IsTrue() && this.readyGeneration != generation
	if becameReady {
		this.readyGeneration = generation
	}
	var start time.Time
	measured := false
	w.mu.Lock()
	w.last[key] = this
	delete(w.held, key)
	if becameReady {
		start, measured = w.readySinceLocked(key, this.uid, generation, created, !wasReady)
	}
	w.mu.Unlock()
	if measured && w.onReady != nil {
		// Ready from the moment the write succeeded, when readers can see it.
		w.onReady(w.now().Sub(start))
	}
	if failure != nil && w.recorder != nil {
		w.recorder.Eventf(obj, nil, corev1.EventTypeWarning, failure.Reason, "Reconcile", "%s", failure.Message)
	}
	return reconcile.Result{}, nil
}

// readySinceLocked returns when generation, which has just become Ready, began, if
// that is known, and forgets the arrival. wasNotReady allows creationTimestamp for a
// first generation whose creation the watch did not bring: the cached status was not
// Ready, so this is its becoming Ready, not the rewrite of a Ready status that a
// restarted controller no longer remembers writing.
func (w *Writer) readySinceLocked(key types.NamespacedName, uid types.UID, generation int64, created time.Time, wasNotReady bool) (time.Time, bool) {
	a, ok := w.since[key]
	if ok && (a.uid != uid || a.generation <= generation) {
		// Used now, or left by an older object or generation: never needed again.
		delete(w.since, key)
	}
	if ok && a.uid == uid && a.generation == generation {
		return a.at, true
	}
	return created, wasNotReady && generation <= 1
}

// createdWatchSlack is how long after an object's creationTimestamp its create event
// may arrive and still be taken for the creation itself: the timestamp is truncated to
// the second. Older objects arrive in a (re)list, not as they are created.
const createdWatchSlack = 2 * time.Second

// Changes is the predicate for the watch of the Writer's own kind. It passes every
// update but the echo of this Writer's own status write (its resourceVersion, nothing
// but the status changed), which cannot change what the reconciler decides. A status someone else wrote does pass: another controller
// during a failover may have written one computed from an older view, and only a
// reconcile puts it right.
//
// It also notes when a creation or a new generation arrives, for OnReady: the watch
// sees it before any queue wait, and more precisely than creationTimestamp's seconds.
func (w *Writer) Changes() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			if now := w.now(); w.onReady != nil && now.Sub(e.Object.GetCreationTimestamp().Time) < createdWatchSlack {
				w.arrived(e.Object, now)
			}
			return true
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			obj := e.ObjectNew
			if w.onReady != nil && obj.GetGeneration() != e.ObjectOld.GetGeneration() {
				w.arrived(obj, w.now())
			}
			w.mu.Lock()
			last, seen := w.last[client.ObjectKeyFromObject(obj)]
			w.mu.Unlock()
			echo := seen && last.uid == obj.GetUID() && (last.to == obj.GetResourceVersion() || w.off[OthersWritesWake])
			return !echo || (!w.off[RelistKeepsSpec] && !onlyStatus(e.ObjectOld, obj))
		},
	}
}

// cacheBehind reports whether a cache showing resourceVersion cached cannot show the
// Writer's last write yet: the version is older than the one the write made. The
// API server's resourceVersions compare (resourceversion.CompareResourceVersion);
// one that does not is only known to be older when it is the version the write was
// computed from. Older, not just equal: while a second writer (a deposed leader, a
// failover) wrote in between, the cache can show its version, between the two — the
// convergence simulation found a Configuration left Unknown by its own write that
// way, the write's echo filtered and the newer version taken as current.
func cacheBehind(last written, cached string) bool {
	if c, err := resourceversion.CompareResourceVersion(cached, last.to); err == nil {
		return c < 0
	}
	return cached == last.from
}

// onlyStatus reports that nothing but the status differs between old and new. An
// informer that relisted delivers only each object's latest version, as one update
// from the version it had: that can be the echo of a status write and also carry a
// spec change the watch never delivered, which must not be dropped.
func onlyStatus(old, new client.Object) bool {
	return old.GetGeneration() == new.GetGeneration() &&
		equality.Semantic.DeepEqual(old.GetLabels(), new.GetLabels()) &&
		equality.Semantic.DeepEqual(old.GetAnnotations(), new.GetAnnotations()) &&
		equality.Semantic.DeepEqual(old.GetFinalizers(), new.GetFinalizers()) &&
		equality.Semantic.DeepEqual(old.GetOwnerReferences(), new.GetOwnerReferences()) &&
		old.GetDeletionTimestamp().Equal(new.GetDeletionTimestamp())
}

func (w *Writer) arrived(obj client.Object, at time.Time) {
	w.mu.Lock()
	w.since[client.ObjectKeyFromObject(obj)] = arrival{uid: obj.GetUID(), generation: obj.GetGeneration(), at: at}
	w.mu.Unlock()
}

// holdBack returns how much longer an in-progress status should wait: the settle time
// runs from the object's creation while it is young, else from when a change was first
// held back. A Ready object that is no longer Ready is not held back.
func (w *Writer) holdBack(key types.NamespacedName, obj client.Object, cached, desired Status, now time.Time) time.Duration {
	settle := w.settle
	ready := desired.GetCondition(duck.ConditionReady)
	if settle <= 0 || !ready.IsUnknown() || w.progress[ready.Reason] || cached.GetCondition(duck.ConditionReady).IsTrue() {
		return 0
	}
	if w.busy != nil && w.busySettle > settle && w.busy() {
		settle = w.busySettle
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	from, held := w.held[key]
	if !held {
		from = obj.GetCreationTimestamp().Time
		if now.Sub(from) >= settle {
			from = now
		}
		w.held[key] = from
	}
	return from.Add(settle).Sub(now)
}

// release forgets a held-back change: the status is as desired after all.
func (w *Writer) release(key types.NamespacedName) {
	w.mu.Lock()
	delete(w.held, key)
	w.mu.Unlock()
}

// Forget drops what the Writer remembers of a deleted object.
func (w *Writer) Forget(key types.NamespacedName) {
	w.mu.Lock()
	delete(w.last, key)
	delete(w.since, key)
	delete(w.held, key)
	w.mu.Unlock()
}

// newFailure is desired's Ready condition when it turns False or fails for a new
// reason, so that one failure makes one Warning Event however often it is reconciled;
// nil otherwise.
func newFailure(cached, desired Status) *duck.Condition {
	c := desired.GetCondition(duck.ConditionReady)
	if !c.IsFalse() {
		return nil
	}
	if o := cached.GetCondition(duck.ConditionReady); o.IsFalse() && o.Reason == c.Reason && o.Message == c.Message {
		return nil
	}
	return c
}
