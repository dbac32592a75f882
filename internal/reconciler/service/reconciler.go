// Package service reconciles Knative Services: each owns a Configuration and a Route
// of its own name, kept equal to its spec, and reports their status as its own.
package service

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/base"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/child"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/observe"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/oldestfirst"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/terminating"
	"github.com/ferry-serving/ferry/internal/reconciler/service/resources"
	"github.com/ferry-serving/ferry/internal/watches"
)

// Reconciler reconciles one Service per call.
type Reconciler struct {
	// Base.Config: config-defaults and config-features default the children as
	// admission defaults a Service.
	base.Base
}

// Controller is what wakes the reconciler: its Services and the children they own.
func (r *Reconciler) Controller(o watches.Owners) watches.Controller {
	ages := oldestfirst.New()
	return watches.Controller{
		Name: "service",
		Watches: []watches.Watch{
			// Its own status writes cannot change the outcome; anything else can, a
			// stale status another controller wrote included.
			{Object: &v1.Service{}, Handler: ages.Object(), Predicates: []predicate.Predicate{r.Status.Changes()}},
			{Object: &v1.Configuration{}, Handler: ages.Owner(o.Scheme, o.Mapper, &v1.Service{})},
			{Object: &v1.Route{}, Handler: ages.Owner(o.Scheme, o.Mapper, &v1.Service{})},
		},
		Reconciler: terminating.Ignore(r),
	}
}

// Reconcile keeps the Service's Configuration and Route equal to its spec and copies
// their status up.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Observe.
	svc := &v1.Service{}
	if ok, err := observe.Object(ctx, r.Client, req.NamespacedName, svc, r.Status.Forget); !ok {
		return ctrl.Result{}, err
	}
	r.Read()
	want := svc.DeepCopy()
	want.SetDefaults(config.ToContextFrom(ctx, r.Config))

	// Desired and apply. The two children do not depend on each other: on a Service's
	// first reconcile, creating them side by side takes one API round trip instead of two.
	w := r.Writer()
	var rt *v1.Route
	var cfg *v1.Configuration
	var rtErr, cfgErr error
	child.Together(r.Serial, func() {
		cfg, cfgErr = child.Ensure(ctx, w, svc, "Configuration", resources.MakeConfiguration(want), updateConfiguration)
	}, func() {
		rt, rtErr = child.Ensure(ctx, w, svc, "Route", resources.MakeRoute(want), updateRoute)
	})

	// Status.
	status, m := base.OpenStatus(&svc.Status, svc.Generation, v1.ServiceConditions)
	var o child.Outcome
	switch {
	case o.Mark(m, v1.ServiceConditionConfigurationsReady, cfgErr):
	case cfgErr != nil:
		return ctrl.Result{}, cfgErr
	default:
		status.PropagateConfigurationStatus(cfg)
	}
	switch {
	case o.Mark(m, v1.ServiceConditionRoutesReady, rtErr):
	case rtErr != nil:
		return ctrl.Result{}, rtErr
	default:
		status.PropagateRouteStatus(rt, want.Spec.Traffic)
	}
	return o.Result(r.Status.Write(ctx, svc, &svc.Status, status))
}

// updateConfiguration and updateRoute put the Service's spec, labels and annotations
// back on its children. The metadata is the Service's alone: a label removed from the
// Service goes from its children too.
func updateConfiguration(desired, have *v1.Configuration) bool {
	return child.Replace(desired, have, &have.Spec, desired.Spec)
}

func updateRoute(desired, have *v1.Route) bool {
	return child.Replace(desired, have, &have.Spec, desired.Spec)
}
