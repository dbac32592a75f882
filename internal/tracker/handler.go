package tracker

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Handler returns a controller-runtime event handler for the kinds the
// tracker's observers depend on:
//
//	Watches(&servingv1.Configuration{}, t.Handler())
//
// It adds the observers of each event's object straight to the queue the
// controller hands it, so it needs no wiring of New's callback and keeps
// controller-runtime's priorities (events from the initial list go in at low
// priority with the priority queue). For an update it wakes the observers of
// both the old and the new object, so selector observers see an object stop
// matching.
func (t *Tracker) Handler() handler.EventHandler {
	return TypedHandler[client.Object](t)
}

// TypedHandler is Handler for typed sources, as in
// source.Kind(cache, &servingv1.Configuration{}, tracker.TypedHandler[*servingv1.Configuration](t)).
func TypedHandler[T client.Object](t *Tracker) handler.TypedEventHandler[T, reconcile.Request] {
	return handler.TypedFuncs[T, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[T], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			t.addObservers(q, e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[T], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			t.addObservers(q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[T], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			t.addObservers(q, e.Object)
		},
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[T], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			t.addObservers(q, e.Object)
		},
	}
}

func (t *Tracker) addObservers(q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...any) {
	var buf [4]types.NamespacedName
	for _, o := range t.observersOfAll(buf[:0], objs...) {
		q.Add(reconcile.Request{NamespacedName: o})
	}
}

// observersOfAll returns, sorted and without duplicates, the observers of
// any of objs.
func (t *Tracker) observersOfAll(out []types.NamespacedName, objs ...any) []types.NamespacedName {
	for _, obj := range objs {
		if info, ok := t.describe(obj); ok {
			out = t.observersOf(out, &info)
		}
	}
	return out
}

// InformerHandler returns a client-go event handler that calls New's enqueue
// callback for the observers of every added, updated (old or new) and deleted
// object, tombstones included:
//
//	informer.AddEventHandler(t.InformerHandler())
func (t *Tracker) InformerHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { t.OnChanged(obj) },
		UpdateFunc: func(oldObj, newObj any) {
			var buf [4]types.NamespacedName
			for _, o := range t.observersOfAll(buf[:0], oldObj, newObj) {
				t.notify(o)
			}
		},
		DeleteFunc: func(obj any) { t.OnChanged(obj) },
	}
}
