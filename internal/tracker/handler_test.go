package tracker

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// drain returns the names in q, sorted, and marks them done.
func drain(q workqueue.TypedRateLimitingInterface[reconcile.Request]) []types.NamespacedName {
	var out []types.NamespacedName
	for q.Len() > 0 {
		r, _ := q.Get()
		q.Done(r)
		out = append(out, r.NamespacedName)
	}
	return sortUnique(out)
}

func TestHandlerAddsObserversToTheControllersQueue(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	tr := New(rec.enqueue, 0).SetScheme(testScheme())
	exact, selected := nn("ns", "exact"), nn("ns", "selected")
	mustTrack(t, tr, exactRef("ns", "config"), exact)
	mustTrack(t, tr, selectorRef("ns", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}), selected)
	rec.take()

	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	h := tr.Handler()
	labelled := configMap("ns", "config", map[string]string{"app": "a"})
	plain := configMap("ns", "config", nil)

	for name, tc := range map[string]struct {
		fire func()
		want []types.NamespacedName
	}{
		"create": {func() { h.Create(ctx, event.CreateEvent{Object: labelled}, q) }, []types.NamespacedName{exact, selected}},
		// The label goes away: the selector observer learns from the old object.
		"update": {func() { h.Update(ctx, event.UpdateEvent{ObjectOld: labelled, ObjectNew: plain}, q) }, []types.NamespacedName{exact, selected}},
		"delete": {func() { h.Delete(ctx, event.DeleteEvent{Object: plain}, q) }, []types.NamespacedName{exact}},
		"generic": {func() {
			h.Generic(ctx, event.GenericEvent{Object: configMap("ns", "other", map[string]string{"app": "a"})}, q)
		},
			[]types.NamespacedName{selected}},
		"unrelated": {func() { h.Create(ctx, event.CreateEvent{Object: configMap("ns", "other", nil)}, q) }, nil},
		"nil object": {func() {
			h.Update(ctx, event.UpdateEvent{ObjectOld: (*corev1.ConfigMap)(nil), ObjectNew: plain}, q)
		}, []types.NamespacedName{exact}},
	} {
		tc.fire()
		if got := drain(q); !slices.Equal(got, tc.want) {
			t.Errorf("%s: queue got %v, want %v", name, got, tc.want)
		}
	}
	if got := rec.take(); len(got) != 0 {
		t.Errorf("Handler used New's callback too: %v", got)
	}
}

func TestTypedHandlerKeepsPriorityQueuePriorities(t *testing.T) {
	ctx := context.Background()
	tr := New(nil, 0).SetScheme(testScheme())
	route := nn("ns", "route")
	mustTrack(t, tr, exactRef("ns", "config"), route)

	q := priorityqueue.New[reconcile.Request]("tracker-test")
	defer q.ShutDown()
	var h handler.TypedEventHandler[*corev1.ConfigMap, reconcile.Request] = TypedHandler[*corev1.ConfigMap](tr)
	// Objects from the informer's initial list are low priority.
	h.Create(ctx, event.TypedCreateEvent[*corev1.ConfigMap]{Object: configMap("ns", "config", nil), IsInInitialList: true}, q)
	item, priority, _ := q.GetWithPriority()
	q.Done(item)
	if item.NamespacedName != route || priority != handler.LowPriority {
		t.Fatalf("initial-list create queued %v at priority %d, want %v at %d", item, priority, route, handler.LowPriority)
	}
	h.Create(ctx, event.TypedCreateEvent[*corev1.ConfigMap]{Object: configMap("ns", "config", nil)}, q)
	item, priority, _ = q.GetWithPriority()
	q.Done(item)
	if item.NamespacedName != route || priority != 0 {
		t.Fatalf("create queued %v at priority %d, want %v at 0", item, priority, route)
	}
}

func TestQueueSourceConnectsTrackToTheQueue(t *testing.T) {
	src := NewQueueSource()
	tr := New(src.Enqueue, 0)
	early, late := nn("ns", "early"), nn("ns", "late")
	mustTrack(t, tr, exactRef("ns", "config"), early) // before the controller started

	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	if err := src.Start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	mustTrack(t, tr, exactRef("ns", "config"), late)
	if got, want := drain(q), []types.NamespacedName{early, late}; !slices.Equal(got, want) {
		t.Fatalf("queue got %v, want %v", got, want)
	}
	if src.String() == "" {
		t.Error("QueueSource has no name for controller logs")
	}
}
