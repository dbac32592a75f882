package gc

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/base"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/index"
	"github.com/ferry-serving/ferry/internal/watches"
)

// maxRecheck bounds how long a Configuration goes without a collection, as a backstop
// for events the collector does not watch (a Revision's no-gc annotation removed, say).
const maxRecheck = time.Hour

// Reconciler collects one Configuration's Revisions per call.
type Reconciler struct {
	// Base.Client reads from the manager's cache and deletes through the API server;
	// Base.Clock tells the Revisions' ages. It writes no status and owns no children.
	base.Base
	// Policy returns the current rules (config-gc).
	Policy func() *config.GC
}

// Controller is what wakes the collector: Configurations (a new Revision always comes
// with a change of latestCreatedRevisionName), and Routes, for the Configurations of
// the Revisions a Route routes or stopped routing; reconciler.SetupWithManager adds a
// change of config-gc, which wakes every Configuration.
func (r *Reconciler) Controller() watches.Controller {
	return watches.Controller{
		Name: "revision-gc",
		Watches: []watches.Watch{
			{Object: &v1.Configuration{}, Handler: watches.Enqueue()},
			{Object: &v1.Route{}, Handler: handler.EnqueueRequestsFromMapFunc(r.routeToConfigurations)},
		},
		Reconciler: r,
	}
}

// Reconcile deletes the Revisions Collect picks.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	opts := r.Policy()
	if disabled(opts) {
		return ctrl.Result{}, nil
	}
	cfg := &v1.Configuration{}
	if err := r.Client.Get(ctx, req.NamespacedName, cfg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// Until the Configuration has reported on its current generation, its latest
	// Revisions are not known, and so not protected.
	if cfg.DeletionTimestamp != nil || cfg.Status.ObservedGeneration != cfg.Generation {
		return ctrl.Result{}, nil
	}
	list := &v1.RevisionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(cfg.Namespace),
		client.MatchingFields{index.RevisionsByConfiguration: cfg.Name}); err != nil {
		return ctrl.Result{}, err
	}
	revs := make([]*v1.Revision, 0, len(list.Items))
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], cfg) && list.Items[i].DeletionTimestamp == nil {
			revs = append(revs, &list.Items[i])
		}
	}
	// Most Configurations never have more Revisions than the minimum kept, and need
	// not look their Routes up.
	if int64(len(revs)) <= opts.MinNonActiveRevisions {
		return ctrl.Result{}, nil
	}
	routed, err := r.routed(ctx, cfg.Namespace, revs)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan := Collect(r.Now(), opts, cfg, revs, routed)
	for _, rev := range plan.Delete {
		uid := rev.UID
		err := r.Client.Delete(ctx, rev, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return ctrl.Result{}, err
		}
	}
	recheck := maxRecheck
	if plan.Recheck > 0 && plan.Recheck < recheck {
		recheck = plan.Recheck
	}
	return ctrl.Result{RequeueAfter: recheck}, nil
}

// routeToConfigurations maps a Route to the Configurations of the Revisions in its
// status.traffic. controller-runtime maps both the old and the new Route of an update,
// so a Revision that stops being routed wakes its Configuration's collection.
func (r *Reconciler) routeToConfigurations(ctx context.Context, o client.Object) []reconcile.Request {
	rt, ok := o.(*v1.Route)
	if !ok {
		return nil
	}
	var reqs []reconcile.Request
	seen := map[string]bool{}
	for _, t := range rt.Status.Traffic {
		rev := &v1.Revision{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: rt.Namespace, Name: t.RevisionName}, rev); err != nil {
			continue
		}
		if cfg := rev.Labels[v1.ConfigurationLabelKey]; cfg != "" && !seen[cfg] {
			seen[cfg] = true
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: rt.Namespace, Name: cfg}})
		}
	}
	return reqs
}

// routed returns which of revs a Route of the namespace sends traffic to. It looks
// each up in the RoutesByRevision index rather than listing the namespace's Routes,
// which copies every one of them: thousands in a namespace at scale.
func (r *Reconciler) routed(ctx context.Context, ns string, revs []*v1.Revision) (map[string]bool, error) {
	routed := make(map[string]bool)
	for _, rev := range revs {
		routes := &v1.RouteList{}
		if err := r.Client.List(ctx, routes, client.InNamespace(ns),
			client.MatchingFields{index.RoutesByRevision: rev.Name}); err != nil {
			return nil, err
		}
		if len(routes.Items) > 0 {
			routed[rev.Name] = true
		}
	}
	return routed, nil
}
