package explain

import (
	"context"
	"testing"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestSnapshot: Get and List see a list's objects by namespace, name and label, a
// kind not given is NotFound and empty, and Add does not replace a listed object.
func TestSnapshot(t *testing.T) {
	ctx := context.Background()
	svc := func(ns, name, image string) v1.Service {
		s := v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"run": ns}}}
		s.Spec.Template.Spec.Containers = []corev1.Container{{Image: image}}
		return s
	}
	s := &Snapshot{}
	if err := s.AddList(&v1.ServiceList{Items: []v1.Service{svc("a", "x", "listed"), svc("b", "x", "listed")}}); err != nil {
		t.Fatal(err)
	}
	added := svc("a", "x", "added")
	s.Add(&added)
	other := svc("c", "y", "added")
	s.Add(&other)

	got := &v1.Service{}
	if err := s.Get(ctx, client.ObjectKey{Namespace: "a", Name: "x"}, got); err != nil || got.Spec.Template.Spec.Containers[0].Image != "listed" {
		t.Errorf("Get a/x = %v, %v; want the listed copy", got.Spec.Template.Spec.Containers, err)
	}
	if err := s.Get(ctx, client.ObjectKey{Namespace: "c", Name: "y"}, got); err != nil || got.Namespace != "c" {
		t.Errorf("Get c/y = %v, %v; want the added one", got.ObjectMeta, err)
	}
	if err := s.Get(ctx, client.ObjectKey{Namespace: "a", Name: "z"}, got); !apierrors.IsNotFound(err) {
		t.Errorf("Get a/z: %v, want NotFound", err)
	}
	if err := s.Get(ctx, client.ObjectKey{Namespace: "a", Name: "x"}, &v1.Route{}); !apierrors.IsNotFound(err) {
		t.Errorf("Get of a kind not given: %v, want NotFound", err)
	}

	l := &v1.ServiceList{}
	if err := s.List(ctx, l, client.InNamespace("b")); err != nil || len(l.Items) != 1 || l.Items[0].Namespace != "b" {
		t.Errorf("List in b = %v, %v", l.Items, err)
	}
	if err := s.List(ctx, l, client.MatchingLabels{"run": "a"}); err != nil || len(l.Items) != 1 || l.Items[0].Namespace != "a" {
		t.Errorf("List run=a = %v, %v", l.Items, err)
	}
	if err := s.List(ctx, l); err != nil || len(l.Items) != 2 {
		t.Errorf("List all = %d items, %v; want the 2 listed", len(l.Items), err)
	}
	evs := &corev1.EventList{}
	if err := s.List(ctx, evs, client.MatchingFields{"involvedObject.name": "x"}); err != nil || len(evs.Items) != 0 {
		t.Errorf("List of a kind not given = %v, %v", evs.Items, err)
	}
}
