package route

import (
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// SetupWithManager registers the Route controller. Routes are woken by their own
// changes, by the KIngress and placeholder Service they own, by the tracker for the
// Configurations and Revisions they read (tracked), and by enqueue (the tracker's
// requeue of an observer that starts tracking something).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, tracked handler.EventHandler, enqueue source.Source, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("route").
		// Its own status writes cannot change the outcome; spec and metadata can.
		For(&v1.Route{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&netv1alpha1.Ingress{}).
		Owns(&corev1.Service{}).
		Watches(&v1.Configuration{}, tracked).
		Watches(&v1.Revision{}, tracked).
		WatchesRawSource(enqueue).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}
