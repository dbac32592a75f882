package created

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestChildren(t *testing.T) {
	ctx := context.Background()
	apiServer := fake.NewClientBuilder().Build()
	cache := fake.NewClientBuilder().Build() // a cache that has not seen anything yet
	c := New(cache)
	now := time.Now()
	c.now = func() time.Time { return now }
	key := client.ObjectKey{Namespace: "ns", Name: "s"}
	const owner = types.UID("owner-1")
	ownedBy := func(uid types.UID) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: uid, Controller: ptr.To(true)}}
	}

	if err := c.Get(ctx, key, &corev1.Service{}, owner); !apierrors.IsNotFound(err) {
		t.Fatalf("Get before Create = %v", err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", OwnerReferences: ownedBy(owner)}, Spec: corev1.ServiceSpec{ExternalName: "x"}}
	if err := c.Create(ctx, apiServer, svc); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Service{}
	if err := c.Get(ctx, key, got, owner); err != nil || got.Spec.ExternalName != "x" {
		t.Fatalf("Get after Create = %+v, %v", got, err)
	}
	if err := c.Get(ctx, key, &corev1.ConfigMap{}, owner); !apierrors.IsNotFound(err) {
		t.Fatalf("another kind of the same name: %v", err)
	}

	// Once the cache shows it, the copy is dropped.
	seen := svc.DeepCopy()
	seen.ResourceVersion = ""
	if err := cache.Create(ctx, seen); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, got, owner); err != nil || len(c.pending) != 0 {
		t.Fatalf("Get = %v, %d pending", err, len(c.pending))
	}

	// A child the cache never shows is forgotten after a while.
	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "t", OwnerReferences: ownedBy(owner)}}
	if err := c.Create(ctx, apiServer, other); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * forgetAfter)
	if err := c.Get(ctx, client.ObjectKeyFromObject(other), got, owner); !apierrors.IsNotFound(err) {
		t.Fatalf("Get long after = %v", err)
	}

	// A copy made for an owner deleted and created again under the same name is
	// not the new owner's: the convergence simulation found the new Service stuck
	// NotOwned when the copy was taken for its own.
	again := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "u", OwnerReferences: ownedBy(owner)}}
	if err := c.Create(ctx, apiServer, again); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(again), got, "owner-2"); !apierrors.IsNotFound(err) {
		t.Fatalf("Get for the owner's successor = %v, want NotFound", err)
	}
	if len(c.pending) != 0 {
		t.Fatalf("%d pending: the predecessor's copy is kept", len(c.pending))
	}
}

// An update's result is read until the cache shows that version or a later one: a
// reconcile right after the update must not decide from the child as it was before.
func TestChildrenAfterUpdate(t *testing.T) {
	ctx := context.Background()
	apiServer := fake.NewClientBuilder().Build()
	c := New(apiServer) // the cache, frozen at the version below
	now := time.Now()
	c.now = func() time.Time { return now }
	key := client.ObjectKey{Namespace: "ns", Name: "s"}
	const owner = types.UID("owner-1")
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "child-1"}, Spec: corev1.ServiceSpec{ExternalName: "old"}}
	if err := apiServer.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	before := svc.DeepCopy()

	svc.Spec.ExternalName = "new"
	if err := c.Update(ctx, apiServer, svc); err != nil {
		t.Fatal(err)
	}
	written := svc.ResourceVersion
	// The cache goes back to the version before the update.
	c.cache = fake.NewClientBuilder().WithObjects(before).Build()
	got := &corev1.Service{}
	if err := c.Get(ctx, key, got, owner); err != nil || got.Spec.ExternalName != "new" || got.ResourceVersion != written {
		t.Fatalf("Get with the cache behind the update = %q at %s, %v; want the update's result, new at %s", got.Spec.ExternalName, got.ResourceVersion, err, written)
	}

	// Once the cache shows the update (or anything later), the cache is read.
	c.cache = apiServer
	if err := c.Get(ctx, key, got, owner); err != nil || got.Spec.ExternalName != "new" || len(c.pending) != 0 {
		t.Fatalf("Get with the cache caught up = %q, %v, %d pending", got.Spec.ExternalName, err, len(c.pending))
	}

	// A child deleted and created again under the same name is not the one updated.
	svc.Spec.ExternalName = "newer"
	if err := c.Update(ctx, apiServer, svc); err != nil {
		t.Fatal(err)
	}
	again := before.DeepCopy()
	again.UID = "child-2"
	c.cache = fake.NewClientBuilder().WithObjects(again).Build()
	if err := c.Get(ctx, key, got, owner); err != nil || got.UID != "child-2" || len(c.pending) != 0 {
		t.Fatalf("Get of a new child of the same name = %s, %v, %d pending", got.UID, err, len(c.pending))
	}

	// Gone from the cache: the cache says so, and the copy is dropped.
	if err := c.Update(ctx, apiServer, svc); err != nil {
		t.Fatal(err)
	}
	c.cache = fake.NewClientBuilder().Build()
	if err := c.Get(ctx, key, got, owner); !apierrors.IsNotFound(err) || len(c.pending) != 0 {
		t.Fatalf("Get of a child gone from the cache = %v, %d pending", err, len(c.pending))
	}
}
