package route

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/oldestfirst"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/terminating"
	"github.com/ferry-serving/ferry/internal/watches"
)

// Controller is what wakes the reconciler: its own changes, the KIngress, Certificates
// and placeholder Service it owns, and the tracker (tracked) for the Configurations and
// Revisions it reads; reconciler.SetupWithManager adds the tracker's requeue of an
// observer that starts tracking something and configuration changes (config-domain,
// config-network or config-features' tag-header-based-routing wake every Route) as
// sources.
//
// Updates of a Configuration or Revision that leave alone what traffic resolution reads
// of it (a Revision's replicas, a Configuration's latest created Revision) are dropped
// before the tracker: they would wake every Route that names the object for nothing.
func (r *Reconciler) Controller(o watches.Owners, tracked handler.EventHandler) watches.Controller {
	ages := oldestfirst.New()
	return watches.Controller{
		Name: "route",
		Watches: []watches.Watch{
			// Its own status writes cannot change the outcome; anything else can, a
			// stale status another controller wrote included.
			{Object: &v1.Route{}, Handler: ages.Object(), Predicates: []predicate.Predicate{r.Status.Changes()}},
			{Object: &netv1alpha1.Ingress{}, Handler: ages.Owner(o.Scheme, o.Mapper, &v1.Route{})},
			{Object: &netv1alpha1.Certificate{}, Handler: ages.Owner(o.Scheme, o.Mapper, &v1.Route{})},
			{Object: &corev1.Service{}, Handler: ages.Owner(o.Scheme, o.Mapper, &v1.Route{})},
			{Object: &v1.Configuration{}, Handler: ages.Handler(tracked), Predicates: []predicate.Predicate{predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
				return routingOfConfiguration(e.ObjectOld.(*v1.Configuration)) != routingOfConfiguration(e.ObjectNew.(*v1.Configuration))
			}}}},
			{Object: &v1.Revision{}, Handler: ages.Handler(tracked), Predicates: []predicate.Predicate{predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
				return routingOfRevision(e.ObjectOld.(*v1.Revision)) != routingOfRevision(e.ObjectNew.(*v1.Revision))
			}}}},
		},
		Reconciler: terminating.Ignore(r),
	}
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
