package tracker

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// These tests replay knative/serving#2954: a Route reads its Configuration,
// the Configuration is updated, and the Route starts tracking it only after
// the update's event was handled.

// seedInterleaving runs that exact order against tr and reports whether the
// route ended up enqueued after the update. rec must be tr's enqueue.
func seedInterleaving(t *testing.T, tr *Tracker, rec *recorder) (enqueued bool) {
	t.Helper()
	inf := newFakeInformer(tr.InformerHandler())
	inf.update(configMap("ns", "config", nil))
	route := nn("ns", "route")

	// 1. The reconcile reads the old Configuration.
	var seen corev1.ConfigMap
	if err := inf.Get(context.Background(), nn("ns", "config"), &seen); err != nil {
		t.Fatal(err)
	}
	rec.take()
	// 2. The update lands: store, then handlers, which find no observer.
	inf.update(configMap("ns", "config", map[string]string{"ready": "true"}))
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("the update found observers %v before anyone tracked", got)
	}
	// 3. Only now does the reconcile track what it read.
	mustTrack(t, tr, exactRef("ns", "config"), route)
	got := rec.take()
	if seen.Labels["ready"] == "true" {
		t.Fatal("test setup: the reconcile should have read the old object")
	}
	return slices.Contains(got, route)
}

func TestSeedInterleavingTrackEnqueuesNewReference(t *testing.T) {
	rec := &recorder{}
	tr := New(rec.enqueue, 0).SetScheme(testScheme())
	if !seedInterleaving(t, tr, rec) {
		t.Fatal("Track of a new reference did not enqueue the observer: the update is lost")
	}
}

func TestSeedInterleavingLosesUpdateWithoutTheGuard(t *testing.T) {
	rec := &recorder{}
	tr := New(rec.enqueue, 0).SetScheme(testScheme())
	tr.requeueNewRefs = false // a naive tracker, as Knative's was before knative/pkg#245
	if seedInterleaving(t, tr, rec) {
		t.Fatal("a tracker without the immediate requeue enqueued the observer; this test cannot tell the guard works")
	}
}

// step is one point of an update: its store write or its handler call.
type step int

const (
	write step = iota
	dispatch
)

// Positions of an update's write and dispatch around one read.
const (
	beforeAll     = iota // before the reconcile reads
	beforeRead           // inside the read, before the store is read
	afterRead            // inside the read, after the store is read
	afterAll             // after the read and its Track
	positionCount        // how many there are
)

// readInterleavings returns every placement of an update's write and its
// dispatch (never before the write) among the positions.
func readInterleavings() [][2]int {
	var out [][2]int
	for w := range positionCount {
		for d := w; d < positionCount; d++ {
			out = append(out, [2]int{w, d})
		}
	}
	return out
}

// readOutcome runs one interleaving. trackFirst reads through a
// TrackingReader; otherwise the reconcile reads the cache, then calls Track.
// It reports whether the observer read the new version or was enqueued
// after the update was written; either way nothing is lost.
func readOutcome(t *testing.T, guard, trackFirst bool, at [2]int) (bool, string) {
	rec := &recorder{}
	tr := New(rec.enqueue, 0).SetScheme(testScheme())
	tr.requeueNewRefs = guard
	inf := newFakeInformer(tr.InformerHandler())
	inf.update(configMap("ns", "config", nil))
	route := nn("ns", "route")
	updated := configMap("ns", "config", map[string]string{"ready": "true"})

	enqueuedAfterWrite := false
	written := false
	stepsAt := func(pos int) {
		if at[0] == pos {
			inf.write(updated)
			written = true
			rec.take() // whatever was enqueued before the write does not count
		}
		if at[1] == pos {
			inf.deliver()
		}
		if written && len(rec.take()) > 0 {
			enqueuedAfterWrite = true
		}
	}

	var seen corev1.ConfigMap
	ctx := context.Background()
	stepsAt(beforeAll)
	inf.beforeRead = func() { stepsAt(beforeRead) }
	inf.afterRead = func() { stepsAt(afterRead) }
	if trackFirst {
		rd := tr.Reader(route, inf)
		if err := rd.Get(ctx, nn("ns", "config"), &seen); err != nil {
			t.Fatal(err)
		}
		rd.Commit()
	} else {
		if err := inf.Get(ctx, nn("ns", "config"), &seen); err != nil {
			t.Fatal(err)
		}
		mustTrack(t, tr, exactRef("ns", "config"), route)
	}
	inf.beforeRead, inf.afterRead = nil, nil
	stepsAt(afterAll)

	order := fmt.Sprintf("write at %d, dispatch at %d", at[0], at[1])
	return seen.Labels["ready"] == "true" || enqueuedAfterWrite, order
}

func TestReaderCannotLoseUpdateInAnyOrder(t *testing.T) {
	for _, guard := range []bool{false, true} {
		for _, at := range readInterleavings() {
			if ok, order := readOutcome(t, guard, true, at); !ok {
				t.Errorf("guard=%v, track then read, %s: update lost", guard, order)
			}
		}
	}
}

func TestReadThenTrackNeedsTheGuard(t *testing.T) {
	lost := 0
	for _, at := range readInterleavings() {
		if ok, order := readOutcome(t, true, false, at); !ok {
			t.Errorf("guard on, read then track, %s: update lost", order)
		}
		if ok, _ := readOutcome(t, false, false, at); !ok {
			lost++
		}
	}
	if lost == 0 {
		t.Fatal("reading before tracking without the guard never lost an update; these interleavings miss the bug")
	}
}

// TestReaderTracksMissingObjects: a Get that finds nothing still registers,
// so the object's creation wakes the observer.
func TestReaderTracksMissingObjects(t *testing.T) {
	rec := &recorder{}
	tr := New(rec.enqueue, 0).SetScheme(testScheme())
	tr.requeueNewRefs = false
	inf := newFakeInformer(tr.InformerHandler())
	route := nn("ns", "route")
	rd := tr.Reader(route, inf)
	if err := rd.Get(context.Background(), nn("ns", "later"), &corev1.ConfigMap{}); err == nil {
		t.Fatal("Get of a missing object succeeded")
	}
	rd.Commit()
	inf.update(configMap("ns", "later", nil))
	if got := rec.take(); !slices.Equal(got, []types.NamespacedName{route}) {
		t.Fatalf("creating the missing object enqueued %v, want [%v]", got, route)
	}
}
