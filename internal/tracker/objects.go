package tracker

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// objectInfo is what matching needs from an object.
type objectInfo struct {
	gk schema.GroupKind
	// moreGKs holds further kinds when the scheme registers the Go type under
	// several groups; nearly always nil.
	moreGKs   []schema.GroupKind
	namespace string
	name      string
	labels    map[string]string
}

// unwrapTombstone returns the last known state inside a tombstone, which an
// informer hands to delete handlers when it missed the deletion itself.
func unwrapTombstone(obj any) any {
	switch d := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		return d.Obj
	case *cache.DeletedFinalStateUnknown:
		if d == nil {
			return nil
		}
		return d.Obj
	}
	return obj
}

// describe extracts objectInfo from obj (an object or a tombstone of one).
// It reports false for anything it cannot identify; such an event can only
// concern nobody.
func (t *Tracker) describe(obj any) (objectInfo, bool) {
	obj = unwrapTombstone(obj)
	if isNil(obj) {
		return objectInfo{}, false
	}
	ro, ok := obj.(runtime.Object)
	if !ok {
		return objectInfo{}, false
	}
	mo, ok := obj.(metav1.Object)
	if !ok {
		if mo, ok = accessor(obj); !ok {
			return objectInfo{}, false
		}
	}
	info := objectInfo{namespace: mo.GetNamespace(), name: mo.GetName(), labels: mo.GetLabels()}
	if gvk := ro.GetObjectKind().GroupVersionKind(); gvk.Kind != "" {
		info.gk = gvk.GroupKind()
		return info, true
	}
	// Typed objects from controller-runtime's cache and clients carry no
	// TypeMeta: ask the scheme what the Go type is.
	gks, err := t.schemeGroupKinds(ro)
	if err != nil || len(gks) == 0 {
		return objectInfo{}, false
	}
	info.gk, info.moreGKs = gks[0], gks[1:]
	return info, true
}

func accessor(obj any) (metav1.Object, bool) {
	mo, err := meta.Accessor(obj)
	return mo, err == nil
}

// schemeGroupKinds returns the distinct group-kinds the scheme registers for
// obj's Go type.
func (t *Tracker) schemeGroupKinds(obj runtime.Object) ([]schema.GroupKind, error) {
	if t.scheme == nil {
		return nil, fmt.Errorf("tracker: %T has no TypeMeta and the tracker has no scheme (SetScheme)", obj)
	}
	// The answer depends only on the Go type; asking the scheme costs an
	// allocation on every event.
	typ := reflect.TypeOf(obj)
	if gks, ok := t.kinds.Load(typ); ok {
		return gks.([]schema.GroupKind), nil
	}
	gvks, _, err := t.scheme.ObjectKinds(obj)
	if err != nil {
		return nil, err
	}
	gks := make([]schema.GroupKind, 0, 1)
	for _, gvk := range gvks {
		gk := gvk.GroupKind()
		dup := false
		for _, seen := range gks {
			dup = dup || seen == gk
		}
		if !dup {
			gks = append(gks, gk)
		}
	}
	if _, dynamic := obj.(runtime.Unstructured); !dynamic { // their kind is in their content
		t.kinds.Store(typ, gks)
	}
	return gks, nil
}

// readGroupKind is the group-kind a client.Reader call reads, preferring
// the object's own TypeMeta (unstructured, PartialObjectMetadata) over the
// scheme. For lists it strips the "List" suffix as controller-runtime does.
func (t *Tracker) readGroupKind(obj runtime.Object, isList bool) (schema.GroupKind, error) {
	gk := obj.GetObjectKind().GroupVersionKind().GroupKind()
	if gk.Kind == "" {
		gks, err := t.schemeGroupKinds(obj)
		if err != nil {
			return schema.GroupKind{}, err
		}
		if len(gks) != 1 {
			return schema.GroupKind{}, fmt.Errorf("tracker: %T is registered as %v, cannot tell which is read", obj, gks)
		}
		gk = gks[0]
	}
	if isList {
		kind, ok := strings.CutSuffix(gk.Kind, "List")
		if !ok || kind == "" {
			return schema.GroupKind{}, fmt.Errorf("tracker: list kind %q does not end in List", gk.Kind)
		}
		gk.Kind = kind
	}
	return gk, nil
}

// observerName returns the name of a deleted observer given as an object, a
// tombstone of one, or a types.NamespacedName.
func observerName(obj any) (types.NamespacedName, bool) {
	obj = unwrapTombstone(obj)
	switch o := obj.(type) {
	case types.NamespacedName:
		return o, true
	case *types.NamespacedName:
		if o != nil {
			return *o, true
		}
		return types.NamespacedName{}, false
	}
	if isNil(obj) {
		return types.NamespacedName{}, false
	}
	mo, ok := obj.(metav1.Object)
	if !ok {
		if mo, ok = accessor(obj); !ok {
			return types.NamespacedName{}, false
		}
	}
	return types.NamespacedName{Namespace: mo.GetNamespace(), Name: mo.GetName()}, true
}

// isNil reports whether v is nil or a nil pointer in an interface, which
// event handlers can be given for a missing old or new object.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}
