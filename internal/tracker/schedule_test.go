package tracker

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The schedule tests run random interleavings of informer updates (store
// write and handler call as separate steps), relists with tombstones,
// reconciles whose reads let other steps in between their halves, observer
// deletions and commits; then they check that no update was lost:
//
//	every observer whose last read of an object it still tracks is older
//	than that object's latest version has been enqueued since that version.

// chooser draws the schedule: from rapid, or from a seeded PRNG.
type chooser interface {
	intn(label string, n int) int
}

type rapidChooser struct{ t *rapid.T }

func (c rapidChooser) intn(label string, n int) int { return rapid.IntRange(0, n-1).Draw(c.t, label) }

type randChooser struct{ r *rand.Rand }

func (c randChooser) intn(_ string, n int) int { return c.r.IntN(n) }

// readStyle is how reconciles read.
type readStyle int

const (
	// trackThenRead reads through a TrackingReader and commits.
	trackThenRead readStyle = iota
	// readThenTrack reads the cache, then calls Track: Knative's order.
	readThenTrack
)

const (
	scheduleNamespaces = 2
	scheduleObjects    = 3 // per namespace
	scheduleObservers  = 3
)

var scheduleSelectors = []string{"app=a", "app notin (a)", ""}

// listDep is what one List read: its scope and what it saw.
type listDep struct {
	namespace string
	selector  labels.Selector
	seen      map[types.NamespacedName]string // object → resourceVersion
}

// readSet is what an observer's reconciles have read and still track:
// object → resourceVersion ("" when missing), plus lists.
type readSet struct {
	objects map[types.NamespacedName]string
	lists   map[string]listDep // by namespace + selector
}

// revision is one write of an object: its state after the write (nil once
// deleted) and when.
type revision struct {
	tick  int
	state *corev1.ConfigMap
}

type world struct {
	c       chooser
	style   readStyle
	tr      *Tracker
	inf     *fakeInformer
	tick    int
	history map[types.NamespacedName][]revision // every write of each object
	woken   map[types.NamespacedName]int        // tick of each observer's latest enqueue
	reads   map[types.NamespacedName]*readSet
	log     []string
}

func newWorld(c chooser, style readStyle, guard bool) *world {
	w := &world{
		c:       c,
		style:   style,
		history: make(map[types.NamespacedName][]revision),
		woken:   make(map[types.NamespacedName]int),
		reads:   make(map[types.NamespacedName]*readSet),
	}
	w.tr = New(func(o types.NamespacedName) {
		w.tick++
		w.woken[o] = w.tick
	}, 0).SetScheme(testScheme())
	w.tr.requeueNewRefs = guard
	w.inf = newFakeInformer(w.tr.InformerHandler())
	return w
}

func (w *world) logf(format string, args ...any) { w.log = append(w.log, fmt.Sprintf(format, args...)) }

func (w *world) object(label string) types.NamespacedName {
	return nn(fmt.Sprintf("ns%d", w.c.intn(label+" namespace", scheduleNamespaces)),
		fmt.Sprintf("cm%d", w.c.intn(label+" name", scheduleObjects)))
}

// change creates, updates or deletes one object in the store; its event is
// dispatched later.
func (w *world) change() {
	key := w.object("change")
	if _, exists := w.inf.store[key]; exists && w.c.intn("delete?", 3) == 0 {
		tombstone := w.c.intn("tombstone?", 2) == 0
		w.remove(key, tombstone)
		return
	}
	w.write(key, []string{"a", "b"}[w.c.intn("app label", 2)])
}

func (w *world) write(key types.NamespacedName, app string) {
	w.inf.write(configMap(key.Namespace, key.Name, map[string]string{"app": app}))
	w.tick++
	w.history[key] = append(w.history[key], revision{w.tick, w.inf.store[key]})
	w.logf("write %v app=%s rv=%s", key, app, w.inf.store[key].ResourceVersion)
}

func (w *world) remove(key types.NamespacedName, tombstone bool) {
	w.inf.remove(key, tombstone)
	w.tick++
	w.history[key] = append(w.history[key], revision{w.tick, nil})
	w.logf("delete %v (tombstone %v)", key, tombstone)
}

// lastChange is the tick of the latest write that changed what view makes
// of key, 0 if none did.
func (w *world) lastChange(key types.NamespacedName, view func(*corev1.ConfigMap) string) int {
	h := w.history[key]
	for i := len(h) - 1; i >= 0; i-- {
		var before *corev1.ConfigMap
		if i > 0 {
			before = h[i-1].state
		}
		if view(before) != view(h[i].state) {
			return h[i].tick
		}
	}
	return 0
}

// relist is what an informer does after its watch broke: every object
// comes again, changed or not, and deletions it missed come as tombstones.
func (w *world) relist() {
	w.logf("relist")
	for key := range w.inf.store {
		switch w.c.intn("relist "+key.String(), 3) {
		case 0:
			w.inf.resync(key)
		case 1:
			w.remove(key, true)
		default:
			w.write(key, "a")
		}
	}
}

func (w *world) deliver() {
	if w.inf.deliver() {
		w.logf("dispatch")
	}
}

// interleave runs up to two writes, dispatches or catch-ups: what the
// informer may do while a reconcile is between two steps.
func (w *world) interleave(where string) {
	for range w.c.intn("interleaved steps "+where, 3) {
		switch w.c.intn("interleaved kind", 3) {
		case 0:
			w.change()
		case 1:
			w.deliver()
		default:
			w.catchUp()
		}
	}
}

// catchUp dispatches every pending event.
func (w *world) catchUp() {
	w.inf.deliverAll()
	w.logf("dispatch all")
}

func (w *world) observer(label string) types.NamespacedName {
	return nn("ns0", fmt.Sprintf("route%d", w.c.intn(label, scheduleObservers)))
}

// reconcile reads a few objects and lists for one observer.
func (w *world) reconcile() {
	o := w.observer("reconcile")
	w.tick++ // reads from here on are after any enqueue so far
	w.logf("reconcile %v", o)
	ctx := context.Background()
	now := &readSet{objects: make(map[types.NamespacedName]string), lists: make(map[string]listDep)}
	rd := w.tr.Reader(o, w.inf)
	// Let the informer run inside each read, both before and after the
	// store is read, so the reader's own order is what is tested.
	w.inf.beforeRead = func() { w.interleave("before the store read") }
	w.inf.afterRead = func() { w.interleave("after the store read") }
	defer func() { w.inf.beforeRead, w.inf.afterRead = nil, nil }()

	for range 1 + w.c.intn("reads", 3) {
		if w.c.intn("list?", 3) == 0 {
			w.list(ctx, o, rd, now)
		} else {
			w.get(ctx, o, rd, now)
		}
		w.interleave("between reads")
	}

	prev := w.reads[o]
	if w.style == trackThenRead && w.c.intn("commit?", 4) != 0 {
		rd.Commit()
		w.logf("  commit")
	} else if prev != nil {
		// Without a commit the earlier references stay tracked.
		for k, v := range prev.objects {
			if _, ok := now.objects[k]; !ok {
				now.objects[k] = v
			}
		}
		for k, v := range prev.lists {
			if _, ok := now.lists[k]; !ok {
				now.lists[k] = v
			}
		}
	}
	w.reads[o] = now
}

func (w *world) get(ctx context.Context, o types.NamespacedName, rd *TrackingReader, now *readSet) {
	key := w.object("get")
	var cm corev1.ConfigMap
	var err error
	if w.style == trackThenRead {
		err = rd.Get(ctx, key, &cm)
		w.logf("  track and get %v: rv=%q", key, cm.ResourceVersion)
	} else {
		err = w.inf.Get(ctx, key, &cm)
		w.logf("  get %v: rv=%q", key, cm.ResourceVersion)
		if terr := w.tr.Track(exactRef(key.Namespace, key.Name), o); terr != nil {
			panic(terr)
		}
		w.logf("  track %v", key)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		panic(err)
	}
	now.objects[key] = cm.ResourceVersion // "" when missing
}

func (w *world) list(ctx context.Context, o types.NamespacedName, rd *TrackingReader, now *readSet) {
	namespace := ""
	if i := w.c.intn("list namespace", scheduleNamespaces+1); i < scheduleNamespaces {
		namespace = fmt.Sprintf("ns%d", i)
	}
	selText := scheduleSelectors[w.c.intn("list selector", len(scheduleSelectors))]
	sel, err := labels.Parse(selText)
	if err != nil {
		panic(err)
	}
	opts := []client.ListOption{client.InNamespace(namespace)}
	if selText != "" {
		opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
	}
	var list corev1.ConfigMapList
	seen := func() map[types.NamespacedName]string {
		m := make(map[types.NamespacedName]string)
		for _, cm := range list.Items {
			m[nn(cm.Namespace, cm.Name)] = cm.ResourceVersion
		}
		return m
	}
	if w.style == trackThenRead {
		err = rd.List(ctx, &list, opts...)
		w.logf("  track and list ns=%q %q: %v", namespace, selText, seen())
	} else {
		err = w.inf.List(ctx, &list, opts...)
		w.logf("  list ns=%q %q: %v", namespace, selText, seen())
		ls, perr := metav1LabelSelector(selText)
		if perr != nil {
			panic(perr)
		}
		if terr := w.tr.Track(selectorRef(namespace, ls), o); terr != nil {
			panic(terr)
		}
		w.logf("  track list ns=%q %q", namespace, selText)
	}
	if err != nil {
		panic(err)
	}
	now.lists[namespace+"?"+selText] = listDep{namespace: namespace, selector: sel, seen: seen()}
}

func (w *world) deleteObserver() {
	o := w.observer("delete observer")
	w.tr.OnDeletedObserver(o)
	delete(w.reads, o)
	w.logf("delete observer %v", o)
}

// run draws and runs a schedule, then checks that nothing was lost.
func (w *world) run(steps int) error {
	for range steps {
		switch w.c.intn("step", 11) {
		case 0, 1, 2:
			w.change()
		case 3, 4:
			w.deliver()
		case 5:
			w.catchUp()
		case 6, 7:
			w.reconcile()
		case 8:
			w.relist()
		case 9:
			w.deleteObserver()
		}
	}
	w.inf.deliverAll() // informers catch up eventually
	if err := w.check(); err != nil {
		return fmt.Errorf("%v\nschedule:\n  %s", err, strings.Join(w.log, "\n  "))
	}
	for o := range w.reads {
		w.tr.OnDeletedObserver(o)
	}
	for i := range scheduleObservers {
		w.tr.OnDeletedObserver(nn("ns0", fmt.Sprintf("route%d", i)))
	}
	if s := w.tr.sizes(); s != (sizes{}) {
		return fmt.Errorf("deleting every observer left %+v behind", s)
	}
	return nil
}

// check is the invariant: when what an observer read of an object differs
// from what it would read now, the observer was enqueued after the write
// that made the difference.
func (w *world) check() error {
	exactView := func(cm *corev1.ConfigMap) string {
		if cm == nil {
			return ""
		}
		return cm.ResourceVersion
	}
	for o, rs := range w.reads {
		for key, seen := range rs.objects {
			cur := exactView(w.inf.store[key])
			if changed := w.lastChange(key, exactView); cur != seen && w.woken[o] <= changed {
				return fmt.Errorf("%v read %v at rv %q, it is now at %q, and %v was not enqueued since", o, key, seen, cur, o)
			}
		}
		for _, l := range rs.lists {
			// What the list shows of an object: its version if listed.
			listView := func(cm *corev1.ConfigMap) string {
				if cm == nil || (l.namespace != "" && cm.Namespace != l.namespace) || !l.selector.Matches(labels.Set(cm.Labels)) {
					return ""
				}
				return cm.ResourceVersion
			}
			keys := make(map[types.NamespacedName]bool)
			for key := range l.seen {
				keys[key] = true
			}
			for key, cm := range w.inf.store {
				if listView(cm) != "" {
					keys[key] = true
				}
			}
			for key := range keys {
				cur, seen := listView(w.inf.store[key]), l.seen[key]
				if changed := w.lastChange(key, listView); cur != seen && w.woken[o] <= changed {
					return fmt.Errorf("%v listed ns=%q %q and saw %v at rv %q, it is now %q, and %v was not enqueued since",
						o, l.namespace, l.selector, key, seen, cur, o)
				}
			}
		}
	}
	return nil
}

// scheduleChecks is how many schedules each rapid property runs unless
// -rapid.checks says otherwise.
const scheduleChecks = 3000

func withRapidChecks(t *testing.T, n int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if set {
		return
	}
	if testing.Short() {
		n /= 10
	}
	f := flag.Lookup("rapid.checks")
	old := f.Value.String()
	if err := f.Value.Set(fmt.Sprint(n)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

func TestSchedulesLoseNoUpdate(t *testing.T) {
	withRapidChecks(t, scheduleChecks)
	for _, tc := range []struct {
		name  string
		style readStyle
		guard bool
	}{
		// The reader alone is enough: this is the construction.
		{"reader without guard", trackThenRead, false},
		{"reader with guard", trackThenRead, true},
		// Knative's order is saved by the guard.
		{"read then track with guard", readThenTrack, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				w := newWorld(rapidChooser{rt}, tc.style, tc.guard)
				if err := w.run(rapid.IntRange(1, 60).Draw(rt, "steps")); err != nil {
					rt.Fatal(err)
				}
			})
		})
	}
}

// TestSchedulesCatchReadThenTrackWithoutGuard shows the schedule check has
// teeth: with Knative's order and no guard it finds a lost update.
func TestSchedulesCatchReadThenTrackWithoutGuard(t *testing.T) {
	for seed := range uint64(5000) {
		w := newWorld(randChooser{rand.New(rand.NewPCG(seed, 0))}, readThenTrack, false)
		if err := w.run(20); err != nil {
			t.Logf("seed %d loses an update, as it should:\n%v", seed, err)
			return
		}
	}
	t.Fatal("no schedule lost an update with read-then-track and no guard; the check is blind")
}
