package convergence

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// ref names one object of one kind.
type ref struct {
	kind string // group/Kind: "serving.knative.dev/Service", "/Service" (core)
	key  types.NamespacedName
}

func (r ref) String() string { return r.kind + " " + r.key.String() }

// change is one committed write, as a watch delivers it: the object after the write,
// or, for a deletion, its last state.
type change struct {
	rv      int64
	ref     ref
	obj     client.Object
	deleted bool
}

// store is the simulated API server: one linearizable history of writes, each with
// its resourceVersion, with the API server's rules that controllers rely on —
// conflicts on a stale resourceVersion, status and spec written apart, generation
// raised by a spec change only, status dropped on create, deletion by UID
// precondition, finalizers and owner references. It keeps every change for the
// informers, which read it at their own pace.
type store struct {
	scheme *runtime.Scheme
	now    func() time.Time
	rv     int64
	uids   int
	objs   map[ref]client.Object
	log    []change
	// onCommit, if set, sees every change as it is committed.
	onCommit func(change)
}

func newStore(scheme *runtime.Scheme, now func() time.Time) *store {
	return &store{scheme: scheme, now: now, objs: map[ref]client.Object{}}
}

func kindOf(scheme *runtime.Scheme, obj runtime.Object) string {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		panic(err)
	}
	return gvk.Group + "/" + gvk.Kind
}

func (s *store) refOf(obj client.Object) ref {
	return ref{kind: kindOf(s.scheme, obj), key: client.ObjectKeyFromObject(obj)}
}

func (s *store) groupResource(r ref) schema.GroupResource {
	gk := schema.ParseGroupKind(r.kind)
	return schema.GroupResource{Group: gk.Group, Resource: gk.Kind}
}

func (s *store) notFound(r ref) error { return apierrors.NewNotFound(s.groupResource(r), r.key.Name) }

func (s *store) conflict(r ref, why string) error {
	return apierrors.NewConflict(s.groupResource(r), r.key.Name, fmt.Errorf("%s", why))
}

// commit stores obj as the new state of r and logs it.
func (s *store) commit(r ref, obj client.Object) {
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	s.rv++
	obj.SetResourceVersion(strconv.FormatInt(s.rv, 10))
	s.objs[r] = obj
	s.log = append(s.log, change{rv: s.rv, ref: r, obj: obj.DeepCopyObject().(client.Object)})
	if s.onCommit != nil {
		s.onCommit(s.log[len(s.log)-1])
	}
}

func (s *store) get(r ref) (client.Object, bool) {
	o, ok := s.objs[r]
	if !ok {
		return nil, false
	}
	return o.DeepCopyObject().(client.Object), true
}

// list returns copies of the objects of kind in namespace ns ("" for all), by name.
func (s *store) list(kind, ns string) []client.Object {
	out := s.view(kind, ns)
	for i, o := range out {
		out[i] = o.DeepCopyObject().(client.Object)
	}
	return out
}

// view returns the stored objects of kind in namespace ns ("" for all), by name,
// without copying them: for the simulation's own reads on every step, which change
// nothing (copying every Deployment at each step was a tenth of a run).
func (s *store) view(kind, ns string) []client.Object {
	var out []client.Object
	for r, o := range s.objs {
		if r.kind == kind && (ns == "" || r.key.Namespace == ns) {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return client.ObjectKeyFromObject(out[i]).String() < client.ObjectKeyFromObject(out[j]).String()
	})
	return out
}

func (s *store) create(obj client.Object) error {
	if obj.GetName() == "" && obj.GetGenerateName() != "" {
		obj.SetName(fmt.Sprintf("%s%05d", obj.GetGenerateName(), s.uids+1))
	}
	r := s.refOf(obj)
	if _, ok := s.objs[r]; ok {
		return apierrors.NewAlreadyExists(s.groupResource(r), r.key.Name)
	}
	o := withoutStatus(obj)
	s.uids++
	o.SetUID(types.UID(fmt.Sprintf("uid-%d", s.uids)))
	o.SetGeneration(1)
	o.SetCreationTimestamp(metav1.NewTime(s.now().Truncate(time.Second)))
	o.SetDeletionTimestamp(nil)
	s.commit(r, o)
	return copyInto(o, obj)
}

// update writes obj's spec and metadata (status false) or its status (true), with
// obj's resourceVersion as a precondition when set.
func (s *store) update(obj client.Object, status bool) error {
	r := s.refOf(obj)
	cur, ok := s.objs[r]
	if !ok {
		return s.notFound(r)
	}
	if v := obj.GetResourceVersion(); v != "" && v != cur.GetResourceVersion() {
		return s.conflict(r, "the object has been modified; please apply your changes to the latest version and try again")
	}
	if obj.GetUID() != "" && obj.GetUID() != cur.GetUID() {
		return s.conflict(r, "UID mismatch")
	}
	return s.write(r, cur, obj, status)
}

// write makes next the new state of r (current cur): its status alone, or all but it.
func (s *store) write(r ref, cur, next client.Object, status bool) error {
	var o client.Object
	if status {
		o = cur.DeepCopyObject().(client.Object)
		setField(o, "status", field(next, "status"))
	} else {
		o = next.DeepCopyObject().(client.Object)
		setField(o, "status", field(cur, "status"))
		o.SetUID(cur.GetUID())
		o.SetCreationTimestamp(cur.GetCreationTimestamp())
		o.SetDeletionTimestamp(cur.GetDeletionTimestamp())
		o.SetGeneration(cur.GetGeneration())
		if !equality.Semantic.DeepEqual(spec(cur), spec(o)) {
			o.SetGeneration(cur.GetGeneration() + 1)
		}
	}
	o.SetResourceVersion(cur.GetResourceVersion())
	o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	if equality.Semantic.DeepEqual(o, cur) {
		// The API server skips a write that changes nothing: no new version, no event.
		return copyInto(cur, next)
	}
	if o.GetDeletionTimestamp() != nil && len(o.GetFinalizers()) == 0 {
		s.remove(r, o)
		return copyInto(o, next)
	}
	s.commit(r, o)
	return copyInto(o, next)
}

// patch applies a JSON or merge patch to obj's spec and metadata or to its status.
// Like the API server, it takes no resourceVersion precondition unless the patch
// carries one.
func (s *store) patch(obj client.Object, p client.Patch, status bool) error {
	r := s.refOf(obj)
	cur, ok := s.objs[r]
	if !ok {
		return s.notFound(r)
	}
	data, err := p.Data(obj)
	if err != nil {
		return err
	}
	doc, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	switch p.Type() {
	case types.JSONPatchType:
		jp, err := jsonpatch.DecodePatch(data)
		if err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		if doc, err = jp.Apply(doc); err != nil {
			// As the API server answers a failed test or a bad path.
			return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", s.groupResource(r), r.key.Name, err.Error(), 0, false)
		}
	case types.MergePatchType:
		if doc, err = jsonpatch.MergePatch(doc, data); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
	default:
		return fmt.Errorf("the simulation does not take %s patches", p.Type())
	}
	next := reflect.New(reflect.TypeOf(cur).Elem()).Interface().(client.Object)
	if err := json.Unmarshal(doc, next); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if next.GetResourceVersion() != cur.GetResourceVersion() {
		return s.conflict(r, "resourceVersion precondition failed")
	}
	if err := s.write(r, cur, next, status); err != nil {
		return err
	}
	return copyInto(next, obj)
}

// delete deletes r (with UID and resourceVersion preconditions if set); objects with finalizers
// get a deletionTimestamp instead.
func (s *store) delete(r ref, uid types.UID, rv string) error {
	cur, ok := s.objs[r]
	if !ok {
		return s.notFound(r)
	}
	if uid != "" && uid != cur.GetUID() {
		return s.conflict(r, "UID precondition failed")
	}
	if rv != "" && rv != cur.GetResourceVersion() {
		return s.conflict(r, "resourceVersion precondition failed")
	}
	if len(cur.GetFinalizers()) > 0 {
		if cur.GetDeletionTimestamp() == nil {
			o := cur.DeepCopyObject().(client.Object)
			now := metav1.NewTime(s.now())
			o.SetDeletionTimestamp(&now)
			s.commit(r, o)
		}
		return nil
	}
	s.remove(r, cur)
	return nil
}

func (s *store) remove(r ref, last client.Object) {
	delete(s.objs, r)
	s.rv++
	s.log = append(s.log, change{rv: s.rv, ref: r, obj: last.DeepCopyObject().(client.Object), deleted: true})
	if s.onCommit != nil {
		s.onCommit(s.log[len(s.log)-1])
	}
}

// orphans returns the objects whose controlling owner or every owner is gone: the
// garbage collector's work, which the simulation does at its own time.
func (s *store) orphans() []ref {
	uids := map[types.UID]bool{}
	for _, o := range s.objs {
		uids[o.GetUID()] = true
	}
	var out []ref
	for r, o := range s.objs {
		owners := o.GetOwnerReferences()
		if len(owners) == 0 {
			continue
		}
		alive := false
		for _, ow := range owners {
			alive = alive || uids[ow.UID]
		}
		if !alive {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// copyInto replaces dst with src, as a client's write refreshes the object it was
// given. dst is zeroed first: encoding/json would keep the fields of slice elements
// it decodes into.
func copyInto(src, dst client.Object) error {
	data, err := json.Marshal(src)
	if err != nil {
		return err
	}
	v := reflect.ValueOf(dst).Elem()
	v.Set(reflect.Zero(v.Type()))
	return json.Unmarshal(data, dst)
}

func withoutStatus(obj client.Object) client.Object {
	o := obj.DeepCopyObject().(client.Object)
	setField(o, "status", nil)
	o.SetResourceVersion("")
	return o
}

// field and setField read and write a top-level field of a typed object through its
// unstructured form.
func field(obj client.Object, name string) any {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(err)
	}
	return u[name]
}

func setField(obj client.Object, name string, v any) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(err)
	}
	if v == nil {
		delete(u, name)
	} else {
		u[name] = runtime.DeepCopyJSONValue(v)
	}
	// A fresh value of the type, so that fields absent from u are zeroed.
	fresh := reflect.New(reflect.TypeOf(obj).Elem())
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, fresh.Interface()); err != nil {
		panic(err)
	}
	reflect.ValueOf(obj).Elem().Set(fresh.Elem())
}

// spec is everything of obj but its metadata and status: what raises the generation.
func spec(obj client.Object) map[string]any {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(err)
	}
	delete(u, "metadata")
	delete(u, "status")
	delete(u, "apiVersion")
	delete(u, "kind")
	return u
}

// before is the object as the commit ch found it: its previous version in the log
// (false if ch created it).
func (s *store) before(ch change) (client.Object, bool) {
	for i := len(s.log) - 1; i >= 0; i-- {
		if c := s.log[i]; c.rv < ch.rv && c.ref == ch.ref {
			return c.obj, !c.deleted
		}
	}
	return nil, false
}
