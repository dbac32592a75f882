package statuswriter

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

func TestWrite(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	stored := &v1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r", UID: "u1", Generation: 1}}
	patches := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).WithStatusSubresource(stored).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			patches++
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		}}).Build()
	rec := events.NewFakeRecorder(10)
	w := New(c, rec)
	ctx := context.Background()

	stale := stored.DeepCopy() // what a cache that never catches up would show
	desired := stale.Status.DeepCopy()
	desired.ObservedGeneration = 1
	m := v1.RouteConditions.Manage(&desired.Status)
	m.InitializeConditions()
	m.MarkFalse(v1.RouteConditionAllTrafficAssigned, "RevisionMissing", "gone")

	if err := w.Write(ctx, stale.DeepCopy(), &stale.Status, desired); err != nil {
		t.Fatal(err)
	}
	got := &v1.Route{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.ObservedGeneration != 1 || got.Status.GetCondition(v1.RouteConditionReady).Reason != "RevisionMissing" {
		t.Fatalf("status = %+v", got.Status)
	}
	if len(rec.Events) != 1 {
		t.Errorf("%d events, want 1", len(rec.Events))
	}

	// The cache still shows the old status: the same status is not written again.
	if err := w.Write(ctx, stale.DeepCopy(), &stale.Status, desired); err != nil {
		t.Fatal(err)
	}
	// Nor when the cache has caught up.
	if err := w.Write(ctx, got.DeepCopy(), &got.Status, desired); err != nil {
		t.Fatal(err)
	}
	if patches != 1 {
		t.Errorf("%d patches, want 1", patches)
	}

	// A new status is written, over whatever the stale copy says.
	m.MarkTrue(v1.RouteConditionAllTrafficAssigned)
	if err := w.Write(ctx, stale.DeepCopy(), &stale.Status, desired); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(stored), got); err != nil {
		t.Fatal(err)
	}
	if patches != 2 || got.Status.GetCondition(v1.RouteConditionAllTrafficAssigned).Status != corev1.ConditionTrue {
		t.Errorf("patches = %d, status = %+v", patches, got.Status)
	}

	// A deleted object is not an error, and is forgotten.
	if err := c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	desired.ObservedGeneration = 2
	if err := w.Write(ctx, stale.DeepCopy(), &stale.Status, desired); err != nil {
		t.Errorf("write to a deleted object: %v", err)
	}
	w.Forget(client.ObjectKeyFromObject(stored))
	if len(w.last) != 0 {
		t.Errorf("remembers %d objects after Forget", len(w.last))
	}
}
