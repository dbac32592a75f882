package oldestfirst

import (
	"context"
	"math"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Ages orders one controller's queue: it remembers when each object of the
// controller's own kind was created, from that kind's watch (Object), so that a
// request woken by anything else — a child, the tracker — is queued at the age of the
// object it reconciles, not at the age of whatever woke it. A child is younger than its
// owner: at its own age, a Route woken by its new KIngress would wait behind every
// Route created after it, and the Ready order would scramble at the last step.
type Ages struct {
	priorities sync.Map // types.NamespacedName → int
}

// New returns an empty Ages for one controller.
func New() *Ages { return &Ages{} }

// Object is handler.EnqueueRequestForObject, oldest first, for the controller's own
// kind (in place of the builder's For); it also records each object's age.
func (a *Ages) Object() handler.EventHandler {
	return ageHandler{inner: &handler.EnqueueRequestForObject{}, ages: a, own: true}
}

// Owner is the handler the builder's Owns uses (requests for the controlling owner of
// ownerType), oldest first.
func (a *Ages) Owner(scheme *runtime.Scheme, mapper meta.RESTMapper, ownerType client.Object) handler.EventHandler {
	return a.Handler(handler.EnqueueRequestForOwner(scheme, mapper, ownerType, handler.OnlyControllerOwner()))
}

// Handler wraps h, whose requests then go into a priority queue at the age of the
// object each request names, or of the event's object while that is unknown (before
// the own kind's watch brought it). With a plain queue it is h.
func (a *Ages) Handler(h handler.EventHandler) handler.EventHandler {
	return ageHandler{inner: h, ages: a}
}

func (a *Ages) priority(key types.NamespacedName) (int, bool) {
	p, ok := a.priorities.Load(key)
	if !ok {
		return 0, false
	}
	return p.(int), true
}

// Priority is the queue priority for an object created at created: the creation
// second negated, so that older is higher. A zero time (an object known only by its
// name) is the highest.
func Priority(created time.Time) int {
	if created.IsZero() {
		return 0
	}
	return -int(created.Unix())
}

// unchanged is the priority of initial-list and resync events: below every age.
const unchanged = math.MinInt

type ageHandler struct {
	inner handler.EventHandler
	ages  *Ages
	// own records the ages of the objects it sees: the controller's own kind.
	own bool
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (h ageHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	h.record(e.Object)
	h.inner.Create(ctx, e, h.byAge(q, e.Object))
}

func (h ageHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	h.record(e.ObjectNew)
	h.inner.Update(ctx, e, h.byAge(q, e.ObjectNew))
}

func (h ageHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	h.inner.Delete(ctx, e, h.byAge(q, e.Object))
	if h.own && e.Object != nil {
		h.ages.priorities.Delete(client.ObjectKeyFromObject(e.Object))
	}
}

func (h ageHandler) Generic(ctx context.Context, e event.GenericEvent, q queue) {
	h.inner.Generic(ctx, e, h.byAge(q, e.Object))
}

func (h ageHandler) record(obj client.Object) {
	if h.own && obj != nil {
		h.ages.priorities.Store(client.ObjectKeyFromObject(obj), Priority(obj.GetCreationTimestamp().Time))
	}
}

func (h ageHandler) byAge(q queue, obj client.Object) queue {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok {
		return q
	}
	fallback := 0
	if obj != nil {
		fallback = Priority(obj.GetCreationTimestamp().Time)
	}
	return agedQueue{PriorityQueue: pq, ages: h.ages, fallback: fallback}
}

// agedQueue adds each request at its object's age, except what the wrapped handler
// marks as unchanged (controller-runtime's handler.LowPriority), which goes below every
// age.
type agedQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	ages     *Ages
	fallback int
}

func (q agedQueue) Add(item reconcile.Request) { q.AddWithOpts(priorityqueue.AddOpts{}, item) }

func (q agedQueue) AddAfter(item reconcile.Request, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

func (q agedQueue) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

func (q agedQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	low := o.Priority != nil && *o.Priority == handler.LowPriority
	for _, item := range items {
		p, known := q.ages.priority(item.NamespacedName)
		switch {
		case low:
			p = unchanged
		case !known:
			p = q.fallback
		}
		o.Priority = &p
		q.PriorityQueue.AddWithOpts(o, item)
	}
}
