package convergence

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cacheClient is what a process's reconcilers are given as their client: reads come
// from the process's informers, writes go to the store through the simulation, which
// may let events through, crash the process, or hold the write in flight around each
// of them. Methods the reconcilers do not call panic (the embedded nil Client).
type cacheClient struct {
	client.Client
	p *process
	// calm reads let nothing else happen meanwhile: a gateway replica's Lease reads,
	// which run under a lock its Lease handler takes too (in the replica, handlers
	// run on goroutines of their own; here they would run inside the read).
	calm bool
}

func (c cacheClient) Scheme() *runtime.Scheme { return c.p.sim.scheme }
func (c cacheClient) RESTMapper() meta.RESTMapper {
	return c.p.sim.mapper
}
func (c cacheClient) GroupVersionKindFor(obj runtime.Object) (schema.GroupVersionKind, error) {
	return c.p.sim.mapper.gvkFor(obj)
}
func (c cacheClient) IsObjectNamespaced(runtime.Object) (bool, error) { return true, nil }

func (c cacheClient) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if !c.calm {
		c.p.sim.interleave(c.p)
	}
	inf := c.p.informer(kindOf(c.p.sim.scheme, obj))
	o, ok := inf.objs[key]
	// What was read may be stale by the time the reconciler acts on it: the window
	// between a read and tracking what was read is where knative/serving#2954 lost
	// its update.
	if !c.calm {
		defer c.p.sim.racePastRead(c.p, inf)
	}
	if !ok {
		return c.p.sim.store.notFound(ref{kind: inf.kind, key: key})
	}
	return inf.copyOut(key, o, obj)
}

func (c cacheClient) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if !c.calm {
		c.p.sim.interleave(c.p)
	}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	kind := strings.TrimSuffix(kindOf(c.p.sim.scheme, list), "List")
	inf := c.p.informer(kind)
	var items []runtime.Object
	for _, key := range sortedKeys(inf.objs) {
		o := inf.objs[key]
		if lo.Namespace != "" && o.GetNamespace() != lo.Namespace {
			continue
		}
		if lo.LabelSelector != nil && !lo.LabelSelector.Matches(labels.Set(o.GetLabels())) {
			continue
		}
		if !inf.matchesFields(o, lo) {
			continue
		}
		items = append(items, o.DeepCopyObject())
	}
	return meta.SetList(list, items)
}

func (inf *informer) matchesFields(o client.Object, lo *client.ListOptions) bool {
	if lo.FieldSelector == nil || lo.FieldSelector.Empty() {
		return true
	}
	for _, r := range lo.FieldSelector.Requirements() {
		fn, ok := inf.indexes[r.Field]
		if !ok {
			panic(fmt.Sprintf("no index %q on %s", r.Field, inf.kind))
		}
		found := false
		for _, v := range fn(o) {
			found = found || v == r.Value
		}
		if !found {
			return false
		}
	}
	return true
}

func (c cacheClient) Create(_ context.Context, obj client.Object, _ ...client.CreateOption) error {
	return c.p.sim.write(c.p, "create", obj, false, func(o client.Object) error { return c.p.sim.store.create(o) })
}

func (c cacheClient) Update(_ context.Context, obj client.Object, _ ...client.UpdateOption) error {
	return c.p.sim.write(c.p, "update", obj, false, func(o client.Object) error { return c.p.sim.store.update(o, false) })
}

func (c cacheClient) Patch(_ context.Context, obj client.Object, p client.Patch, _ ...client.PatchOption) error {
	return c.p.sim.write(c.p, "patch", obj, false, func(o client.Object) error { return c.p.sim.store.patch(o, p, false) })
}

func (c cacheClient) Delete(_ context.Context, obj client.Object, opts ...client.DeleteOption) error {
	do := (&client.DeleteOptions{}).ApplyOptions(opts)
	var uid types.UID
	var rv string
	if do.Preconditions != nil && do.Preconditions.UID != nil {
		uid = *do.Preconditions.UID
	}
	if do.Preconditions != nil && do.Preconditions.ResourceVersion != nil {
		rv = *do.Preconditions.ResourceVersion
	}
	r := c.p.sim.store.refOf(obj)
	return c.p.sim.write(c.p, "delete", obj, false, func(client.Object) error { return c.p.sim.store.delete(r, uid, rv) })
}

func (c cacheClient) Status() client.SubResourceWriter { return c.SubResource("status") }

func (c cacheClient) SubResource(sub string) client.SubResourceClient {
	return subResourceClient{p: c.p, sub: sub}
}

// subResourceClient writes the status, or a Deployment's scale (a merge patch of
// spec.replicas applies to the Deployment as it is).
type subResourceClient struct {
	client.SubResourceClient
	p   *process
	sub string
}

func (c subResourceClient) Update(_ context.Context, obj client.Object, _ ...client.SubResourceUpdateOption) error {
	if c.sub != "status" {
		panic("the simulation updates no subresource but status")
	}
	return c.p.sim.write(c.p, "update status", obj, true, func(o client.Object) error { return c.p.sim.store.update(o, true) })
}

func (c subResourceClient) Patch(_ context.Context, obj client.Object, p client.Patch, _ ...client.SubResourcePatchOption) error {
	status := c.sub == "status"
	if !status && c.sub != "scale" {
		panic("the simulation patches no subresource but status and scale")
	}
	return c.p.sim.write(c.p, "patch "+c.sub, obj, status, func(o client.Object) error { return c.p.sim.store.patch(o, p, status) })
}

// apiReader reads the store directly, as a manager's APIReader reads the API server.
type apiReader struct{ sim *Sim }

func (r apiReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	ref := ref{kind: kindOf(r.sim.scheme, obj), key: key}
	o, ok := r.sim.store.get(ref)
	if !ok {
		return r.sim.store.notFound(ref)
	}
	return copyInto(o, obj)
}

func (r apiReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	var items []runtime.Object
	for _, o := range r.sim.store.list(strings.TrimSuffix(kindOf(r.sim.scheme, list), "List"), lo.Namespace) {
		if lo.LabelSelector == nil || lo.LabelSelector.Matches(labels.Set(o.GetLabels())) {
			items = append(items, o)
		}
	}
	return meta.SetList(list, items)
}
