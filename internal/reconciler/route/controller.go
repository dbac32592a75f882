package route

import (
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler/oldestfirst"
	"github.com/ferry-serving/ferry/internal/reconciler/terminating"
)

// SetupWithManager registers the Route controller. Routes are woken by their own
// changes, by the KIngress and placeholder Service they own, by the tracker for the
// Configurations and Revisions they read (tracked), and by enqueue (the tracker's
// requeue of an observer that starts tracking something), and by more (a change of
// config-domain or config-network, which wakes every Route).
//
// Updates of a Configuration or Revision that leave alone what traffic resolution reads
// of it (a Revision's replicas, a Configuration's latest created Revision) are dropped
// before the tracker: they would wake every Route that names the object for nothing.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, tracked handler.EventHandler, enqueue source.Source, workers int, more ...source.Source) error {
	ages := oldestfirst.New()
	b := ctrl.NewControllerManagedBy(mgr)
	for _, src := range more {
		b = b.WatchesRawSource(src)
	}
	return b.
		Named("route").
		// Its own status writes cannot change the outcome; anything else can, a stale
		// status another controller wrote included.
		Watches(&v1.Route{}, ages.Object(), builder.WithPredicates(r.Status.Changes())).
		Watches(&netv1alpha1.Ingress{}, ages.Owner(mgr, &v1.Route{})).
		Watches(&corev1.Service{}, ages.Owner(mgr, &v1.Route{})).
		Watches(&v1.Configuration{}, ages.Handler(tracked), builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			return routingOfConfiguration(e.ObjectOld.(*v1.Configuration)) != routingOfConfiguration(e.ObjectNew.(*v1.Configuration))
		}})).
		Watches(&v1.Revision{}, ages.Handler(tracked), builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			return routingOfRevision(e.ObjectOld.(*v1.Revision)) != routingOfRevision(e.ObjectNew.(*v1.Revision))
		}})).
		WatchesRawSource(enqueue).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(terminating.Ignore(r))
}

// configurationRouting is what traffic resolution reads of a Configuration.
type configurationRouting struct {
	latestReady string
	failed      bool
}

func routingOfConfiguration(c *v1.Configuration) configurationRouting {
	return configurationRouting{c.Status.LatestReadyRevisionName, c.Status.GetCondition(v1.ConfigurationConditionReady).IsFalse()}
}

// revisionRouting is what traffic resolution reads of a Revision.
type revisionRouting struct{ ready, failed bool }

func routingOfRevision(r *v1.Revision) revisionRouting {
	return revisionRouting{r.IsReady(), r.IsFailed()}
}
