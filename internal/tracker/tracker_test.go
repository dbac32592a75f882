package tracker

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestTrackRejectsInvalidReferences(t *testing.T) {
	tr := New(nil, 0)
	o := nn("ns", "route")
	for name, ref := range map[string]Reference{
		"no kind":           {APIVersion: "v1", Namespace: "ns", Name: "x"},
		"no apiVersion":     {Kind: "ConfigMap", Namespace: "ns", Name: "x"},
		"bad apiVersion":    {APIVersion: "a/b/c", Kind: "ConfigMap", Name: "x"},
		"name and selector": {APIVersion: "v1", Kind: "ConfigMap", Name: "x", Selector: &metav1.LabelSelector{}},
		"neither":           {APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns"},
		"bad selector": selectorRef("ns", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: "Resembles", Values: []string{"x"}},
		}}),
	} {
		if err := tr.Track(ref, o); err == nil {
			t.Errorf("%s: Track(%+v) = nil, want an error", name, ref)
		}
	}
	if s := tr.sizes(); s != (sizes{}) {
		t.Errorf("invalid references left state behind: %+v", s)
	}
}

func TestTrackEnqueuesOnlyNewReferences(t *testing.T) {
	rec := &recorder{}
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	tr := New(rec.enqueue, time.Hour).SetClock(clk).SetScheme(testScheme())
	route := nn("ns", "route")

	mustTrack(t, tr, exactRef("ns", "config"), route)
	if got := rec.take(); !slices.Equal(got, []types.NamespacedName{route}) {
		t.Fatalf("first Track enqueued %v, want [%v]", got, route)
	}
	clk.SetTime(clk.Now().Add(59 * time.Minute))
	mustTrack(t, tr, exactRef("ns", "config"), route)
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("re-tracking a live reference enqueued %v", got)
	}
	// The re-track renewed the lease: 59 more minutes are still within it.
	clk.SetTime(clk.Now().Add(59 * time.Minute))
	if got := tr.GetObservers(configMap("ns", "config", nil)); !slices.Equal(got, []types.NamespacedName{route}) {
		t.Fatalf("GetObservers within the renewed lease = %v, want [%v]", got, route)
	}
	mustTrack(t, tr, exactRef("ns", "other"), route)
	if got := rec.take(); !slices.Equal(got, []types.NamespacedName{route}) {
		t.Fatalf("tracking a second reference enqueued %v, want [%v]", got, route)
	}
}

func TestLeaseExpiry(t *testing.T) {
	rec := &recorder{}
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	tr := New(rec.enqueue, time.Hour).SetClock(clk).SetScheme(testScheme())
	cm := configMap("ns", "config", map[string]string{"app": "a"})
	mustTrack(t, tr, exactRef("ns", "config"), nn("ns", "r1"))
	mustTrack(t, tr, selectorRef("ns", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}), nn("ns", "r2"))
	rec.take()

	clk.SetTime(clk.Now().Add(time.Hour))
	if got := tr.GetObservers(cm); len(got) != 0 {
		t.Fatalf("expired leases still observed: %v", got)
	}
	tr.OnChanged(cm)
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("OnChanged woke expired observers %v", got)
	}

	// Re-tracking an expired reference is tracking anew: it enqueues.
	mustTrack(t, tr, exactRef("ns", "config"), nn("ns", "r1"))
	if got := rec.take(); !slices.Equal(got, []types.NamespacedName{nn("ns", "r1")}) {
		t.Fatalf("re-tracking an expired reference enqueued %v, want [ns/r1]", got)
	}
	if got := tr.GetObservers(cm); !slices.Equal(got, []types.NamespacedName{nn("ns", "r1")}) {
		t.Fatalf("GetObservers = %v, want [ns/r1]", got)
	}

	// Once a lease has passed, the next Track sweeps every expired pair.
	clk.SetTime(clk.Now().Add(2 * time.Hour))
	mustTrack(t, tr, exactRef("ns", "fresh"), nn("ns", "r3"))
	want := sizes{exactKeys: 1, observers: 1, forwardPairs: 1, reversePairs: 1}
	if s := tr.sizes(); s != want {
		t.Fatalf("after the sweep sizes = %+v, want %+v", s, want)
	}
}

func TestOnChangedMatchesExactReferences(t *testing.T) {
	rec := &recorder{}
	tr := New(rec.enqueue, 0).SetScheme(testScheme())
	mustTrack(t, tr, exactRef("ns", "config"), nn("ns", "r1"))
	mustTrack(t, tr, exactRef("ns", "config"), nn("ns", "r2"))
	mustTrack(t, tr, exactRef("other", "config"), nn("other", "r3"))
	mustTrack(t, tr, Reference{APIVersion: "v1", Kind: "Secret", Namespace: "ns", Name: "config"}, nn("ns", "r4"))
	rec.take()

	tr.OnChanged(configMap("ns", "config", nil))
	if got, want := rec.take(), []types.NamespacedName{nn("ns", "r1"), nn("ns", "r2")}; !slices.Equal(got, want) {
		t.Fatalf("OnChanged enqueued %v, want %v", got, want)
	}
	tr.OnChanged(configMap("ns", "unknown", nil))
	tr.OnChanged("not an object")
	tr.OnChanged(nil)
	tr.OnChanged((*corev1.ConfigMap)(nil))
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("OnChanged of untracked things enqueued %v", got)
	}
}

func TestOnChangedMatchesGroupNotVersion(t *testing.T) {
	rec := &recorder{}
	tr := New(rec.enqueue, 0) // no scheme: these objects carry TypeMeta
	route := nn("ns", "route")
	mustTrack(t, tr, Reference{APIVersion: "serving.knative.dev/v1", Kind: "Configuration", Namespace: "ns", Name: "c"}, route)
	rec.take()

	for _, tc := range []struct {
		apiVersion, kind string
		want             bool
	}{
		{"serving.knative.dev/v1", "Configuration", true},
		{"serving.knative.dev/v1beta1", "Configuration", true},
		{"other.knative.dev/v1", "Configuration", false},
		{"serving.knative.dev/v1", "Route", false},
	} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(tc.apiVersion)
		u.SetKind(tc.kind)
		u.SetNamespace("ns")
		u.SetName("c")
		tr.OnChanged(u)
		got := rec.take()
		if tc.want != slices.Equal(got, []types.NamespacedName{route}) {
			t.Errorf("OnChanged(%s %s) enqueued %v, want match=%v", tc.apiVersion, tc.kind, got, tc.want)
		}
	}
}

func TestOnChangedAcceptsTombstones(t *testing.T) {
	rec := &recorder{}
	tr := New(rec.enqueue, 0).SetScheme(testScheme())
	route := nn("ns", "route")
	mustTrack(t, tr, exactRef("ns", "config"), route)
	rec.take()

	cm := configMap("ns", "config", nil)
	for _, obj := range []any{
		cache.DeletedFinalStateUnknown{Key: "ns/config", Obj: cm},
		&cache.DeletedFinalStateUnknown{Key: "ns/config", Obj: cm},
	} {
		tr.OnChanged(obj)
		if got := rec.take(); !slices.Equal(got, []types.NamespacedName{route}) {
			t.Errorf("OnChanged(%T) enqueued %v, want [%v]", obj, got, route)
		}
	}
	// A tombstone without a last state names nothing; it must not panic.
	tr.OnChanged(cache.DeletedFinalStateUnknown{Key: "ns/config"})
	tr.OnChanged((*cache.DeletedFinalStateUnknown)(nil))
	if got := rec.take(); len(got) != 0 {
		t.Errorf("empty tombstones enqueued %v", got)
	}
}

func TestSelectorReferences(t *testing.T) {
	rec := &recorder{}
	tr := New(rec.enqueue, 0).SetScheme(testScheme())
	appA := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}
	inNS, anyNS, everything := nn("ns", "in-ns"), nn("ns", "any-ns"), nn("ns", "everything")
	mustTrack(t, tr, selectorRef("ns", appA), inNS)
	mustTrack(t, tr, selectorRef("", appA), anyNS)
	mustTrack(t, tr, selectorRef("ns", &metav1.LabelSelector{}), everything)
	rec.take()

	for _, tc := range []struct {
		obj  *corev1.ConfigMap
		want []types.NamespacedName
	}{
		{configMap("ns", "x", map[string]string{"app": "a"}), []types.NamespacedName{anyNS, everything, inNS}},
		{configMap("ns", "x", map[string]string{"app": "b"}), []types.NamespacedName{everything}},
		{configMap("ns", "x", nil), []types.NamespacedName{everything}},
		{configMap("elsewhere", "x", map[string]string{"app": "a"}), []types.NamespacedName{anyNS}},
		{configMap("elsewhere", "x", nil), nil},
	} {
		if got := tr.GetObservers(tc.obj); !slices.Equal(got, tc.want) {
			t.Errorf("GetObservers(%s/%s %v) = %v, want %v", tc.obj.Namespace, tc.obj.Name, tc.obj.Labels, got, tc.want)
		}
	}

	// An update that removes the label must wake those that selected the
	// old object: the informer handler looks at both.
	h := tr.InformerHandler()
	h.OnUpdate(configMap("ns", "x", map[string]string{"app": "a"}), configMap("elsewhere", "x", nil))
	if got, want := sortUnique(rec.take()), []types.NamespacedName{anyNS, everything, inNS}; !slices.Equal(got, want) {
		t.Errorf("label-removing update enqueued %v, want %v", got, want)
	}
}

func TestClusterScopedReferences(t *testing.T) {
	rec := &recorder{}
	tr := New(rec.enqueue, 0).SetScheme(testScheme())
	byName, bySelector := nn("", "by-name"), nn("", "by-selector")
	mustTrack(t, tr, Reference{APIVersion: "v1", Kind: "Namespace", Name: "team"}, byName)
	mustTrack(t, tr, Reference{APIVersion: "v1", Kind: "Namespace", Selector: &metav1.LabelSelector{
		MatchLabels: map[string]string{"tier": "gold"},
	}}, bySelector)
	rec.take()

	team := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{"tier": "gold"}}}
	tr.OnChanged(team)
	if got, want := rec.take(), []types.NamespacedName{byName, bySelector}; !slices.Equal(got, want) {
		t.Errorf("OnChanged(namespace team) enqueued %v, want %v", got, want)
	}
	tr.OnChanged(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}})
	if got := rec.take(); len(got) != 0 {
		t.Errorf("OnChanged(namespace other) enqueued %v", got)
	}
}

func TestObjectsWithoutTypeMeta(t *testing.T) {
	rec := &recorder{}
	tr := New(rec.enqueue, 0)
	route := nn("ns", "route")
	mustTrack(t, tr, exactRef("ns", "config"), route)
	rec.take()

	typed := configMap("ns", "config", nil) // as controller-runtime's cache returns it
	tr.OnChanged(typed)
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("without a scheme a typed object has no kind, yet it matched %v", got)
	}
	withMeta := typed.DeepCopy()
	withMeta.APIVersion, withMeta.Kind = "v1", "ConfigMap"
	tr.OnChanged(withMeta)
	if got := rec.take(); !slices.Equal(got, []types.NamespacedName{route}) {
		t.Fatalf("object with TypeMeta enqueued %v, want [%v]", got, route)
	}
	tr.SetScheme(testScheme())
	tr.OnChanged(typed)
	if got := rec.take(); !slices.Equal(got, []types.NamespacedName{route}) {
		t.Fatalf("with a scheme, typed object enqueued %v, want [%v]", got, route)
	}
}

func TestGetObserversDeduplicates(t *testing.T) {
	tr := New(nil, 0).SetScheme(testScheme())
	route := nn("ns", "route")
	mustTrack(t, tr, exactRef("ns", "config"), route)
	mustTrack(t, tr, selectorRef("ns", &metav1.LabelSelector{}), route)
	mustTrack(t, tr, selectorRef("", &metav1.LabelSelector{}), route)
	if got := tr.GetObservers(configMap("ns", "config", nil)); !slices.Equal(got, []types.NamespacedName{route}) {
		t.Fatalf("GetObservers = %v, want [%v] once", got, route)
	}
}

func TestOnDeletedObserver(t *testing.T) {
	rec := &recorder{}
	tr := New(rec.enqueue, 0).SetScheme(testScheme())
	gone, stays := nn("ns", "gone"), nn("ns", "stays")
	for _, o := range []types.NamespacedName{gone, stays} {
		mustTrack(t, tr, exactRef("ns", "config"), o)
		mustTrack(t, tr, selectorRef("ns", &metav1.LabelSelector{}), o)
	}
	mustTrack(t, tr, exactRef("ns", "only-gone"), gone)

	tr.OnDeletedObserver(configMap("ns", "gone", nil)) // any object of that name will do
	if got := tr.GetObservers(configMap("ns", "config", nil)); !slices.Equal(got, []types.NamespacedName{stays}) {
		t.Fatalf("after deleting %v GetObservers = %v, want [%v]", gone, got, stays)
	}
	tr.OnDeletedObserver(cache.DeletedFinalStateUnknown{Key: "ns/stays", Obj: configMap("ns", "stays", nil)})
	if s := tr.sizes(); s != (sizes{}) {
		t.Fatalf("deleted observers left %+v behind", s)
	}
	tr.OnDeletedObserver(stays) // a NamespacedName works too, and twice is fine
	tr.OnDeletedObserver("junk")
}

func TestEnqueueMayCallBackIntoTracker(t *testing.T) {
	var tr *Tracker
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr = New(func(o types.NamespacedName) {
			// Would deadlock if enqueue ran under the tracker's lock.
			tr.GetObservers(configMap("ns", "config", nil))
			_ = tr.Track(exactRef("ns", "config"), o)
			tr.OnDeletedObserver(nn("ns", "nobody"))
		}, 0).SetScheme(testScheme())
		if err := tr.Track(exactRef("ns", "config"), nn("ns", "route")); err != nil {
			t.Error(err)
		}
		tr.OnChanged(configMap("ns", "config", nil))
		tr.InformerHandler().OnUpdate(configMap("ns", "config", nil), configMap("ns", "config", nil))
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("enqueue callback deadlocked against the tracker's lock")
	}
}

func mustTrack(t testing.TB, tr *Tracker, ref Reference, o types.NamespacedName) {
	t.Helper()
	if err := tr.Track(ref, o); err != nil {
		t.Fatalf("Track(%+v, %v): %v", ref, o, err)
	}
}
