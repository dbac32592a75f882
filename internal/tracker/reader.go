package tracker

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TrackingReader is a client.Reader for one reconcile of one observer. Each
// Get and List first tracks what it is about to read and only then reads, so
// no update can fall between the read and the registration (see the package
// documentation). Commit then makes the references read in this reconcile
// the observer's whole set.
//
// A TrackingReader may be used from several goroutines of one reconcile.
// It assumes no two reconciles of the same observer overlap, which
// controller-runtime guarantees: a key is processed by one worker at a time.
type TrackingReader struct {
	tracker  *Tracker
	observer types.NamespacedName
	reader   client.Reader

	mu   sync.Mutex
	read map[refKey]struct{}
}

var _ client.Reader = (*TrackingReader)(nil)

// Reader returns a TrackingReader that reads through r on behalf of
// observer. Objects without TypeMeta need the tracker's scheme (SetScheme).
func (t *Tracker) Reader(observer types.NamespacedName, r client.Reader) *TrackingReader {
	return &TrackingReader{tracker: t, observer: observer, reader: r, read: make(map[refKey]struct{})}
}

// Get tracks key, then reads it. A missing object is tracked too, so that
// its creation wakes the observer.
func (r *TrackingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gk, err := r.tracker.readGroupKind(obj, false)
	if err != nil {
		return err
	}
	k := refKey{objectKey: objectKey{group: gk.Group, kind: gk.Kind, namespace: key.Namespace, name: key.Name}}
	if r.tracker.readFirst {
		err := r.reader.Get(ctx, key, obj, opts...)
		r.mu.Lock()
		r.read[k] = struct{}{}
		r.mu.Unlock()
		r.tracker.track(k, nil, r.observer)
		return err
	}
	r.track(k, nil)
	return r.reader.Get(ctx, key, obj, opts...)
}

// List tracks the list's label selector (every object when there is none)
// in the list's namespace (every namespace when there is none), then reads.
// A field selector is not tracked: the observer may be woken by objects the
// field selector would have excluded, which costs a reconcile but loses
// nothing.
func (r *TrackingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gk, err := r.tracker.readGroupKind(list, true)
	if err != nil {
		return err
	}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	sel := lo.LabelSelector
	if sel == nil {
		sel = labels.Everything()
	}
	r.track(selectorKey(scopeKey{group: gk.Group, kind: gk.Kind, namespace: lo.Namespace}, sel), sel)
	return r.reader.List(ctx, list, opts...)
}

func (r *TrackingReader) track(k refKey, sel labels.Selector) {
	r.mu.Lock()
	r.read[k] = struct{}{}
	r.mu.Unlock()
	if r.tracker.track(k, sel, r.observer) {
		r.tracker.notify(r.observer)
	}
}

// Track records a dependency that is not read through this reader (say, an
// object named in the observer's spec that another component reads) as
// part of this reconcile's set.
func (r *TrackingReader) Track(ref Reference) error {
	k, sel, err := ref.key()
	if err != nil {
		return err
	}
	r.track(k, sel)
	return nil
}

// Commit ends the reconcile: references the observer tracked in earlier
// reconciles but not in this one are dropped. Call it once everything the
// reconcile depends on has been read; a reconcile that gives up half-way
// may skip it, keeping the previous references until they are committed
// away or expire, which costs wakeups but never loses one.
// Commit is idempotent.
func (r *TrackingReader) Commit() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tracker.retain(r.observer, r.read)
}
