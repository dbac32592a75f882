package tracker

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// toHandler feeds informer notifications to a controller-runtime handler,
// as controller-runtime's Kind source does.
type toHandler struct {
	h handler.EventHandler
	q workqueue.TypedRateLimitingInterface[reconcile.Request]
}

func (a toHandler) OnAdd(obj any, initial bool) {
	a.h.Create(context.Background(), event.CreateEvent{Object: obj.(client.Object), IsInInitialList: initial}, a.q)
}

func (a toHandler) OnUpdate(oldObj, newObj any) {
	a.h.Update(context.Background(), event.UpdateEvent{ObjectOld: oldObj.(client.Object), ObjectNew: newObj.(client.Object)}, a.q)
}

func (a toHandler) OnDelete(obj any) {
	a.h.Delete(context.Background(), event.DeleteEvent{Object: unwrapTombstone(obj).(client.Object)}, a.q)
}

// TestWiredControllerConverges wires the tracker as doc.go shows, with the
// controller's queue, and runs the seed's race through it: the
// Configuration changes while the Route's first reconcile is reading it.
func TestWiredControllerConverges(t *testing.T) {
	ctx := context.Background()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()

	src := NewQueueSource()
	tr := New(src.Enqueue, 0).SetScheme(testScheme())
	inf := newFakeInformer()
	inf.handlers = append(inf.handlers, toHandler{tr.Handler(), q})
	if err := src.Start(ctx, q); err != nil { // the controller starts its sources
		t.Fatal(err)
	}
	inf.update(configMap("ns", "config", map[string]string{"generation": "1"}))

	var lastSeen string
	reconciles := 0
	reconcileRoute := func(req reconcile.Request) {
		reconciles++
		rd := tr.Reader(req.NamespacedName, inf)
		var cfg corev1.ConfigMap
		if err := rd.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "config"}, &cfg); err != nil {
			t.Fatal(err)
		}
		lastSeen = cfg.Labels["generation"]
		rd.Commit()
	}

	// The update lands inside the first read: written and dispatched before
	// the store is read on this occasion; later reconciles see no change.
	inf.beforeRead = func() {
		inf.beforeRead = nil
		inf.update(configMap("ns", "config", map[string]string{"generation": "2"}))
	}
	q.Add(reconcile.Request{NamespacedName: nn("ns", "route")})
	for q.Len() > 0 {
		req, _ := q.Get()
		reconcileRoute(req)
		q.Done(req)
	}
	if lastSeen != "2" {
		t.Fatalf("the Route last saw generation %q, want 2", lastSeen)
	}
	// Then a plain update wakes it through the handler alone.
	inf.update(configMap("ns", "config", map[string]string{"generation": "3"}))
	for q.Len() > 0 {
		req, _ := q.Get()
		reconcileRoute(req)
		q.Done(req)
	}
	if lastSeen != "3" {
		t.Fatalf("after a later update the Route saw generation %q, want 3", lastSeen)
	}
	t.Logf("%d reconciles", reconciles)
}

// wireController is doc.go's example; it is compiled, never run (it needs
// a manager and so a cluster).
var _ = func(mgr manager.Manager, r reconcile.Reconciler) error {
	src := NewQueueSource()
	t := New(src.Enqueue, 0).SetScheme(mgr.GetScheme())
	return builder.ControllerManagedBy(mgr).
		For(&corev1.Service{}).
		Watches(&corev1.ConfigMap{}, t.Handler()).
		WatchesRawSource(src).
		Complete(r)
}
