package explain

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Snapshot is a client.Reader over lists taken once. Read through it builds many
// chains for one list per kind, where each chain read from the API server costs a
// dozen requests: `ferry scale` explains every stuck Service of a run at once. A kind
// it was not given reads as NotFound and as an empty list. The zero value is empty.
type Snapshot struct {
	byList map[reflect.Type][]client.Object                    // by the list's type
	byKey  map[reflect.Type]map[client.ObjectKey]client.Object // by the object's type
}

// AddList adds the items of a typed list (*v1.ServiceList, ...).
func (s *Snapshot) AddList(l client.ObjectList) error {
	items, err := meta.ExtractList(l)
	if err != nil {
		return err
	}
	if s.byList == nil {
		s.byList = map[reflect.Type][]client.Object{}
	}
	lt := reflect.TypeOf(l)
	for _, item := range items {
		obj, ok := item.(client.Object)
		if !ok {
			return fmt.Errorf("snapshot: %T in %T is not an object", item, l)
		}
		s.byList[lt] = append(s.byList[lt], obj)
		s.index(obj)
	}
	return nil
}

// Add puts obj in the snapshot for Get, unless it holds an object of that kind and
// name already: a list's copy is what the snapshot stands for.
func (s *Snapshot) Add(obj client.Object) {
	if _, ok := s.byKey[reflect.TypeOf(obj)][client.ObjectKeyFromObject(obj)]; !ok {
		s.index(obj)
	}
}

func (s *Snapshot) index(obj client.Object) {
	if s.byKey == nil {
		s.byKey = map[reflect.Type]map[client.ObjectKey]client.Object{}
	}
	t := reflect.TypeOf(obj)
	if s.byKey[t] == nil {
		s.byKey[t] = map[client.ObjectKey]client.Object{}
	}
	s.byKey[t][client.ObjectKeyFromObject(obj)] = obj
}

// Get copies the object of obj's kind named key into obj.
func (s *Snapshot) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	found, ok := s.byKey[reflect.TypeOf(obj)][key]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: fmt.Sprintf("%T", obj)}, key.Name)
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(found.DeepCopyObject()).Elem())
	return nil
}

// List copies into list the objects of its kind in the options' namespace that match
// their label selector. It cannot filter by field.
func (s *Snapshot) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	objs, ok := s.byList[reflect.TypeOf(list)]
	if !ok {
		return nil
	}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	if lo.FieldSelector != nil && !lo.FieldSelector.Empty() {
		return errors.New("snapshot: cannot list by field")
	}
	var out []runtime.Object
	for _, o := range objs {
		if lo.Namespace != "" && o.GetNamespace() != lo.Namespace {
			continue
		}
		if lo.LabelSelector != nil && !lo.LabelSelector.Matches(labels.Set(o.GetLabels())) {
			continue
		}
		out = append(out, o.DeepCopyObject())
	}
	return meta.SetList(list, out)
}
