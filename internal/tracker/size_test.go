package tracker

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSizeCountsObserversAndDistinctReferences(t *testing.T) {
	tr := New(nil, 0)
	if got := tr.Size(); got != (Size{}) {
		t.Fatalf("empty tracker: Size() = %+v, want zero", got)
	}
	a, b := nn("ns", "a"), nn("ns", "b")
	mustTrack(t, tr, exactRef("ns", "config"), a)
	mustTrack(t, tr, exactRef("ns", "config"), b) // same object: one reference
	mustTrack(t, tr, exactRef("ns", "other"), b)
	mustTrack(t, tr, selectorRef("ns", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}), a)
	if got, want := tr.Size(), (Size{Observers: 2, References: 3}); got != want {
		t.Fatalf("Size() = %+v, want %+v", got, want)
	}
	tr.OnDeletedObserver(a)
	tr.OnDeletedObserver(b)
	if got := tr.Size(); got != (Size{}) {
		t.Fatalf("after every observer was deleted: Size() = %+v, want zero", got)
	}
}
