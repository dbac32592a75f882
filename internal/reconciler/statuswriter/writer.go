// Package statuswriter writes the status of Knative objects the way every Ferry
// reconciler must: once per change, whole, without conflicts, and with a Warning Event
// when the object newly fails.
//
// It also holds back statuses that are on their way (Ready Unknown) for a short settle
// time after the object's creation or its last status write. Most rollouts finish
// within it, so each object's status is written once, when it is Ready or has failed,
// instead of once per step (Deploying, RevisionMissing, IngressNotConfigured, ...);
// the reconciler requeues itself for the end of the wait, so a rollout that takes
// longer still shows its progress. Knative's readiness rule (observedGeneration equals
// generation and Ready is True) makes an object whose status is held back read as not
// ready, as it is.
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
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/api/duck"
)

// Status is the status of a Knative object: a struct embedding duck.Status.
type Status interface {
	GetCondition(duck.ConditionType) *duck.Condition
}

// Writer writes the status of one kind of object. It is safe for concurrent use.
type Writer struct {
	client   client.Client
	recorder events.EventRecorder
	settle   time.Duration
	now      func() time.Time

	mu sync.Mutex
	// last holds what was last written for each object, so that a reconcile reading a
	// cache that has not caught up with that write does not write it again.
	last map[types.NamespacedName]written
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
}

// New returns a Writer that writes through c and records Events with recorder (which
// may be nil), holding back statuses on their way for settle (none if settle <= 0).
func New(c client.Client, recorder events.EventRecorder, settle time.Duration) *Writer {
	return &Writer{client: c, recorder: recorder, settle: settle, now: time.Now,
		last: make(map[types.NamespacedName]written)}
}

// Write makes obj's status desired, given cached, the status obj has in the cache. It
// writes nothing when they are equal, or when desired is what this Writer last wrote
// for obj from the version the cache still shows (the cache is behind). When it holds desired back, the result requeues the
// object for the end of the wait; a reconciler returns what Write returns.
//
// The write replaces the whole status (a JSON patch "add /status") without a
// resourceVersion precondition. A reconcile that runs before the cache has seen the
// previous write computes its status from children at least as fresh, so its status is
// the right one: a precondition would only turn it into a conflict, a wasted write and
// a retry, and a merge patch computed against the stale copy could drop changes.
func (w *Writer) Write(ctx context.Context, obj client.Object, cached, desired Status) (reconcile.Result, error) {
	if equality.Semantic.DeepEqual(cached, desired) {
		return reconcile.Result{}, nil
	}
	patch, err := json.Marshal([]any{map[string]any{"op": "add", "path": "/status", "value": desired}})
	if err != nil {
		return reconcile.Result{}, err
	}
	key := client.ObjectKeyFromObject(obj)
	h := fnv.New64a()
	h.Write(patch)
	now := w.now()
	this := written{uid: obj.GetUID(), sum: h.Sum64(), at: now, from: obj.GetResourceVersion()}

	w.mu.Lock()
	last, seen := w.last[key]
	w.mu.Unlock()
	if seen && last.uid != this.uid {
		seen = false
	}
	if seen && last.sum == this.sum && last.from == this.from {
		// The cache has not caught up with this Writer's write yet. Once it shows a
		// later version whose status still differs, someone else wrote it (another
		// controller, a stale write across a failover), and it is written again.
		return reconcile.Result{}, nil
	}
	if wait := w.holdBack(obj, desired, last, seen, now); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}

	// Decided before the write (which refreshes obj, and cached with it), recorded
	// after it succeeds, so that a write that failed and is retried warns once.
	failure := newFailure(cached, desired)
	if err := w.client.Status().Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	this.to = obj.GetResourceVersion()
	w.mu.Lock()
	w.last[key] = this
	w.mu.Unlock()
	if failure != nil && w.recorder != nil {
		w.recorder.Eventf(obj, nil, corev1.EventTypeWarning, failure.Reason, "Reconcile", "%s", failure.Message)
	}
	return reconcile.Result{}, nil
}

// Changes is the predicate for the watch of the Writer's own kind. It passes every
// update but the echo of this Writer's own status write, which cannot change what the
// reconciler decides. A status someone else wrote does pass: another controller
// during a failover may have written one computed from an older view, and only a
// reconcile puts it right.
func (w *Writer) Changes() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		obj := e.ObjectNew
		w.mu.Lock()
		last, seen := w.last[client.ObjectKeyFromObject(obj)]
		w.mu.Unlock()
		return !seen || last.uid != obj.GetUID() || last.to != obj.GetResourceVersion()
	}}
}

// holdBack returns how much longer an in-progress status should wait: the settle time
// runs from the object's creation or from its last status write, whichever is later.
func (w *Writer) holdBack(obj client.Object, desired Status, last written, seen bool, now time.Time) time.Duration {
	if w.settle <= 0 || !desired.GetCondition(duck.ConditionReady).IsUnknown() {
		return 0
	}
	from := obj.GetCreationTimestamp().Time
	if seen && last.at.After(from) {
		from = last.at
	}
	return from.Add(w.settle).Sub(now)
}

// Forget drops what the Writer remembers of a deleted object.
func (w *Writer) Forget(key types.NamespacedName) {
	w.mu.Lock()
	delete(w.last, key)
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
