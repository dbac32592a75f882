package oldestfirst

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestOldestFirst: whatever order the events come in, the queue hands out the oldest
// objects' requests first, and what the initial list brought after everything else.
func TestOldestFirst(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("oldestfirst-test")
	defer q.ShutDown()
	h := New().Handler(&handler.EnqueueRequestForObject{})
	ctx := context.Background()
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	pod := func(name string, age time.Duration) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			CreationTimestamp: metav1.NewTime(base.Add(-age)), ResourceVersion: name}}
	}

	h.Create(ctx, event.CreateEvent{Object: pod("listed", time.Hour), IsInInitialList: true}, q)
	h.Create(ctx, event.CreateEvent{Object: pod("new", 0)}, q)
	h.Update(ctx, event.UpdateEvent{ObjectOld: pod("old", 10*time.Second), ObjectNew: pod("old-updated", 10*time.Second)}, q)
	h.Create(ctx, event.CreateEvent{Object: pod("middle", 5*time.Second)}, q)
	h.Generic(ctx, event.GenericEvent{Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nameonly"}}}, q)

	want := []string{"nameonly", "old-updated", "middle", "new", "listed"}
	for _, name := range want {
		got, _, _ := q.GetWithPriority()
		if got.Name != name {
			t.Fatalf("got %s, want %s (order %v)", got.Name, name, want)
		}
		q.Done(got)
	}
}

// TestChildrenTakeTheirOwnersAge: a request woken by a child is queued at the age of
// the object it reconciles, which its own watch recorded, not at the child's age: a
// Route woken by its new KIngress goes before Routes created after it.
func TestChildrenTakeTheirOwnersAge(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("oldestfirst-children-test")
	defer q.ShutDown()
	ages := New()
	own := ages.Object()
	// The child handler maps a ConfigMap to the Pod of the same name.
	children := ages.Handler(handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
	}))
	ctx := context.Background()
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	meta := func(name string, age time.Duration) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(base.Add(-age))}
	}

	// "first" is created 10 s before "second"; its child only after "second".
	own.Create(ctx, event.CreateEvent{Object: &corev1.Pod{ObjectMeta: meta("first", 10*time.Second)}}, q)
	own.Create(ctx, event.CreateEvent{Object: &corev1.Pod{ObjectMeta: meta("second", 0)}}, q)
	for range 2 {
		got, _, _ := q.GetWithPriority()
		q.Done(got)
	}
	children.Create(ctx, event.CreateEvent{Object: &corev1.ConfigMap{ObjectMeta: meta("second", 0)}}, q)
	children.Create(ctx, event.CreateEvent{Object: &corev1.ConfigMap{ObjectMeta: meta("first", -5*time.Second)}}, q)
	// A child of an object the own watch has not brought is queued at its own age.
	children.Create(ctx, event.CreateEvent{Object: &corev1.ConfigMap{ObjectMeta: meta("unknown", -10*time.Second)}}, q)
	for _, name := range []string{"first", "second", "unknown"} {
		got, _, _ := q.GetWithPriority()
		if got.Name != name {
			t.Fatalf("got %s, want %s", got.Name, name)
		}
		q.Done(got)
	}

	// Once the object is deleted its age is forgotten.
	own.Delete(ctx, event.DeleteEvent{Object: &corev1.Pod{ObjectMeta: meta("first", 10*time.Second)}}, q)
	got, _, _ := q.GetWithPriority()
	q.Done(got)
	if _, known := ages.priority(client.ObjectKeyFromObject(&corev1.Pod{ObjectMeta: meta("first", 0)})); known {
		t.Error("the deleted object's age is still remembered")
	}
}

func TestPriority(t *testing.T) {
	older, newer := time.Unix(1000, 0), time.Unix(1001, 0)
	if Priority(older) <= Priority(newer) {
		t.Errorf("older %d is not above newer %d", Priority(older), Priority(newer))
	}
	if Priority(time.Time{}) <= Priority(older) || unchanged >= Priority(time.Unix(1<<40, 0)) {
		t.Error("a name-only object must come first and an unchanged one last")
	}
}
