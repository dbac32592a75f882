package statuswriter

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// TestOnReady: each generation's becoming Ready is observed once, from when the watch
// brought it, or from creationTimestamp for a creation the Writer did not see.
func TestOnReady(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stored := &v1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r", UID: "u1", Generation: 1,
		CreationTimestamp: metav1.NewTime(created)}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).WithStatusSubresource(stored).Build()
	ctx := context.Background()
	now := created
	var observed []time.Duration
	newWriter := func() *Writer {
		w := New(c, nil, 0).OnReady(func(d time.Duration) { observed = append(observed, d) })
		w.now = func() time.Time { return now }
		return w
	}
	current := func() *v1.Route {
		r := &v1.Route{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(stored), r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	status := func(generation int64, ready bool, url string) *v1.RouteStatus {
		s := &v1.RouteStatus{}
		s.ObservedGeneration = generation
		m := v1.RouteConditions.Manage(&s.Status)
		m.InitializeConditions()
		if ready {
			m.MarkTrue(v1.RouteConditionAllTrafficAssigned)
			m.MarkTrue(v1.RouteConditionIngressReady)
			m.MarkTrue(v1.RouteConditionCertificateProvisioned)
		}
		if url != "" {
			s.URL = url
		}
		return s
	}
	write := func(w *Writer, obj *v1.Route, desired *v1.RouteStatus) {
		t.Helper()
		if _, err := w.Write(ctx, obj, &obj.Status, desired); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(step string, want ...time.Duration) {
		t.Helper()
		if !slices.Equal(observed, want) {
			t.Fatalf("%s: observed %v, want %v", step, observed, want)
		}
		observed = nil
	}

	w := newWriter()
	// The creation arrives 300ms into the second creationTimestamp names.
	now = created.Add(300 * time.Millisecond)
	w.Changes().Create(event.CreateEvent{Object: stored.DeepCopy()})
	now = created.Add(800 * time.Millisecond)
	write(w, current(), status(1, false, ""))
	expect("on its way")
	now = created.Add(1300 * time.Millisecond)
	write(w, current(), status(1, true, ""))
	expect("Ready", time.Second)
	now = created.Add(2 * time.Second)
	write(w, current(), status(1, true, "http://r.ns.example.com"))
	expect("another Ready status of the same generation")

	// A spec change: generation 2 arrives, and its Ready is measured from then, though
	// the object was Ready all along.
	now = created.Add(10 * time.Second)
	old := current()
	changed := old.DeepCopy()
	changed.Generation = 2
	w.Changes().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: changed})
	now = created.Add(10*time.Second + 250*time.Millisecond)
	write(w, changed, status(2, true, "http://r.ns.example.com"))
	expect("generation 2 Ready", 250*time.Millisecond)

	// A restarted controller knows no arrivals. A Ready status it rewrites is not a
	// becoming Ready; a generation it did not see arrive is not measured.
	w = newWriter()
	now = created.Add(time.Minute)
	write(w, current(), status(2, true, "http://other.example.com"))
	expect("rewrite after a restart")
	gen3 := current()
	gen3.Generation = 3
	write(w, gen3, status(3, false, ""))
	write(w, gen3, status(3, true, ""))
	expect("generation 3, arrived before the restart")

	// A first generation created while nobody watched counts from creationTimestamp.
	second := &v1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r2", UID: "u2", Generation: 1,
		CreationTimestamp: metav1.NewTime(created)}}
	if err := c.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	w = newWriter()
	w.Changes().Create(event.CreateEvent{Object: second.DeepCopy()}) // the relist, a minute late
	write(w, second, status(1, true, ""))
	expect("created while nobody watched", time.Minute)
}
