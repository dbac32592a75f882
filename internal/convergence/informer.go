package convergence

import (
	"context"
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ferry-serving/ferry/internal/watches"
)

// informer is one process's view of one kind: the cache its reconcilers read, filled
// from the store's history at the pace the simulation chooses. As client-go's, it
// updates the cache first and then queues a notification for every handler, which
// runs later: a handler may see an event while the cache already shows a newer one.
type informer struct {
	kind string
	// cursor is the index in the store's log up to which this informer has looked.
	cursor int
	objs   map[types.NamespacedName]client.Object
	// indexes are the field indexes registered on the cache (IndexField).
	indexes   map[string]client.IndexerFunc
	listeners []*listener
	// read is each cached object as a Get returns it (copyOut), made once per
	// version: the JSON round trip was a quarter of a run when made on every read.
	read map[types.NamespacedName]readCopy
}

type readCopy struct{ of, read client.Object }

// copyOut gives dst the cached object o under key as the API server's JSON gives it
// (copyInto), from a copy made once per cached version.
func (inf *informer) copyOut(key types.NamespacedName, o, dst client.Object) error {
	rc, ok := inf.read[key]
	if !ok || rc.of != o {
		rc = readCopy{of: o, read: reflect.New(reflect.TypeOf(o).Elem()).Interface().(client.Object)}
		if err := copyInto(o, rc.read); err != nil {
			return err
		}
		inf.read[key] = rc
	}
	if reflect.TypeOf(dst) != reflect.TypeOf(rc.read) {
		return copyInto(o, dst)
	}
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(rc.read.DeepCopyObject()).Elem())
	return nil
}

// listener is one controller's watch of the kind, with its notifications not yet
// handled, in order.
type listener struct {
	watch   watches.Watch
	control *controller
	pending []notification
}

type notification struct {
	old, new client.Object
	// deleted: new is the last known state; tombstone: the informer did not see the
	// deletion itself, only its absence after a relist.
	deleted, tombstone bool
	initial            bool
}

// pending reports whether the store holds changes of the kind this informer has not
// delivered.
func (inf *informer) pending(s *store) bool {
	for i := inf.cursor; i < len(s.log); i++ {
		if s.log[i].ref.kind == inf.kind {
			return true
		}
	}
	return false
}

// deliverNext delivers the next change of the kind, as a watch does.
func (inf *informer) deliverNext(s *store) (change, bool) {
	for ; inf.cursor < len(s.log); inf.cursor++ {
		c := s.log[inf.cursor]
		if c.ref.kind != inf.kind {
			continue
		}
		inf.cursor++
		old, had := inf.objs[c.ref.key]
		obj := c.obj.DeepCopyObject().(client.Object)
		switch {
		case c.deleted:
			delete(inf.objs, c.ref.key)
			if !had {
				old = obj
			}
			inf.notify(notification{old: old, new: obj, deleted: true})
		case had:
			inf.objs[c.ref.key] = obj
			inf.notify(notification{old: old, new: obj})
		default:
			inf.objs[c.ref.key] = obj
			inf.notify(notification{new: obj})
		}
		return c, true
	}
	return change{}, false
}

// relist replaces the cache with the store's current state, as a watch that expired
// does: one update per object from the version the cache had, the intermediate ones
// never seen, and a tombstone for each object gone meanwhile.
func (inf *informer) relist(s *store) int {
	inf.cursor = len(s.log)
	now := map[types.NamespacedName]client.Object{}
	for _, o := range s.list(inf.kind, "") {
		now[client.ObjectKeyFromObject(o)] = o
	}
	n := 0
	for _, key := range sortedKeys(inf.objs) {
		if _, ok := now[key]; !ok {
			inf.notify(notification{old: inf.objs[key], new: inf.objs[key], deleted: true, tombstone: true})
			delete(inf.objs, key)
			n++
		}
	}
	for _, key := range sortedKeys(now) {
		o := now[key]
		old, had := inf.objs[key]
		inf.objs[key] = o
		switch {
		case !had:
			inf.notify(notification{new: o})
		case old.GetResourceVersion() != o.GetResourceVersion():
			inf.notify(notification{old: old, new: o})
		default:
			continue
		}
		n++
	}
	return n
}

func (inf *informer) notify(n notification) {
	for _, l := range inf.listeners {
		l.pending = append(l.pending, n)
	}
}

// handleNext runs the oldest notification through the watch's predicates and handler,
// into the controller's queue.
func (l *listener) handleNext() notification {
	n := l.pending[0]
	l.pending = l.pending[1:]
	ctx := context.Background()
	q := l.control.queue
	h, preds := l.watch.Handler, l.watch.Predicates
	switch {
	case n.deleted:
		e := event.DeleteEvent{Object: n.new, DeleteStateUnknown: n.tombstone}
		if all(preds, func(p predicate.Predicate) bool { return p.Delete(e) }) {
			h.Delete(ctx, e, q)
		}
	case n.old == nil:
		e := event.CreateEvent{Object: n.new, IsInInitialList: n.initial}
		if all(preds, func(p predicate.Predicate) bool { return p.Create(e) }) {
			h.Create(ctx, e, q)
		}
	default:
		e := event.UpdateEvent{ObjectOld: n.old, ObjectNew: n.new}
		if all(preds, func(p predicate.Predicate) bool { return p.Update(e) }) {
			h.Update(ctx, e, q)
		}
	}
	return n
}

func all(preds []predicate.Predicate, ok func(predicate.Predicate) bool) bool {
	for _, p := range preds {
		if !ok(p) {
			return false
		}
	}
	return true
}

func sortedKeys(m map[types.NamespacedName]client.Object) []types.NamespacedName {
	keys := make([]types.NamespacedName, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return keys
}
