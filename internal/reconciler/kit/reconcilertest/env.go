package reconcilertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/api/scheme"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/api/serving/v1beta1"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/index"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/refusal"
)

// Verbs of recorded writes.
const (
	Create = "create"
	Update = "update"
	Patch  = "patch"
	// Status is a write of the status subresource (update or patch).
	Status = "status"
	// Scale is a write of the scale subresource.
	Scale  = "scale"
	Delete = "delete"
)

// Write is one write the reconciler made through the client.
type Write struct {
	// Verb is Create, Update, Patch, Status, Scale or Delete.
	Verb string
	// Kind is the written object's kind (Deployment, not Scale, for a scale write).
	Kind string
	Key  types.NamespacedName
	// Object is a copy of the object as the fake API server stored it after the write
	// (for Delete, as the reconciler passed it).
	Object client.Object
	// Patch is the raw patch of a Patch, Status or Scale write made by patch.
	Patch string
}

// String is "verb Kind namespace/name", the form tables list writes in.
func (w Write) String() string { return fmt.Sprintf("%s %s %s", w.Verb, w.Kind, w.Key) }

// Failure makes the fake API server refuse a write with Err: the first write
// matching Verb, Kind and Name (an empty Name matches any). Times says how many matching
// writes fail (0: all of them).
type Failure struct {
	Verb, Kind, Name string
	Err              error
	Times            int
}

// Forbidden is the API server's answer when RBAC, a quota or an admission policy
// refuses a write: "<resource> "<name>" is forbidden: <message>".
func Forbidden(resource, name, message string) error {
	gr := schema.ParseGroupResource(resource)
	return apierrors.NewForbidden(gr, name, errors.New(message))
}

// Env is one case's fake API server, write log and Event recorder.
type Env struct {
	// Client is the fake client, reading what was seeded and written, with every write
	// recorded. It serves as cache, API reader and writer at once.
	Client client.Client
	// Raw is the same fake API server without the recording, for a test's own reads
	// and writes.
	Raw client.Client
	// Events records the Events the reconciler emits.
	Events *Events
	// Scheme is the client's scheme.
	Scheme *runtime.Scheme

	reconciler reconcile.Reconciler
	key        types.NamespacedName

	mu       sync.Mutex
	writes   []Write
	failures []Failure
	failed   []int
}

// New returns an Env whose API server holds objs. The Knative kinds, Deployments,
// HorizontalPodAutoscalers, Pods and Services have their status subresource, and the
// cache's field indexes are those of package index.
func New(t testing.TB, objs []client.Object, failures ...Failure) *Env {
	t.Helper()
	e := &Env{Events: &Events{}, Scheme: scheme.New(), failures: failures, failed: make([]int, len(failures))}
	seed := make([]client.Object, len(objs))
	for i, o := range objs {
		seed[i] = o.DeepCopyObject().(client.Object)
	}
	b := fake.NewClientBuilder().WithScheme(e.Scheme).WithObjects(seed...).
		WithStatusSubresource(&v1.Service{}, &v1.Configuration{}, &v1.Revision{}, &v1.Route{}, &v1beta1.DomainMapping{},
			&av1alpha1.PodAutoscaler{}, &netv1alpha1.Ingress{}, &appsv1.Deployment{},
			&autoscalingv2.HorizontalPodAutoscaler{}, &corev1.Pod{}, &corev1.Service{})
	if err := index.Register(context.Background(), indexer{b}); err != nil {
		t.Fatal(err)
	}
	e.Raw = b.Build()
	e.Client = interceptor.NewClient(e.Raw.(client.WithWatch), e.funcs())
	return e
}

// indexer hands package index's field indexes to the fake client's builder.
type indexer struct{ b *fake.ClientBuilder }

func (i indexer) IndexField(_ context.Context, obj client.Object, field string, fn client.IndexerFunc) error {
	i.b.WithIndex(obj, field, fn)
	return nil
}

// Writes returns the writes so far, in the order they were made.
func (e *Env) Writes() []Write {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.writes)
}

// WriteList returns the writes so far as strings (Write.String), sorted: reconcilers
// write some children side by side, in no fixed order.
func (e *Env) WriteList() []string {
	var out []string
	for _, w := range e.Writes() {
		out = append(out, w.String())
	}
	slices.Sort(out)
	return out
}

// Reset forgets the writes and Events so far, for a test that reconciles again.
func (e *Env) Reset() {
	e.mu.Lock()
	e.writes = nil
	e.mu.Unlock()
	e.Events.Reset()
}

// QuietWithinBackOff reconciles again right after a refused write and checks what a
// user would see: the owner is requeued for when the back-off ends, and until then the
// write is not tried again, the failure not written again, nor reported again.
func (e *Env) QuietWithinBackOff(t *testing.T) {
	t.Helper()
	e.Reset()
	res, err := e.Reconcile()
	if err != nil || res.RequeueAfter <= 0 || res.RequeueAfter > refusal.DefaultInitial {
		t.Errorf("second reconcile: %+v, %v; want a requeue within the back-off", res, err)
	}
	if w, ev := e.WriteList(), e.Events.List(); len(w) != 0 || len(ev) != 0 {
		t.Errorf("second reconcile wrote %v and said %v", w, ev)
	}
}

// Written returns the object of the last write with verb of the kind and name, or nil.
func (e *Env) Written(verb, kind, name string) client.Object {
	ws := e.Writes()
	for i := len(ws) - 1; i >= 0; i-- {
		if w := ws[i]; w.Verb == verb && w.Kind == kind && w.Key.Name == name {
			return w.Object
		}
	}
	return nil
}

// Get reads key from the fake API server into obj, without recording; it reports
// whether the object exists.
func (e *Env) Get(t testing.TB, key types.NamespacedName, obj client.Object) bool {
	t.Helper()
	err := e.Raw.Get(context.Background(), key, obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

func (e *Env) kind(obj runtime.Object) string {
	gvk, err := apiutil.GVKForObject(obj, e.Scheme)
	if err != nil {
		return fmt.Sprintf("%T", obj)
	}
	return gvk.Kind
}

// refuse returns the error of the first Failure that matches the write, if any.
func (e *Env) refuse(verb string, obj client.Object) error {
	kind := e.kind(obj)
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, f := range e.failures {
		if f.Verb != verb || f.Kind != kind || (f.Name != "" && f.Name != obj.GetName()) {
			continue
		}
		if f.Times > 0 && e.failed[i] >= f.Times {
			continue
		}
		e.failed[i]++
		return f.Err
	}
	return nil
}

func (e *Env) record(verb string, obj client.Object, patch client.Patch) {
	w := Write{Verb: verb, Kind: e.kind(obj), Key: client.ObjectKeyFromObject(obj), Object: obj.DeepCopyObject().(client.Object)}
	if patch != nil {
		if data, err := patch.Data(obj); err == nil {
			w.Patch = string(data)
		}
	}
	e.mu.Lock()
	e.writes = append(e.writes, w)
	e.mu.Unlock()
}

// funcs intercept every write: a matching Failure refuses it, else it goes through
// and, if it succeeds, is recorded.
func (e *Env) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := e.refuse(Create, obj); err != nil {
				return err
			}
			// As the API server does: a new object is generation 1, with a UID.
			obj.SetGeneration(1)
			if obj.GetUID() == "" {
				obj.SetUID(types.UID("uid-" + obj.GetName()))
			}
			if err := c.Create(ctx, obj, opts...); err != nil {
				return err
			}
			e.record(Create, obj, nil)
			return nil
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := e.refuse(Update, obj); err != nil {
				return err
			}
			if err := e.nextGeneration(ctx, c, obj); err != nil {
				return err
			}
			if err := c.Update(ctx, obj, opts...); err != nil {
				return err
			}
			e.record(Update, obj, nil)
			return nil
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := e.refuse(Patch, obj); err != nil {
				return err
			}
			if err := c.Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			e.record(Patch, obj, patch)
			return nil
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := e.refuse(Delete, obj); err != nil {
				return err
			}
			if err := c.Delete(ctx, obj, opts...); err != nil {
				return err
			}
			e.record(Delete, obj, nil)
			return nil
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			return fmt.Errorf("reconcilertest: DeleteAllOf %T is not recorded", obj)
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			return fmt.Errorf("reconcilertest: create of subresource %s of %T is not recorded", sub, obj)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			verb := e.subVerb(sub)
			if err := e.refuse(verb, obj); err != nil {
				return err
			}
			if sub == "scale" {
				return fmt.Errorf("reconcilertest: scale updates are not supported, only patches")
			}
			if err := c.SubResource(sub).Update(ctx, obj, opts...); err != nil {
				return err
			}
			e.record(verb, obj, nil)
			return nil
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			verb := e.subVerb(sub)
			if err := e.refuse(verb, obj); err != nil {
				return err
			}
			if sub == "scale" {
				// The fake client cannot patch a scale subresource. Its patch touches
				// nothing but spec.replicas, which the same patch of the object does.
				if err := e.patchScale(ctx, c, obj, patch); err != nil {
					return err
				}
			} else if err := c.SubResource(sub).Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			e.record(verb, obj, patch)
			return nil
		},
	}
}

func (e *Env) subVerb(sub string) string {
	switch sub {
	case "status":
		return Status
	case "scale":
		return Scale
	}
	return sub
}

// nextGeneration sets obj's generation as the API server would on its update: one
// more than the stored object's when anything but metadata and status changes.
func (e *Env) nextGeneration(ctx context.Context, c client.Client, obj client.Object) error {
	old := obj.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), old); err != nil {
		return err
	}
	gen := old.GetGeneration()
	if changed, err := specChanged(old, obj); err != nil {
		return err
	} else if changed {
		gen++
	}
	obj.SetGeneration(gen)
	return nil
}

// patchScale applies a scale subresource patch, which touches nothing but
// spec.replicas, as the same patch of the object, and raises the generation if the
// replicas changed.
func (e *Env) patchScale(ctx context.Context, c client.Client, obj client.Object, patch client.Patch) error {
	old := obj.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), old); err != nil {
		return err
	}
	if err := c.Patch(ctx, obj, patch); err != nil {
		return err
	}
	changed, err := specChanged(old, obj)
	if err != nil || !changed {
		return err
	}
	obj.SetGeneration(old.GetGeneration() + 1)
	return c.Update(ctx, obj)
}

// specChanged reports whether anything but metadata and status differs.
func specChanged(old, new client.Object) (bool, error) {
	o, err := runtime.DefaultUnstructuredConverter.ToUnstructured(old)
	if err != nil {
		return false, err
	}
	n, err := runtime.DefaultUnstructuredConverter.ToUnstructured(new)
	if err != nil {
		return false, err
	}
	for _, m := range []map[string]any{o, n} {
		delete(m, "metadata")
		delete(m, "status")
		delete(m, "kind")
		delete(m, "apiVersion")
	}
	return !equality.Semantic.DeepEqual(o, n), nil
}
