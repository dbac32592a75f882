package domainmapping

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/api/serving/v1beta1"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/terminating"
	"github.com/ferry-serving/ferry/internal/watches"
)

// Controller is what wakes the reconciler: its DomainMappings (but for its own status
// writes), their KIngresses and Certificates, the ClusterDomainClaim of their domain (a claim created
// or deleted moves DomainClaimed), and the objects they may name, Knative Services and
// Routes and Kubernetes Services, whose address moves ReferenceResolved. DomainMappings
// are few: an event of a named kind lists the DomainMappings of its namespace from the
// cache and wakes those that name it.
func (r *Reconciler) Controller(o watches.Owners) watches.Controller {
	return watches.Controller{
		Name: "domainmapping",
		Watches: []watches.Watch{
			{Object: &v1beta1.DomainMapping{}, Handler: watches.Enqueue(), Predicates: []predicate.Predicate{r.Status.Changes()}},
			{Object: &netv1alpha1.Ingress{}, Handler: watches.Owner(o, &v1beta1.DomainMapping{})},
			{Object: &netv1alpha1.Certificate{}, Handler: watches.Owner(o, &v1beta1.DomainMapping{})},
			{Object: &netv1alpha1.ClusterDomainClaim{}, Handler: handler.EnqueueRequestsFromMapFunc(r.mappingsOfDomain)},
			{Object: &v1.Service{}, Handler: r.referrers(v1.SchemeGroupVersion.WithKind("Service"))},
			{Object: &v1.Route{}, Handler: r.referrers(v1.SchemeGroupVersion.WithKind("Route"))},
			{Object: &corev1.Service{}, Handler: r.referrers(corev1.SchemeGroupVersion.WithKind("Service"))},
		},
		Reconciler: terminating.Ignore(r),
	}
}

// mappingsOfDomain wakes the DomainMappings, in any namespace, of a claim's domain.
func (r *Reconciler) mappingsOfDomain(ctx context.Context, claim client.Object) []reconcile.Request {
	var list v1beta1.DomainMappingList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, dm := range list.Items {
		if dm.Name == claim.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: dm.Namespace, Name: dm.Name}})
		}
	}
	return reqs
}

// referrers wakes the DomainMappings of an object's namespace whose reference names it.
func (r *Reconciler) referrers(gvk schema.GroupVersionKind) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list v1beta1.DomainMappingList
		if err := r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, dm := range list.Items {
			ref := dm.Spec.Ref
			ns := ref.Namespace
			if ns == "" {
				ns = dm.Namespace
			}
			if ref.Name == obj.GetName() && ns == obj.GetNamespace() && ref.Kind == gvk.Kind && ref.APIVersion == gvk.GroupVersion().String() {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: dm.Namespace, Name: dm.Name}})
			}
		}
		return reqs
	})
}
