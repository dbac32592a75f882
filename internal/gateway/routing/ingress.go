package routing

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/watches"
)

// ServedHere reports whether the gateway implements ing's ingress class.
func ServedHere(ing *v1alpha1.Ingress) bool {
	class := ing.Annotations[v1alpha1.IngressClassAnnotationKey]
	return class == "" || class == v1alpha1.IngressClass
}

// ingressReconciler programs one KIngress into the routing table, then reports the
// outcome in its status.
type ingressReconciler struct {
	client client.Client
	// apiReader reads past the cache after a write conflict.
	apiReader  client.Reader
	services   *backends.Registry
	programmer *Programmer
	// requeue feeds back ingresses whose hosts changed hands while programming
	// another one.
	requeue chan event.GenericEvent
	// publicDomain and privateDomain are reported as the load balancers.
	publicDomain, privateDomain string
	// replicas are the other gateway replicas, whose records say whether they serve
	// an ingress; nil: this replica is alone.
	replicas *backends.ReplicaSet
}

// SetupIngresses registers the KIngress reconciler with mgr (IngressController).
func SetupIngresses(mgr ctrl.Manager, p *Programmer, requeue chan event.GenericEvent, replicas *backends.ReplicaSet, publicDomain, privateDomain string) error {
	if err := IngressController(mgr.GetClient(), mgr.GetAPIReader(), p, requeue, replicas, publicDomain, privateDomain).Register(mgr, 4); err != nil {
		return fmt.Errorf("setting up the KIngress reconciler: %w", err)
	}
	return nil
}

// IngressController is the KIngress reconciler and what wakes it, in every replica: it
// programs p and writes each ingress's status, naming publicDomain and privateDomain as
// its load balancers. requeue feeds ingresses back to it, from the programmer and from
// replicas (nil: this replica is alone), whose Leases it watches too.
func IngressController(c client.Client, apiReader client.Reader, p *Programmer, requeue chan event.GenericEvent, replicas *backends.ReplicaSet, publicDomain, privateDomain string) watches.Controller {
	ingresses := &ingressReconciler{
		client:        c,
		apiReader:     apiReader,
		services:      p.services,
		programmer:    p,
		requeue:       requeue,
		publicDomain:  publicDomain,
		privateDomain: privateDomain,
		replicas:      replicas,
	}
	ctl := watches.Controller{
		Name:         "gateway-ingress",
		Watches:      []watches.Watch{{Object: &v1alpha1.Ingress{}, Handler: watches.Enqueue()}},
		Sources:      []source.Source{source.Channel(requeue, watches.Enqueue())},
		Reconciler:   ingresses,
		EveryReplica: true,
	}
	if replicas != nil {
		// Another replica's record, or one coming or going, may make an ingress Ready.
		ctl.Watches = append(ctl.Watches, watches.Watch{Object: &coordinationv1.Lease{}, Handler: handler.EnqueueRequestsFromMapFunc(replicas.Affected)})
	}
	return ctl
}

func (r *ingressReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ing := &v1alpha1.Ingress{}
	if err := r.client.Get(ctx, req.NamespacedName, ing); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		// Deleted, including deletions the informer only saw as a tombstone: the
		// request carries the key, and the key is all forgetting needs.
		r.replicas.Forget(req.NamespacedName)
		return reconcile.Result{}, r.requeueAll(ctx, r.programmer.forget(req.NamespacedName))
	}
	if !ServedHere(ing) {
		// The class may have moved to another implementation: stop serving it.
		r.replicas.Forget(req.NamespacedName)
		return reconcile.Result{}, r.requeueAll(ctx, r.programmer.forget(req.NamespacedName))
	}

	ci := r.programmer.compiled(req.NamespacedName)
	if ci == nil || ci.uid != ing.UID || ci.generation != ing.Generation {
		ci = compileIngress(ing, r.services)
	}
	conflicts, affected := r.programmer.program(ci)
	if err := r.requeueAll(ctx, affected); err != nil {
		return reconcile.Result{}, err
	}
	// program has published the table holding ci: from here on, a Ready status for
	// this generation is true of this replica's data plane. The others say so in
	// their Leases; until they all do, it is not Ready.
	if ing.Status.ObservedGeneration < ci.generation || backends.WaitingForReplicas(&ing.Status) {
		r.replicas.Programmed(ci.key, ci.uid, ci.generation)
	}
	allServe := r.replicas.ServedByAll(ctx, ci.key, ci.uid, ci.generation)
	return reconcile.Result{}, r.updateStatus(ctx, ing, ci, conflicts, allServe)
}

// updateStatus writes the status for ci in one update, if it changed. On a conflict it
// rereads the ingress from the API server, and gives up when that holds another
// generation: its own reconcile will report on it.
func (r *ingressReconciler) updateStatus(ctx context.Context, ing *v1alpha1.Ingress, ci *compiledIngress, conflicts []hostConflict, allServe bool) error {
	current := ing
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if current == nil {
			fresh := &v1alpha1.Ingress{}
			if err := r.apiReader.Get(ctx, ci.key, fresh); err != nil {
				return client.IgnoreNotFound(err)
			}
			if fresh.UID != ci.uid || fresh.Generation != ci.generation {
				return nil
			}
			current = fresh
		}
		want := current.DeepCopy()
		markStatus(&want.Status, ci, conflicts, r.publicDomain, r.privateDomain, allServe)
		if equality.Semantic.DeepEqual(want.Status, current.Status) {
			return nil
		}
		current = nil
		return r.client.Status().Update(ctx, want)
	})
}

func (r *ingressReconciler) requeueAll(ctx context.Context, keys []types.NamespacedName) error {
	for _, key := range keys {
		ev := event.GenericEvent{Object: &v1alpha1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
		select {
		case r.requeue <- ev:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
