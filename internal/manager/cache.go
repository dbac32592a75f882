package manager

import (
	"context"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/gateway"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cacheOptions keep in memory only what Ferry reads. The informers' copies are most of
// the controller's memory, and at scale most of them are objects Ferry never looks at
// or fields it never reads:
//   - managedFields, on every object, are often larger than the rest of it;
//   - Pods of other workloads: only those of Revisions (labelled with
//     serving.knative.dev/revision from the template) are read, through that label;
//   - a Pod's spec: the Revision reconciler reads only the status, to say why pods do
//     not start, and the gateway the status and spec.nodeName, to route to ready pods
//     (and tell kwok's from real ones); the Deployment reports the rest.
//
// Deployments are all kept: one named like a Revision's but not Ferry's must be seen,
// so that the Revision reports NotOwned instead of retrying a create that conflicts.
//
// Leases are the gateway replicas' only (leaseNamespace, "" without a gateway that
// keeps one): the gateway may read no other, and they are all it reads.
func cacheOptions(leaseNamespace string) cache.Options {
	ofRevisions := labels.NewSelector().Add(mustRequirement(servingv1.RevisionLabelKey, selection.Exists))
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: ofRevisions, Transform: podStatusOnly},
		},
	}
	if leaseNamespace != "" {
		opts.ByObject[&coordinationv1.Lease{}] = cache.ByObject{
			Namespaces: map[string]cache.Config{leaseNamespace: {}},
			Label:      labels.NewSelector().Add(mustRequirement(gateway.ReplicaLabel, selection.Exists)),
		}
	}
	return opts
}

// podStatusOnly drops what the cache need not keep of a Pod: its spec and managed
// fields. The metadata (labels, owners) and the status stay.
func podStatusOnly(o any) (any, error) {
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return o, nil // a tombstone
	}
	pod.ManagedFields = nil
	pod.Spec = corev1.PodSpec{NodeName: pod.Spec.NodeName}
	return pod, nil
}

func mustRequirement(key string, op selection.Operator) labels.Requirement {
	r, err := labels.NewRequirement(key, op, nil)
	if err != nil {
		panic(err) // only a programming error: the key is a constant
	}
	return *r
}

// stoppableCache is a cache the manager waits for at start (its own, the config
// Store), whose WaitForCacheSync also ends, saying synced, once stopping is done.
// controller-runtime v0.25 waits for its caches in a loop that spins once its context
// is cancelled, until they sync (kubernetes-sigs/controller-runtime#3440): a manager
// stopped before they sync (API server gone, RBAC missing) burnt a core and never
// exited. Saying synced lets that loop return and the stop go on.
type stoppableCache struct {
	cache.Cache
	stopping context.Context
}

func newStoppableCache(stopping context.Context) cache.NewCacheFunc {
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		c, err := cache.New(cfg, opts)
		return &stoppableCache{Cache: c, stopping: stopping}, err
	}
}

func (c *stoppableCache) WaitForCacheSync(ctx context.Context) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.stopping, cancel)()
	return c.Cache.WaitForCacheSync(ctx) || c.stopping.Err() != nil
}
