package tracker

import (
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// DefaultLease is the lease New uses when given none. Observers that commit a
// TrackingReader drop stale references themselves, so the lease is only a
// backstop for references nobody forgets (an observer deleted mid-reconcile,
// callers of Track that never commit); a long lease keeps periodic resyncs
// from having to re-track anything.
const DefaultLease = 30 * time.Hour

// Tracker remembers which observers depend on which objects, and names the
// observers to enqueue when one of those objects changes.
type Tracker struct {
	enqueue func(types.NamespacedName)
	lease   int64 // nanoseconds
	scheme  *runtime.Scheme
	kinds   sync.Map // reflect.Type → []schema.GroupKind, the scheme's answers
	clock   clock.PassiveClock

	// requeueNewRefs is the second guard: enqueue an observer that starts
	// tracking a reference. Only tests turn it off, to show what it buys.
	requeueNewRefs bool
	// readFirst is the bug the tracker prevents, for the simulation to find
	// (ReadBeforeTrack).
	readFirst bool

	mu sync.RWMutex
	// exact and selectors map what changed to who cares; each pair's value is
	// its lease expiry in Unix nanoseconds.
	exact     map[objectKey]leases
	selectors map[scopeKey]*scopeSelectors
	// observers is the reverse index, for OnDeletedObserver and Commit.
	// A pair is in it exactly when it is in exact or selectors.
	observers map[types.NamespacedName]*smallMap[refKey, struct{}]
	nextSweep int64
	// Go maps never give back their buckets; shrinkLocked rebuilds a map
	// that has fallen well below its peak, so that memory follows the number
	// of tracked pairs back down.
	peakExact, peakObservers, peakSelectors int
}

// New returns a Tracker that calls enqueue (which may be nil) for every
// observer that must reconcile: one that starts tracking a reference and,
// through OnChanged, one tracking an object that changed. A lease of zero or
// less means DefaultLease.
//
// enqueue is never called with the tracker's lock held, so it may call back
// into the tracker.
func New(enqueue func(types.NamespacedName), lease time.Duration) *Tracker {
	if lease <= 0 {
		lease = DefaultLease
	}
	return &Tracker{
		enqueue:        enqueue,
		lease:          int64(lease),
		clock:          clock.RealClock{},
		requeueNewRefs: true,
		exact:          make(map[objectKey]leases),
		selectors:      make(map[scopeKey]*scopeSelectors),
		observers:      make(map[types.NamespacedName]*smallMap[refKey, struct{}]),
	}
}

// SetScheme sets the scheme used to find the kind of objects without
// TypeMeta, such as the typed objects controller-runtime's cache and clients
// return. Readers need it; without it OnChanged only matches objects that
// carry TypeMeta. Call it before the tracker is shared.
func (t *Tracker) SetScheme(s *runtime.Scheme) *Tracker {
	t.scheme = s
	t.kinds.Clear()
	return t
}

// ReadBeforeTrack makes the Tracker's readers get an object before they track it, and
// not requeue their observer for a reference they start to track: Knative's order, and
// the lost update Ferry's tracker exists to prevent (knative/serving#2954). Only the
// convergence simulation's sensitivity test calls it, to show it finds that bug.
func (t *Tracker) ReadBeforeTrack() *Tracker {
	t.readFirst = true
	return t
}

// SetClock replaces the clock leases are measured with. Call it before the
// tracker is shared.
func (t *Tracker) SetClock(c clock.PassiveClock) *Tracker {
	t.clock = c
	return t
}

// Track makes observer depend on ref for one lease. If observer was not
// already tracking ref, or its lease had expired, observer is enqueued at
// once: whatever it read before this call may already be stale, and the
// event that made it so may have been handled while nobody was tracking.
// Re-tracking a live reference only renews the lease.
func (t *Tracker) Track(ref Reference, observer types.NamespacedName) error {
	k, sel, err := ref.key()
	if err != nil {
		return err
	}
	if t.track(k, sel, observer) {
		t.notify(observer)
	}
	return nil
}

// track records the pair and reports whether observer must be enqueued.
// sel is the parsed selector of a selector reference.
func (t *Tracker) track(k refKey, sel labels.Selector, observer types.NamespacedName) bool {
	now := t.now()
	expiry := now + t.lease
	switch {
	case expiry < now:
		expiry = math.MaxInt64
	case expiry == 0: // leases reads 0 as "no lease"
		expiry = 1
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	if now >= t.nextSweep {
		t.sweepLocked(now)
	}
	var old int64
	var had bool
	if k.isSelector {
		sr := t.selectorRefsLocked(k, sel)
		old, had = sr.leases.get(observer)
		sr.leases.set(observer, expiry)
	} else {
		ls, existed := t.exact[k.objectKey]
		old, had = ls.get(observer)
		ls.set(observer, expiry)
		t.exact[k.objectKey] = ls
		if !existed {
			t.peakExact = max(t.peakExact, len(t.exact))
		}
	}
	if had && old > now {
		return false
	}
	if !had {
		refs := t.observers[observer]
		if refs == nil {
			refs = &smallMap[refKey, struct{}]{}
			t.observers[observer] = refs
			t.peakObservers = max(t.peakObservers, len(t.observers))
		}
		refs.set(k, struct{}{})
	}
	return t.requeueNewRefs
}

// selectorRefsLocked returns the entry of selector reference k, creating it
// with sel if needed.
func (t *Tracker) selectorRefsLocked(k refKey, sel labels.Selector) *selectorRefs {
	ss := t.selectors[k.scope()]
	if ss == nil {
		ss = newScopeSelectors()
		t.selectors[k.scope()] = ss
		t.peakSelectors = max(t.peakSelectors, len(t.selectors))
	}
	return ss.add(k.selector, sel)
}

// OnChanged enqueues every observer tracking obj: an object, or a
// cache.DeletedFinalStateUnknown tombstone of one. For an update, call it
// with the old object too, so that selector observers learn that an object
// stopped matching (InformerHandler and Handler do).
func (t *Tracker) OnChanged(obj any) {
	info, ok := t.describe(obj)
	if !ok {
		return
	}
	var buf [4]types.NamespacedName // spares an allocation per event
	for _, o := range t.observersOf(buf[:0], &info) {
		t.notify(o)
	}
}

// GetObservers returns, sorted, the observers with a live lease on obj,
// an object or a tombstone of one.
func (t *Tracker) GetObservers(obj any) []types.NamespacedName {
	info, ok := t.describe(obj)
	if !ok {
		return nil
	}
	return t.observersOf(nil, &info)
}

func (t *Tracker) observersOf(out []types.NamespacedName, info *objectInfo) []types.NamespacedName {
	now := t.now()
	var set labels.Set // built once, only if some selector is in scope
	t.mu.RLock()
	for i := -1; i < len(info.moreGKs); i++ {
		gk := info.gk
		if i >= 0 {
			gk = info.moreGKs[i]
		}
		key := objectKey{group: gk.Group, kind: gk.Kind, namespace: info.namespace, name: info.name}
		if ls, ok := t.exact[key]; ok {
			out = ls.appendLive(out, now)
		}
		if len(t.selectors) == 0 {
			continue
		}
		scope := scopeKey{group: gk.Group, kind: gk.Kind, namespace: info.namespace}
		for {
			if ss := t.selectors[scope]; ss != nil {
				if set == nil {
					set = labels.Set(info.labels)
					if set == nil {
						set = labels.Set{}
					}
				}
				out = ss.appendMatching(out, set, now)
			}
			// A selector over every namespace sees this object too.
			if scope.namespace == "" {
				break
			}
			scope.namespace = ""
		}
	}
	t.mu.RUnlock()
	return sortUnique(out)
}

func sortUnique(nns []types.NamespacedName) []types.NamespacedName {
	if len(nns) < 2 {
		return nns
	}
	slices.SortFunc(nns, compareNames)
	return slices.Compact(nns)
}

func compareNames(a, b types.NamespacedName) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// OnDeletedObserver forgets everything obj observes. obj is the deleted
// observer, a tombstone of it, or its types.NamespacedName.
func (t *Tracker) OnDeletedObserver(obj any) {
	observer, ok := observerName(obj)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	refs := t.observers[observer]
	if refs == nil {
		return
	}
	refs.each(func(k refKey, _ struct{}) { t.dropForwardLocked(k, observer) })
	delete(t.observers, observer)
	t.shrinkLocked()
}

// retain drops every reference of observer that is not in keep.
func (t *Tracker) retain(observer types.NamespacedName, keep map[refKey]struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	refs := t.observers[observer]
	if refs == nil {
		return
	}
	refs.deleteIf(func(k refKey, _ struct{}) bool {
		if _, ok := keep[k]; ok {
			return false
		}
		t.dropForwardLocked(k, observer)
		return true
	})
	if refs.len() == 0 {
		delete(t.observers, observer)
	}
	t.shrinkLocked()
}

// dropForwardLocked removes observer from k's leases, and k itself once
// nobody tracks it. The caller updates the reverse index.
func (t *Tracker) dropForwardLocked(k refKey, observer types.NamespacedName) {
	if !k.isSelector {
		if ls, ok := t.exact[k.objectKey]; ok {
			ls.delete(observer)
			if ls.len() == 0 {
				delete(t.exact, k.objectKey)
			} else {
				t.exact[k.objectKey] = ls
			}
		}
		return
	}
	scope := k.scope()
	ss := t.selectors[scope]
	if ss == nil {
		return
	}
	if sr := ss.all[k.selector]; sr != nil {
		sr.leases.delete(observer)
		if sr.leases.len() == 0 {
			ss.remove(k.selector)
			if ss.len() == 0 {
				delete(t.selectors, scope)
			}
		}
	}
}

// dropReverseLocked removes k from observer's references.
func (t *Tracker) dropReverseLocked(k refKey, observer types.NamespacedName) {
	if refs := t.observers[observer]; refs != nil {
		refs.delete(k)
		if refs.len() == 0 {
			delete(t.observers, observer)
		}
	}
}

// sweepLocked drops every expired pair. Track runs it at most once a lease,
// so its cost is amortised over all the tracking done in that time; between
// sweeps expired pairs are merely ignored.
func (t *Tracker) sweepLocked(now int64) {
	expired := func(k refKey) func(types.NamespacedName, int64) bool {
		return func(o types.NamespacedName, expiry int64) bool {
			if expiry > now {
				return false
			}
			t.dropReverseLocked(k, o)
			return true
		}
	}
	for ok, ls := range t.exact {
		ls.deleteIf(expired(refKey{objectKey: ok}))
		if ls.len() == 0 {
			delete(t.exact, ok)
		} else {
			t.exact[ok] = ls
		}
	}
	for scope, ss := range t.selectors {
		for text, sr := range ss.all {
			sr.leases.deleteIf(expired(selectorKeyString(scope, text)))
			if sr.leases.len() == 0 {
				ss.remove(text)
			}
		}
		if ss.len() == 0 {
			delete(t.selectors, scope)
		}
	}
	t.nextSweep = now + t.lease
	if t.nextSweep < now {
		t.nextSweep = math.MaxInt64
	}
	t.shrinkLocked()
}

// shrinkMin is the map size below which shrinking is not worth a rebuild.
const shrinkMin = 64

// shrinkLocked rebuilds the top-level maps once they hold under a quarter
// of their peak. The copy costs at most a third of the deletions that led
// to it, so it is amortised O(1) per deletion.
func (t *Tracker) shrinkLocked() {
	if t.peakExact > shrinkMin && len(t.exact) < t.peakExact/4 {
		t.exact = rebuilt(t.exact)
		t.peakExact = len(t.exact)
	}
	if t.peakObservers > shrinkMin && len(t.observers) < t.peakObservers/4 {
		t.observers = rebuilt(t.observers)
		t.peakObservers = len(t.observers)
	}
	if t.peakSelectors > shrinkMin && len(t.selectors) < t.peakSelectors/4 {
		t.selectors = rebuilt(t.selectors)
		t.peakSelectors = len(t.selectors)
	}
}

// rebuilt copies m into a map sized for its current length (maps.Clone
// would keep the old capacity).
func rebuilt[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (t *Tracker) notify(observer types.NamespacedName) {
	if t.enqueue != nil {
		t.enqueue(observer)
	}
}

func (t *Tracker) now() int64 { return t.clock.Now().UnixNano() }
