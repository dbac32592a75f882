package tracker

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testScheme knows the core types, which stand in for Ferry's kinds.
func testScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

var configMapRef = Reference{APIVersion: "v1", Kind: "ConfigMap"}

func exactRef(ns, name string) Reference {
	r := configMapRef
	r.Namespace, r.Name = ns, name
	return r
}

func selectorRef(ns string, sel *metav1.LabelSelector) Reference {
	r := configMapRef
	r.Namespace, r.Selector = ns, sel
	return r
}

func nn(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }

// configMap returns a typed ConfigMap without TypeMeta, as caches return them.
func configMap(ns, name string, lbls map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}
}

// recorder is an enqueue callback that remembers what it was given.
type recorder struct {
	mu  sync.Mutex
	got []types.NamespacedName
}

func (r *recorder) enqueue(o types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, o)
}

// take returns and forgets what was enqueued.
func (r *recorder) take() []types.NamespacedName {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}

// informerEvent is a notification an informer owes its handlers.
type informerEvent struct {
	kind     string // add, update, delete
	old, obj any
}

// fakeInformer behaves like a client-go informer as far as ordering goes:
// a change is written to the store first and handed to the handlers later,
// in order (deliver). It is also a client.Reader over its store, like
// controller-runtime's cache. It is not safe for concurrent use.
type fakeInformer struct {
	store    map[types.NamespacedName]*corev1.ConfigMap
	pending  []informerEvent
	handlers []cache.ResourceEventHandler
	version  int
	// beforeRead and afterRead, when set, run inside Get and List just
	// before and just after the store is read: where a concurrent update can
	// slip in, whatever the caller does around the read.
	beforeRead, afterRead func()
}

var _ client.Reader = (*fakeInformer)(nil)

func newFakeInformer(handlers ...cache.ResourceEventHandler) *fakeInformer {
	return &fakeInformer{store: make(map[types.NamespacedName]*corev1.ConfigMap), handlers: handlers}
}

// write stores cm (a create or an update) and queues its event.
func (f *fakeInformer) write(cm *corev1.ConfigMap) {
	cm = cm.DeepCopy()
	f.version++
	cm.ResourceVersion = strconv.Itoa(f.version)
	key := nn(cm.Namespace, cm.Name)
	old, existed := f.store[key]
	f.store[key] = cm
	if existed {
		f.pending = append(f.pending, informerEvent{kind: "update", old: old, obj: cm})
	} else {
		f.pending = append(f.pending, informerEvent{kind: "add", obj: cm})
	}
}

// remove deletes key from the store and queues its event, as a tombstone if
// asked (what an informer hands out when it learns of a deletion by relist).
func (f *fakeInformer) remove(key types.NamespacedName, tombstone bool) {
	old, ok := f.store[key]
	if !ok {
		return
	}
	f.version++
	delete(f.store, key)
	var obj any = old
	if tombstone {
		obj = cache.DeletedFinalStateUnknown{Key: key.String(), Obj: old}
	}
	f.pending = append(f.pending, informerEvent{kind: "delete", obj: obj})
}

// resync queues an update of an unchanged object, as periodic resyncs do.
func (f *fakeInformer) resync(key types.NamespacedName) {
	if cm, ok := f.store[key]; ok {
		f.pending = append(f.pending, informerEvent{kind: "update", old: cm, obj: cm})
	}
}

// deliver hands the oldest pending event to the handlers; false if none.
func (f *fakeInformer) deliver() bool {
	if len(f.pending) == 0 {
		return false
	}
	ev := f.pending[0]
	f.pending = f.pending[1:]
	for _, h := range f.handlers {
		switch ev.kind {
		case "add":
			h.OnAdd(ev.obj, false)
		case "update":
			h.OnUpdate(ev.old, ev.obj)
		case "delete":
			h.OnDelete(ev.obj)
		}
	}
	return true
}

func (f *fakeInformer) deliverAll() {
	for f.deliver() {
	}
}

// update is a whole informer update: store, then handlers.
func (f *fakeInformer) update(cm *corev1.ConfigMap) {
	f.write(cm)
	f.deliverAll()
}

func (f *fakeInformer) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if f.beforeRead != nil {
		f.beforeRead()
	}
	if f.afterRead != nil {
		defer f.afterRead()
	}
	out, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return fmt.Errorf("fakeInformer holds ConfigMaps, not %T", obj)
	}
	cm, found := f.store[key]
	if !found {
		return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
	}
	*out = *cm.DeepCopy()
	return nil
}

func (f *fakeInformer) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if f.beforeRead != nil {
		f.beforeRead()
	}
	if f.afterRead != nil {
		defer f.afterRead()
	}
	out, ok := list.(*corev1.ConfigMapList)
	if !ok {
		return fmt.Errorf("fakeInformer holds ConfigMaps, not %T", list)
	}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	sel := lo.LabelSelector
	if sel == nil {
		sel = labels.Everything()
	}
	out.Items = nil
	for _, cm := range f.store {
		if (lo.Namespace == "" || cm.Namespace == lo.Namespace) && sel.Matches(labels.Set(cm.Labels)) {
			out.Items = append(out.Items, *cm.DeepCopy())
		}
	}
	return nil
}

// sizes counts the tracker's internal entries; all zero means it holds
// nothing at all.
type sizes struct {
	exactKeys, selectorScopes, selectorEntries, observers, forwardPairs, reversePairs int
}

func (t *Tracker) sizes() sizes {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var s sizes
	s.exactKeys = len(t.exact)
	for _, ls := range t.exact {
		s.forwardPairs += ls.len()
	}
	s.selectorScopes = len(t.selectors)
	for _, ss := range t.selectors {
		s.selectorEntries += ss.len()
		for _, sr := range ss.all {
			s.forwardPairs += sr.leases.len()
		}
	}
	s.observers = len(t.observers)
	for _, refs := range t.observers {
		s.reversePairs += refs.len()
	}
	return s
}

// metav1LabelSelector converts selector text to the API form.
func metav1LabelSelector(text string) (*metav1.LabelSelector, error) {
	return metav1.ParseToLabelSelector(text)
}
