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

	"github.com/ferry-serving/ferry/api/duck"
)

// Ages orders one controller's queue: it remembers when each object of the
// controller's own kind was created, from that kind's watch (Object), so that a
// request woken by anything else — a child, the tracker — is queued at the age of the
// object it reconciles, not at the age of whatever woke it. A child is younger than its
// owner: at its own age, a Route woken by its new KIngress would wait behind every
// Route created after it, and the Ready order would scramble at the last step.
type Ages struct {
	objects sync.Map // types.NamespacedName → known
}

// known is what the own kind's watch last said of an object.
type known struct {
	age int // Priority(creationTimestamp)
	// settled: its status spoke for its generation, Ready True or False (background).
	settled bool
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
	k, ok := a.objects.Load(key)
	if !ok {
		return 0, false
	}
	return k.(known).priority(), true
}

func (k known) priority() int {
	if k.settled {
		return k.age - background
	}
	return k.age
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

// Unchanged is the priority of initial-list and resync events, and of other work no
// user waits for (an Autoscaler's scale-downs): below every age.
const Unchanged = math.MinInt

// background lowers the priority of work on a settled object below every object in
// progress (ages are minus Unix seconds, far smaller in size), and keeps it above
// Unchanged.
const background = 1 << 40

// knative is a Knative object: its status says whether it is settled.
type knative interface {
	client.Object
	DuckStatus() *duck.Status
}

// settled reports a Knative object whose status speaks for its generation, Ready True
// or False, and whether obj is a Knative object at all.
func settled(obj client.Object) (settled, ok bool) {
	k, ok := obj.(knative)
	if !ok {
		return false, false
	}
	return k.DuckStatus().Settled(k.GetGeneration()), true
}

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
		h.ages.objects.Delete(client.ObjectKeyFromObject(e.Object))
	}
}

func (h ageHandler) Generic(ctx context.Context, e event.GenericEvent, q queue) {
	h.inner.Generic(ctx, e, h.byAge(q, e.Object))
}

func (h ageHandler) record(obj client.Object) {
	if h.own && obj != nil {
		done, _ := settled(obj)
		h.ages.objects.Store(client.ObjectKeyFromObject(obj), known{age: Priority(obj.GetCreationTimestamp().Time), settled: done})
	}
}

func (h ageHandler) byAge(q queue, obj client.Object) queue {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok {
		return q
	}
	fallback := 0
	var urgent bool
	if obj != nil {
		fallback = Priority(obj.GetCreationTimestamp().Time)
		// Another Knative object in progress wakes an owner or observer that is
		// part of the same change (a settled Route woken by its Configuration's new
		// Revision): in the foreground, whatever the owner's own state.
		done, isKnative := settled(obj)
		urgent = !h.own && isKnative && !done
	}
	return agedQueue{PriorityQueue: pq, ages: h.ages, fallback: fallback, urgent: urgent}
}

// agedQueue adds each request at its object's age, except what the wrapped handler
// marks as unchanged (controller-runtime's handler.LowPriority), which goes below every
// age.
type agedQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	ages     *Ages
	fallback int
	// urgent: the event came from a Knative object in progress (see byAge).
	urgent bool
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
		k, isKnown := q.ages.objects.Load(item.NamespacedName)
		var p int
		switch {
		case low:
			p = Unchanged
		case !isKnown:
			p = q.fallback
		case q.urgent:
			p = k.(known).age
		default:
			p = k.(known).priority()
		}
		o.Priority = &p
		q.PriorityQueue.AddWithOpts(o, item)
	}
}
