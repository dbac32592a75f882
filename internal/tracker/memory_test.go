package tracker

import (
	"fmt"
	"runtime"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// populate makes n observers each track three objects and a selector, the
// shape of a Route: its Configurations, its Revisions by label.
func populate(t testing.TB, tr *Tracker, n int) []types.NamespacedName {
	observers := make([]types.NamespacedName, n)
	for i := range observers {
		ns := fmt.Sprintf("ns%d", i%100)
		o := nn(ns, fmt.Sprintf("route%d", i))
		observers[i] = o
		for j := range 3 {
			mustTrack(t, tr, exactRef(ns, fmt.Sprintf("config%d-%d", i, j)), o)
		}
		mustTrack(t, tr, selectorRef(ns, &metav1.LabelSelector{MatchLabels: map[string]string{"route": o.Name}}), o)
	}
	return observers
}

// TestDeletedObserversLeaveNothingBehind: after OnDeletedObserver of every
// observer, the maps are empty and the heap is back where it started.
func TestDeletedObserversLeaveNothingBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a few tens of megabytes")
	}
	const n = 20000
	tr := New(nil, 0)
	mustTrack(t, tr, exactRef("warm", "up"), nn("warm", "up"))
	tr.OnDeletedObserver(nn("warm", "up"))
	before := heapInUse()

	observers := populate(t, tr, n)
	full := heapInUse()
	for _, o := range observers {
		tr.OnDeletedObserver(o)
	}
	observers = nil
	after := heapInUse()
	runtime.KeepAlive(tr)

	if s := tr.sizes(); s != (sizes{}) {
		t.Fatalf("deleted observers left %+v", s)
	}
	grown := int64(full) - int64(before)
	left := int64(after) - int64(before)
	t.Logf("heap: %d B before, +%d B with %d observers (4 references each), %+d B after deleting them", before, grown, n, left)
	if grown <= 0 || left > grown/20 {
		t.Fatalf("deleting every observer left %d of %d bytes on the heap", left, grown)
	}
}

// TestCommitShrinksMaps: observers dropping their references through
// Commit give memory back as well.
func TestCommitShrinksMaps(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a few tens of megabytes")
	}
	const n = 20000
	tr := New(nil, 0)
	before := heapInUse()
	observers := populate(t, tr, n)
	for _, o := range observers {
		tr.Reader(o, nil).Commit() // a reconcile that read nothing
	}
	observers = nil
	after := heapInUse()
	runtime.KeepAlive(tr)
	if s := tr.sizes(); s != (sizes{}) {
		t.Fatalf("empty commits left %+v", s)
	}
	if left := int64(after) - int64(before); left > 1<<20 {
		t.Fatalf("empty commits left %d bytes on the heap", left)
	}
}
