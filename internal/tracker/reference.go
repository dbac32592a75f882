package tracker

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Reference names what an observer depends on: either one object (Name) or
// every object of a kind in a namespace whose labels match Selector.
//
// Only the group of APIVersion is significant: a reference to
// serving.knative.dev/v1 Configuration "c" matches the object whatever
// version the event carries.
//
// An empty Namespace means a cluster-scoped object for a Name reference and
// every namespace (which includes cluster-scoped objects) for a Selector
// reference, the way an unscoped List reads.
type Reference struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	Selector   *metav1.LabelSelector // exactly one of Name and Selector
}

// objectKey identifies one object regardless of its version.
type objectKey struct {
	group, kind, namespace, name string
}

// scopeKey identifies a kind in a namespace: where a selector reference looks.
type scopeKey struct {
	group, kind, namespace string
}

// refKey identifies a reference: an objectKey, or a scope plus the canonical
// string of a selector (name is then empty).
type refKey struct {
	objectKey
	selector   string
	isSelector bool // labels.Everything() prints as "", so the string cannot tell
}

func (k refKey) scope() scopeKey {
	return scopeKey{group: k.group, kind: k.kind, namespace: k.namespace}
}

func (k refKey) String() string {
	gk := schema.GroupKind{Group: k.group, Kind: k.kind}.String()
	if k.isSelector {
		return fmt.Sprintf("%s %s selector %q", gk, k.namespace, k.selector)
	}
	return fmt.Sprintf("%s %s/%s", gk, k.namespace, k.name)
}

// key validates ref and returns its refKey, plus its parsed selector for a
// selector reference.
func (ref Reference) key() (refKey, labels.Selector, error) {
	if ref.Kind == "" {
		return refKey{}, nil, errors.New("tracker: reference has no Kind")
	}
	if ref.APIVersion == "" {
		return refKey{}, nil, errors.New("tracker: reference has no APIVersion")
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return refKey{}, nil, fmt.Errorf("tracker: reference APIVersion: %w", err)
	}
	k := refKey{objectKey: objectKey{group: gv.Group, kind: ref.Kind, namespace: ref.Namespace}}
	switch {
	case ref.Name != "" && ref.Selector != nil:
		return refKey{}, nil, errors.New("tracker: reference has both Name and Selector")
	case ref.Name == "" && ref.Selector == nil:
		return refKey{}, nil, errors.New("tracker: reference has neither Name nor Selector")
	case ref.Name != "":
		k.name = ref.Name
		return k, nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
	if err != nil {
		return refKey{}, nil, fmt.Errorf("tracker: reference Selector: %w", err)
	}
	return selectorKey(k.scope(), sel), sel, nil
}

func selectorKey(s scopeKey, sel labels.Selector) refKey {
	return selectorKeyString(s, sel.String())
}

func selectorKeyString(s scopeKey, selector string) refKey {
	return refKey{
		objectKey:  objectKey{group: s.group, kind: s.kind, namespace: s.namespace},
		selector:   selector,
		isSelector: true,
	}
}
