package oldestfirst

import (
	"context"
	"math"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Handler wraps h, whose requests then go into a priority queue at the priority of
// the event's object's age. With a plain queue it is h.
func Handler(h handler.EventHandler) handler.EventHandler { return ageHandler{h} }

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

type ageHandler struct{ inner handler.EventHandler }

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (h ageHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	h.inner.Create(ctx, e, byAge(q, e.Object))
}

func (h ageHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	h.inner.Update(ctx, e, byAge(q, e.ObjectNew))
}

func (h ageHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	h.inner.Delete(ctx, e, byAge(q, e.Object))
}

func (h ageHandler) Generic(ctx context.Context, e event.GenericEvent, q queue) {
	h.inner.Generic(ctx, e, byAge(q, e.Object))
}

func byAge(q queue, obj client.Object) queue {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok || obj == nil {
		return q
	}
	return agedQueue{PriorityQueue: pq, priority: Priority(obj.GetCreationTimestamp().Time)}
}

// agedQueue adds at one priority, except what the wrapped handler marks as unchanged
// (controller-runtime's handler.LowPriority), which goes below every age.
type agedQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	priority int
}

func (q agedQueue) Add(item reconcile.Request) { q.AddWithOpts(priorityqueue.AddOpts{}, item) }

func (q agedQueue) AddAfter(item reconcile.Request, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

func (q agedQueue) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

func (q agedQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	p := q.priority
	if o.Priority != nil && *o.Priority == handler.LowPriority {
		p = unchanged
	}
	o.Priority = &p
	q.PriorityQueue.AddWithOpts(o, items...)
}

// Object is handler.EnqueueRequestForObject, oldest first: for a controller's own kind,
// in place of the builder's For.
func Object() handler.EventHandler { return Handler(&handler.EnqueueRequestForObject{}) }

// Owner is the handler the builder's Owns uses (requests for the controlling owner of
// ownerType), oldest first.
func Owner(mgr manager.Manager, ownerType client.Object) handler.EventHandler {
	return Handler(handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), ownerType, handler.OnlyControllerOwner()))
}
