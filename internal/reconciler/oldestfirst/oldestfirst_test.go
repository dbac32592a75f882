package oldestfirst

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	h := Handler(&handler.EnqueueRequestForObject{})
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

func TestPriority(t *testing.T) {
	older, newer := time.Unix(1000, 0), time.Unix(1001, 0)
	if Priority(older) <= Priority(newer) {
		t.Errorf("older %d is not above newer %d", Priority(older), Priority(newer))
	}
	if Priority(time.Time{}) <= Priority(older) || unchanged >= Priority(time.Unix(1<<40, 0)) {
		t.Error("a name-only object must come first and an unchanged one last")
	}
}
