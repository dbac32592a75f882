package podautoscaler

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestAfterBurstQueuesWhenTheBurstEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	a := newAfterBurst()
	if err := a.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

	calm := make(chan struct{})
	close(calm)
	if a.postpone(key("idle"), calm) {
		t.Error("postponed with no burst on")
	}

	first := make(chan struct{})
	if !a.postpone(key("a"), first) || !a.postpone(key("b"), first) {
		t.Fatal("not postponed during a burst")
	}
	if n := q.Len(); n != 0 {
		t.Fatalf("%d queued while the burst is on", n)
	}
	close(first)
	got := map[string]bool{}
	for range 2 {
		got[take(t, q).Name] = true
	}
	if !got["a"] || !got["b"] {
		t.Errorf("queued %v at the burst's end, want a and b", got)
	}

	// A key postponed by the next burst waits for that one.
	second := make(chan struct{})
	if !a.postpone(key("c"), second) {
		t.Fatal("not postponed during the second burst")
	}
	time.Sleep(50 * time.Millisecond)
	if n := q.Len(); n != 0 {
		t.Fatalf("%d queued while the second burst is on", n)
	}
	close(second)
	if name := take(t, q).Name; name != "c" {
		t.Errorf("queued %q at the second burst's end, want c", name)
	}
}

func TestAfterBurstStopsWithTheController(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	a := newAfterBurst()
	if err := a.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	burst := make(chan struct{})
	a.postpone(types.NamespacedName{Namespace: "ns", Name: "a"}, burst)
	cancel()
	time.Sleep(50 * time.Millisecond)
	close(burst)
	time.Sleep(50 * time.Millisecond)
	if n := q.Len(); n != 0 {
		t.Errorf("%d queued after the controller stopped", n)
	}
}

// take returns the next request in q, failing after a second.
func take(t *testing.T, q workqueue.TypedRateLimitingInterface[reconcile.Request]) reconcile.Request {
	t.Helper()
	got := make(chan reconcile.Request, 1)
	go func() {
		r, _ := q.Get()
		q.Done(r)
		got <- r
	}()
	select {
	case r := <-got:
		return r
	case <-time.After(time.Second):
		t.Fatal("nothing queued after a second")
		return reconcile.Request{}
	}
}
