package created

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

	if err := c.Get(ctx, key, &corev1.Service{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Get before Create = %v", err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Spec: corev1.ServiceSpec{ExternalName: "x"}}
	if err := c.Create(ctx, apiServer, svc); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Service{}
	if err := c.Get(ctx, key, got); err != nil || got.Spec.ExternalName != "x" {
		t.Fatalf("Get after Create = %+v, %v", got, err)
	}
	if err := c.Get(ctx, key, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("another kind of the same name: %v", err)
	}

	// Once the cache shows it, the copy is dropped.
	seen := svc.DeepCopy()
	seen.ResourceVersion = ""
	if err := cache.Create(ctx, seen); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, got); err != nil || len(c.pending) != 0 {
		t.Fatalf("Get = %v, %d pending", err, len(c.pending))
	}

	// A child the cache never shows is forgotten after a while.
	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "t"}}
	if err := c.Create(ctx, apiServer, other); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * forgetAfter)
	if err := c.Get(ctx, client.ObjectKeyFromObject(other), got); !apierrors.IsNotFound(err) {
		t.Fatalf("Get long after = %v", err)
	}
}
