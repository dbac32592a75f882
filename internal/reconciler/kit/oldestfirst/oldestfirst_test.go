package oldestfirst

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
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
	if Priority(time.Time{}) <= Priority(older) || Unchanged >= Priority(time.Unix(1<<40, 0)) {
		t.Error("a name-only object must come first and an unchanged one last")
	}
}

// TestLanes: work on a settled Knative object (its status speaks for its generation,
// Ready True or False) waits below every object in progress, whatever their ages, so a
// wave of old Revisions scaling to zero does not delay a new one; a settled object
// woken by a Knative object in progress (its Configuration's new generation) is part of
// a user's change and keeps its age.
func TestLanes(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("oldestfirst-lanes-test")
	defer q.ShutDown()
	ages := New()
	own := ages.Object()
	observers := ages.Handler(handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: o.GetLabels()["for"]}}}
	}))
	ctx := context.Background()
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rev := func(name string, age time.Duration, ready corev1.ConditionStatus) *v1.Revision {
		r := &v1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 1,
			CreationTimestamp: metav1.NewTime(base.Add(-age)), ResourceVersion: string(ready)}}
		r.Status.ObservedGeneration = 1
		r.Status.Conditions = []duck.Condition{{Type: duck.ConditionReady, Status: ready}}
		return r
	}

	own.Update(ctx, event.UpdateEvent{ObjectOld: rev("idle", time.Hour, "Unknown"), ObjectNew: rev("idle", time.Hour, "True")}, q)
	own.Update(ctx, event.UpdateEvent{ObjectOld: rev("failed", 50*time.Minute, "Unknown"), ObjectNew: rev("failed", 50*time.Minute, "False")}, q)
	own.Create(ctx, event.CreateEvent{Object: rev("new", 0, "Unknown")}, q)
	own.Create(ctx, event.CreateEvent{Object: rev("newer", -time.Second, "Unknown")}, q)
	for _, name := range []string{"new", "newer", "idle", "failed"} {
		got, _, _ := q.GetWithPriority()
		if got.Name != name {
			t.Fatalf("got %s, want %s", got.Name, name)
		}
		q.Done(got)
	}

	// "idle" is settled; an observed Knative object in progress wakes it in the
	// foreground, a settled one in the background.
	// (Each version its own resourceVersion: an update without a new one is a resync.)
	cfg := func(name, observer string, ready corev1.ConditionStatus, generation int64) *v1.Configuration {
		c := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: generation,
			Labels: map[string]string{"for": observer}, CreationTimestamp: metav1.NewTime(base),
			ResourceVersion: fmt.Sprint(generation, ready)}}
		c.Status.ObservedGeneration = 1
		c.Status.Conditions = []duck.Condition{{Type: duck.ConditionReady, Status: ready}}
		return c
	}
	observers.Update(ctx, event.UpdateEvent{ObjectOld: cfg("settled-cfg", "failed", "Unknown", 1), ObjectNew: cfg("settled-cfg", "failed", "True", 1)}, q)
	observers.Update(ctx, event.UpdateEvent{ObjectOld: cfg("changed-cfg", "idle", "True", 1), ObjectNew: cfg("changed-cfg", "idle", "True", 2)}, q)
	own.Create(ctx, event.CreateEvent{Object: rev("newest", -time.Minute, "Unknown")}, q)
	for _, name := range []string{"idle", "newest", "failed"} {
		got, _, _ := q.GetWithPriority()
		if got.Name != name {
			t.Fatalf("got %s, want %s", got.Name, name)
		}
		q.Done(got)
	}
}
