package statuswriter

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

func TestWrite(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	stored := &v1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r", UID: "u1", Generation: 1}}
	c, patches := patchCounting(scheme, stored)
	rec := events.NewFakeRecorder(10)
	w := New(c, rec, 0)
	ctx := context.Background()

	stale := stored.DeepCopy() // what a cache that never catches up would show
	desired := stale.Status.DeepCopy()
	desired.ObservedGeneration = 1
	m := v1.RouteConditions.Manage(&desired.Status)
	m.InitializeConditions()
	m.MarkFalse(v1.RouteConditionAllTrafficAssigned, v1.ReasonRevisionMissing, "gone")

	if _, err := w.Write(ctx, stale.DeepCopy(), &stale.Status, desired); err != nil {
		t.Fatal(err)
	}
	got := &v1.Route{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.ObservedGeneration != 1 || got.Status.GetCondition(v1.RouteConditionReady).Reason != v1.ReasonRevisionMissing {
		t.Fatalf("status = %+v", got.Status)
	}
	if len(rec.Events) != 1 {
		t.Errorf("%d events, want 1", len(rec.Events))
	}

	// The cache still shows the old status: the same status is not written again.
	if _, err := w.Write(ctx, stale.DeepCopy(), &stale.Status, desired); err != nil {
		t.Fatal(err)
	}
	// Nor when the cache has caught up.
	if _, err := w.Write(ctx, got.DeepCopy(), &got.Status, desired); err != nil {
		t.Fatal(err)
	}
	if *patches != 1 {
		t.Errorf("%d patches, want 1", *patches)
	}

	// A new status is written, over whatever the stale copy says.
	m.MarkTrue(v1.RouteConditionAllTrafficAssigned)
	if _, err := w.Write(ctx, stale.DeepCopy(), &stale.Status, desired); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), got); err != nil {
		t.Fatal(err)
	}
	if *patches != 2 || got.Status.GetCondition(v1.RouteConditionAllTrafficAssigned).Status != corev1.ConditionTrue {
		t.Errorf("patches = %d, status = %+v", *patches, got.Status)
	}

	// Back to what the stale cache shows, before the cache has seen the last write:
	// the API server holds that write, so this status is written too. Skipped, it
	// would be lost: the last write's own event wakes no one.
	m.MarkFalse(v1.RouteConditionAllTrafficAssigned, v1.ReasonRevisionMissing, "gone")
	if _, err := w.Write(ctx, stale.DeepCopy(), &stale.Status, desired); err != nil {
		t.Fatal(err)
	}
	lastWritten := desired.DeepCopy()
	m.MarkTrue(v1.RouteConditionAllTrafficAssigned)
	copied := stale.DeepCopy()
	copied.Status = *desired.DeepCopy()
	if _, err := w.Write(ctx, copied, &copied.Status, desired); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), got); err != nil {
		t.Fatal(err)
	}
	if *patches != 4 || got.Status.GetCondition(v1.RouteConditionAllTrafficAssigned).Status != corev1.ConditionTrue {
		t.Errorf("patches = %d, status = %+v; want the flip back written over %+v", *patches, got.Status, lastWritten)
	}

	// A version another writer made after the one this Writer's last write was
	// computed from, but before that write (a deposed leader wrote in between): the
	// cache showing it is still behind this Writer's write, so a status equal to it
	// is written. The convergence simulation found one lost this way (stale:5039).
	other := got.DeepCopy()
	om := v1.RouteConditions.Manage(&other.Status.Status)
	om.MarkFalse(v1.RouteConditionAllTrafficAssigned, "Other", "another writer's")
	if err := c.Status().Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	m.MarkUnknown(v1.RouteConditionAllTrafficAssigned, "Ours", "")
	if _, err := w.Write(ctx, stale.DeepCopy(), &stale.Status, desired); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(ctx, other.DeepCopy(), &other.Status, other.Status.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), got); err != nil {
		t.Fatal(err)
	}
	if c := got.Status.GetCondition(v1.RouteConditionAllTrafficAssigned); *patches != 6 || c.Reason != "Other" {
		t.Errorf("patches = %d, AllTrafficAssigned = %+v; want the other writer's status written back over ours", *patches, c)
	}

	// A deleted object is not an error, and is forgotten.
	if err := c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	desired.ObservedGeneration = 2
	if _, err := w.Write(ctx, stale.DeepCopy(), &stale.Status, desired); err != nil {
		t.Errorf("write to a deleted object: %v", err)
	}
	w.Forget(client.ObjectKeyFromObject(stored))
	if len(w.last) != 0 {
		t.Errorf("remembers %d objects after Forget", len(w.last))
	}
}

// storedRevision is a Revision created at created, in a fake API server.
func storedRevision(t *testing.T, created time.Time) (*v1.Revision, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	stored := &v1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r", UID: "u1", Generation: 1,
		CreationTimestamp: metav1.NewTime(created)}}
	return stored, fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).WithStatusSubresource(stored).Build()
}

func TestSettle(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stored, c := storedRevision(t, created)
	w := New(c, nil, 2*time.Second)
	now := created.Add(500 * time.Millisecond)
	w.now = func() time.Time { return now }
	ctx := context.Background()

	status := func(ready corev1.ConditionStatus) *v1.RevisionStatus {
		s := &v1.RevisionStatus{}
		s.ObservedGeneration = 1
		m := v1.RevisionConditions.Manage(&s.Status)
		m.InitializeConditions()
		switch ready {
		case corev1.ConditionTrue:
			m.MarkTrue(v1.RevisionConditionResourcesAvailable)
			m.MarkTrue(v1.RevisionConditionContainerHealthy)
		case corev1.ConditionUnknown:
			m.MarkUnknown(v1.RevisionConditionResourcesAvailable, v1.ReasonDeploying, "")
		}
		return s
	}
	stored2 := func() *v1.Revision {
		r := &v1.Revision{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(stored), r); err != nil {
			t.Fatal(err)
		}
		return r
	}

	// On its way, soon after creation: held back, requeued for the end of the wait.
	res, err := w.Write(ctx, stored.DeepCopy(), &stored.Status, status(corev1.ConditionUnknown))
	if err != nil || res.RequeueAfter != 1500*time.Millisecond {
		t.Fatalf("Write = %+v, %v; want a requeue after 1.5s", res, err)
	}
	if stored2().Status.ObservedGeneration != 0 {
		t.Fatal("an in-progress status was written within the settle time")
	}
	// Ready: written at once.
	if res, err := w.Write(ctx, stored.DeepCopy(), &stored.Status, status(corev1.ConditionTrue)); err != nil || res.RequeueAfter != 0 {
		t.Fatalf("Write = %+v, %v", res, err)
	}
	if !stored2().IsReady() {
		t.Fatal("Ready was not written")
	}
	// No longer Ready: written at once.
	ready := stored2()
	if res, err := w.Write(ctx, ready.DeepCopy(), &ready.Status, status(corev1.ConditionUnknown)); err != nil || res.RequeueAfter != 0 {
		t.Fatalf("Write = %+v, %v", res, err)
	}
	if c := stored2().Status.GetCondition(v1.RevisionConditionReady); c.Reason != v1.ReasonDeploying {
		t.Fatalf("Ready = %+v", c)
	}

	// Long after creation, a change on the way is held back for the settle time from
	// when it was first seen, not restarted by the next change ...
	deploying := stored2()
	now = now.Add(10 * time.Second)
	waiting := status(corev1.ConditionUnknown)
	v1.RevisionConditions.Manage(&waiting.Status).MarkUnknown(v1.RevisionConditionResourcesAvailable, "Waiting", "")
	if res, err := w.Write(ctx, deploying.DeepCopy(), &deploying.Status, waiting); err != nil || res.RequeueAfter != 2*time.Second {
		t.Fatalf("Write = %+v, %v; want a requeue after 2s", res, err)
	}
	now = now.Add(time.Second)
	v1.RevisionConditions.Manage(&waiting.Status).MarkUnknown(v1.RevisionConditionResourcesAvailable, "StillWaiting", "")
	if res, err := w.Write(ctx, deploying.DeepCopy(), &deploying.Status, waiting); err != nil || res.RequeueAfter != time.Second {
		t.Fatalf("Write = %+v, %v; want a requeue after 1s", res, err)
	}
	if c := stored2().Status.GetCondition(v1.RevisionConditionReady); c.Reason != v1.ReasonDeploying {
		t.Fatalf("a held-back change was written: Ready = %+v", c)
	}
	// ... and written when it is over, as it is by then.
	now = now.Add(time.Second)
	if res, err := w.Write(ctx, deploying.DeepCopy(), &deploying.Status, waiting); err != nil || res.RequeueAfter != 0 {
		t.Fatalf("Write = %+v, %v", res, err)
	}
	if c := stored2().Status.GetCondition(v1.RevisionConditionReady); c.Reason != "StillWaiting" {
		t.Fatalf("Ready = %+v", c)
	}
	if len(w.held) != 0 {
		t.Errorf("%d held-back changes remembered after the write", len(w.held))
	}
}

// TestProgress: a lasting state on the way to Ready (a rollout's steps) is written at
// once, each change of it too; other reasons are still held back.
func TestProgress(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stored, c := storedRevision(t, created)
	w := New(c, nil, 2*time.Second).Progress("Rolling")
	now := created.Add(500 * time.Millisecond)
	w.now = func() time.Time { return now }
	ctx := context.Background()
	status := func(reason, message string) *v1.RevisionStatus {
		s := &v1.RevisionStatus{}
		s.ObservedGeneration = 1
		m := v1.RevisionConditions.Manage(&s.Status)
		m.InitializeConditions()
		m.MarkUnknown(v1.RevisionConditionResourcesAvailable, reason, "%s", message)
		return s
	}
	written := func() *v1.Revision {
		r := &v1.Revision{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(stored), r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	cached := stored
	for _, step := range []string{"1 %", "21 %"} {
		if res, err := w.Write(ctx, cached.DeepCopy(), &cached.Status, status("Rolling", step)); err != nil || res.RequeueAfter != 0 {
			t.Fatalf("Write(%s) = %+v, %v; want written at once", step, res, err)
		}
		cached = written()
		if c := cached.Status.GetCondition(v1.RevisionConditionReady); c.Message != step {
			t.Fatalf("Ready = %+v, want the step %s", c, step)
		}
	}
	if res, err := w.Write(ctx, cached.DeepCopy(), &cached.Status, status(v1.ReasonDeploying, "")); err != nil || res.RequeueAfter == 0 {
		t.Fatalf("Write(Deploying) = %+v, %v; want held back", res, err)
	}
}

// TestSettleLongerWhileBusy: during a burst a status on its way is held back for the
// longer time, from the object's creation; when the burst is over, the usual settle
// time applies again; a failure is never held back.
func TestSettleLongerWhileBusy(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stored, c := storedRevision(t, created)
	busy := true
	w := New(c, nil, 2*time.Second).SettleLongerWhileBusy(func() bool { return busy }, 30*time.Second)
	now := created.Add(3 * time.Second)
	w.now = func() time.Time { return now }
	ctx := context.Background()
	status := func(ready corev1.ConditionStatus, reason string) *v1.RevisionStatus {
		s := &v1.RevisionStatus{}
		s.ObservedGeneration = 1
		m := v1.RevisionConditions.Manage(&s.Status)
		m.InitializeConditions()
		if ready == corev1.ConditionFalse {
			m.MarkFalse(v1.RevisionConditionResourcesAvailable, reason, "")
		} else {
			m.MarkUnknown(v1.RevisionConditionResourcesAvailable, reason, "")
		}
		return s
	}
	written := func() string {
		r := &v1.Revision{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(stored), r); err != nil {
			t.Fatal(err)
		}
		if c := r.Status.GetCondition(v1.RevisionConditionReady); c != nil {
			return c.Reason
		}
		return ""
	}

	// Busy, 3 s after creation: held until 30 s after creation.
	if res, err := w.Write(ctx, stored.DeepCopy(), &stored.Status, status(corev1.ConditionUnknown, v1.ReasonDeploying)); err != nil || res.RequeueAfter != 27*time.Second {
		t.Fatalf("Write = %+v, %v; want a requeue after 27s", res, err)
	}
	// The burst is over: the usual 2 s from creation have passed, so it is written.
	busy = false
	if res, err := w.Write(ctx, stored.DeepCopy(), &stored.Status, status(corev1.ConditionUnknown, v1.ReasonDeploying)); err != nil || res.RequeueAfter != 0 || written() != v1.ReasonDeploying {
		t.Fatalf("Write = %+v, %v, written %q; want Deploying written at once", res, err, written())
	}
	// Busy again: a failure is written at once all the same.
	busy = true
	now = now.Add(time.Second)
	cached := &v1.Revision{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), cached); err != nil {
		t.Fatal(err)
	}
	if res, err := w.Write(ctx, cached.DeepCopy(), &cached.Status, status(corev1.ConditionFalse, "Failing")); err != nil || res.RequeueAfter != 0 || written() != "Failing" {
		t.Fatalf("Write = %+v, %v, written %q; want Failing written at once", res, err, written())
	}
}

// TestChanges: the Writer's own status write does not wake its reconciler again; a
// status another writer puts over it does.
func TestChanges(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	stored := &v1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r", UID: "u1", Generation: 1}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).WithStatusSubresource(stored).Build()
	w := New(c, nil, 0)
	ctx := context.Background()
	changes := w.Changes()
	update := func(old, new *v1.Route) bool {
		return changes.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: new})
	}

	before := &v1.Route{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), before); err != nil {
		t.Fatal(err)
	}
	desired := before.Status.DeepCopy()
	desired.ObservedGeneration = 1
	obj := before.DeepCopy()
	if _, err := w.Write(ctx, obj, &before.Status, desired); err != nil {
		t.Fatal(err)
	}
	echo := &v1.Route{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), echo); err != nil {
		t.Fatal(err)
	}
	if update(before, echo) {
		t.Error("the Writer's own status write passes")
	}

	// After a relist the informer delivers the echo's version as one update from an
	// older one it had, which may carry a spec change the watch never delivered.
	older := before.DeepCopy()
	older.Generation = 0
	if !update(older, echo) {
		t.Error("the echo of a status write is dropped although it also brings a new generation")
	}

	// Another controller writes an older status over it.
	other := echo.DeepCopy()
	other.Status.ObservedGeneration = 0
	if err := c.Status().Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	if !update(echo, other) {
		t.Error("a status another writer wrote is dropped")
	}
	spec := other.DeepCopy()
	spec.Generation = 2
	spec.ResourceVersion = "999"
	if !update(other, spec) {
		t.Error("a spec change is dropped")
	}
}

// A Ready=False reason named a state (NotFailures) is written without a Warning
// Event; another reason still gets one.
func TestNotFailures(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	stored := &v1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r", UID: "u1", Generation: 1}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).WithStatusSubresource(stored).Build()
	rec := events.NewFakeRecorder(10)
	w := New(c, rec, 0).NotFailures(av1alpha1.ReasonNoTraffic)
	ctx := context.Background()
	for i, reason := range []string{av1alpha1.ReasonNoTraffic, av1alpha1.ReasonTimedOut} {
		got := &v1.Route{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(stored), got); err != nil {
			t.Fatal(err)
		}
		desired := got.Status.DeepCopy()
		desired.ObservedGeneration = 1
		m := v1.RouteConditions.Manage(&desired.Status)
		m.InitializeConditions()
		m.MarkFalse(v1.RouteConditionAllTrafficAssigned, reason, "%s", reason)
		if _, err := w.Write(ctx, got, &got.Status, desired); err != nil {
			t.Fatal(err)
		}
		if len(rec.Events) != i {
			t.Errorf("after Ready=False %s: %d events, want %d", reason, len(rec.Events), i)
		}
	}
}

// TestBehind: after a write, a copy of the object older than the write is behind; the
// written version, or a later one, is not.
func TestBehind(t *testing.T) {
	stored, c := storedRevision(t, time.Now())
	ctx := context.Background()
	stale := &v1.Revision{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), stale); err != nil {
		t.Fatal(err)
	}
	w := New(c, nil, 0)
	if w.Behind(stale) {
		t.Fatal("behind before any write")
	}
	written := stale.DeepCopy()
	desired := stale.Status.DeepCopy()
	desired.ObservedGeneration = 1
	v1.RevisionConditions.Manage(&desired.Status).InitializeConditions()
	if _, err := w.Write(ctx, written, &stale.Status, desired); err != nil {
		t.Fatal(err)
	}
	if !w.Behind(stale) {
		t.Error("the copy read before the write is not behind")
	}
	if w.Behind(written) {
		t.Error("the written version is behind")
	}
}

// TestTransitionTimes: a condition's time is when readers saw its status change. One
// that flipped and flipped back within a reconcile is not written for its time alone,
// and a real transition takes the Writer's clock, not the moment it was marked.
func TestTransitionTimes(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	seen := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stored := &v1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r", UID: "u1", Generation: 1}}
	stored.Status.ObservedGeneration = 1
	sm := v1.RouteConditions.Manage(&stored.Status.Status).WithClock(func() time.Time { return seen })
	sm.InitializeConditions()
	sm.MarkTrue(v1.RouteConditionAllTrafficAssigned)
	sm.MarkTrue(v1.RouteConditionIngressReady)
	sm.MarkTrue(v1.RouteConditionCertificateProvisioned)
	c, patches := patchCounting(scheme, stored)
	writes := seen.Add(time.Hour)
	w := New(c, nil, 0).WithClock(clocktesting.NewFakePassiveClock(writes))
	ctx := context.Background()

	marked := seen.Add(time.Minute)
	desired := stored.Status.DeepCopy()
	m := v1.RouteConditions.Manage(&desired.Status).WithClock(func() time.Time { return marked })
	m.MarkUnknown(v1.RouteConditionIngressReady, "Flapping", "")
	m.MarkTrue(v1.RouteConditionIngressReady)
	if _, err := w.Write(ctx, stored.DeepCopy(), &stored.Status, desired); err != nil {
		t.Fatal(err)
	}
	if *patches != 0 {
		t.Fatalf("%d patches for a status that only flipped and flipped back, want 0", *patches)
	}

	m.MarkFalse(v1.RouteConditionIngressReady, "Broken", "no")
	if _, err := w.Write(ctx, stored.DeepCopy(), &stored.Status, desired); err != nil {
		t.Fatal(err)
	}
	got := &v1.Route{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), got); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cond duck.ConditionType
		want time.Time
	}{
		{v1.RouteConditionIngressReady, writes},
		{v1.RouteConditionReady, writes},
		{v1.RouteConditionAllTrafficAssigned, seen},
	} {
		if at := got.Status.GetCondition(tc.cond).LastTransitionTime.Time; !at.Equal(tc.want) {
			t.Errorf("%s changed at %v, want %v", tc.cond, at, tc.want)
		}
	}
}

// patchCounting is a fake API server holding stored, and the count of the status
// patches it has taken.
func patchCounting(scheme *runtime.Scheme, stored client.Object) (client.Client, *int) {
	patches := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).WithStatusSubresource(stored).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			patches++
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		}}).Build()
	return c, &patches
}
