package tracker

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestReaderNeedsSchemeForTypedObjects(t *testing.T) {
	tr := New(nil, 0) // no scheme
	inf := newFakeInformer()
	rd := tr.Reader(nn("ns", "route"), inf)
	err := rd.Get(context.Background(), nn("ns", "config"), &corev1.ConfigMap{})
	if err == nil || !strings.Contains(err.Error(), "scheme") {
		t.Fatalf("Get of a typed object without a scheme = %v, want an error naming the scheme", err)
	}
	if s := tr.sizes(); s != (sizes{}) {
		t.Fatalf("a failed Get tracked something: %+v", s)
	}
}

// unstructuredReader serves one unstructured object, as a dynamic or
// metadata client would.
type unstructuredReader struct{}

func (unstructuredReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	u := obj.(*unstructured.Unstructured)
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	return nil
}

func (unstructuredReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return nil
}

func TestReaderUsesTypeMetaOfUnstructured(t *testing.T) {
	rec := &recorder{}
	tr := New(rec.enqueue, 0) // no scheme needed: unstructured objects say what they are
	route := nn("ns", "route")
	rd := tr.Reader(route, unstructuredReader{})
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("serving.knative.dev/v1")
	u.SetKind("Configuration")
	if err := rd.Get(context.Background(), nn("ns", "c"), u); err != nil {
		t.Fatal(err)
	}
	rd.Commit()
	rec.take()
	tr.OnChanged(u)
	if got := rec.take(); !slices.Equal(got, []types.NamespacedName{route}) {
		t.Fatalf("OnChanged(configuration) enqueued %v, want [%v]", got, route)
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("serving.knative.dev/v1")
	list.SetKind("RevisionList")
	if err := rd.List(context.Background(), list, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	rev := &unstructured.Unstructured{}
	rev.SetAPIVersion("serving.knative.dev/v1")
	rev.SetKind("Revision")
	rev.SetNamespace("ns")
	rev.SetName("c-00001")
	if got := tr.GetObservers(rev); !slices.Equal(got, []types.NamespacedName{route}) {
		t.Fatalf("after listing Revisions, GetObservers(revision) = %v, want [%v]", got, route)
	}
}

func TestReaderListTracksScope(t *testing.T) {
	ctx := context.Background()
	tr := New(nil, 0).SetScheme(testScheme())
	inf := newFakeInformer()
	inNS, allNS, selected := nn("ns", "in-ns"), nn("ns", "all-ns"), nn("ns", "selected")

	rd := tr.Reader(inNS, inf)
	if err := rd.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	rd = tr.Reader(allNS, inf)
	if err := rd.List(ctx, &corev1.ConfigMapList{}); err != nil {
		t.Fatal(err)
	}
	rd = tr.Reader(selected, inf)
	if err := rd.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("ns"), client.MatchingLabels{"app": "a"}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		obj  *corev1.ConfigMap
		want []types.NamespacedName
	}{
		{configMap("ns", "x", map[string]string{"app": "a"}), []types.NamespacedName{allNS, inNS, selected}},
		{configMap("ns", "x", nil), []types.NamespacedName{allNS, inNS}},
		{configMap("other", "x", map[string]string{"app": "a"}), []types.NamespacedName{allNS}},
	} {
		if got := tr.GetObservers(tc.obj); !slices.Equal(got, tc.want) {
			t.Errorf("GetObservers(%s/%s %v) = %v, want %v", tc.obj.Namespace, tc.obj.Name, tc.obj.Labels, got, tc.want)
		}
	}
	if got := tr.GetObservers(&corev1.Secret{}); len(got) != 0 {
		t.Errorf("listing ConfigMaps made Secrets observed: %v", got)
	}
}

func TestReaderCommitReplacesReferences(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	tr := New(rec.enqueue, 0).SetScheme(testScheme())
	inf := newFakeInformer()
	route := nn("ns", "route")
	get := func(rd *TrackingReader, name string) {
		t.Helper()
		_ = rd.Get(ctx, nn("ns", name), &corev1.ConfigMap{}) // missing objects are fine
	}

	// Reconcile 1 reads a, b and lists app=x.
	rd := tr.Reader(route, inf)
	get(rd, "a")
	get(rd, "b")
	if err := rd.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("ns"), client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(labels.Set{"app": "x"})}); err != nil {
		t.Fatal(err)
	}
	rd.Commit()
	if got := rec.take(); len(got) == 0 {
		t.Fatal("new references did not enqueue the observer")
	}

	// Reconcile 2 reads b again and c, and declares d without reading it.
	rd = tr.Reader(route, inf)
	get(rd, "b")
	get(rd, "c")
	if err := rd.Track(exactRef("ns", "d")); err != nil {
		t.Fatal(err)
	}
	rd.Commit()
	rd.Commit() // idempotent

	for name, want := range map[string]bool{"a": false, "b": true, "c": true, "d": true} {
		got := tr.GetObservers(configMap("ns", name, nil))
		if want != slices.Equal(got, []types.NamespacedName{route}) {
			t.Errorf("after the second commit, observers of %s = %v, want tracked=%v", name, got, want)
		}
	}
	if got := tr.GetObservers(configMap("ns", "other", map[string]string{"app": "x"})); len(got) != 0 {
		t.Errorf("the list read only in reconcile 1 still wakes: %v", got)
	}
	if s, want := tr.sizes(), (sizes{exactKeys: 3, observers: 1, forwardPairs: 3, reversePairs: 3}); s != want {
		t.Errorf("sizes = %+v, want %+v", s, want)
	}

	// A reconcile that reads nothing and commits depends on nothing.
	tr.Reader(route, inf).Commit()
	if s := tr.sizes(); s != (sizes{}) {
		t.Errorf("an empty commit left %+v", s)
	}
}

func TestReaderTrackRejectsInvalidReference(t *testing.T) {
	rd := New(nil, 0).Reader(nn("ns", "route"), newFakeInformer())
	if err := rd.Track(Reference{Kind: "ConfigMap", Name: "x"}); err == nil {
		t.Fatal("TrackingReader.Track accepted a reference without APIVersion")
	}
}
