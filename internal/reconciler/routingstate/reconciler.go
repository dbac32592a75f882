package routingstate

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/base"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/index"
	"github.com/ferry-serving/ferry/internal/watches"
)

// Reconciler labels one Revision per call.
type Reconciler struct {
	// Base.Client reads from the manager's cache (with package index's indexes) and
	// writes through the API server; Base.Clock stamps the label's change. It writes
	// no status and owns no children.
	base.Base
	// Recorder records the Warning Event on a Revision whose label cannot be written
	// (nil: none).
	Recorder events.EventRecorder
}

// Controller is what wakes the reconciler: a Revision created or relabelled, the
// Revisions a Route's status.traffic gains or loses, and the latest Revisions a
// Configuration had and has.
func (r *Reconciler) Controller() watches.Controller {
	return watches.Controller{
		Name: "routingstate",
		Watches: []watches.Watch{
			{Object: &v1.Revision{}, Handler: watches.Enqueue(), Predicates: []predicate.Predicate{predicate.Funcs{
				UpdateFunc: func(e event.UpdateEvent) bool {
					return e.ObjectOld.GetLabels()[v1.RoutingStateLabelKey] != e.ObjectNew.GetLabels()[v1.RoutingStateLabelKey]
				},
				DeleteFunc: func(event.DeleteEvent) bool { return false },
			}}},
			// controller-runtime maps both the old and the new object of an update.
			{Object: &v1.Route{}, Handler: handler.EnqueueRequestsFromMapFunc(routedRevisions), Predicates: []predicate.Predicate{predicate.Funcs{
				UpdateFunc: func(e event.UpdateEvent) bool {
					return !slices.Equal(index.RoutedRevisions(e.ObjectOld.(*v1.Route)), index.RoutedRevisions(e.ObjectNew.(*v1.Route)))
				},
			}}},
			{Object: &v1.Configuration{}, Handler: handler.EnqueueRequestsFromMapFunc(latestRevisions), Predicates: []predicate.Predicate{predicate.Funcs{
				UpdateFunc: func(e event.UpdateEvent) bool {
					o, n := e.ObjectOld.(*v1.Configuration), e.ObjectNew.(*v1.Configuration)
					return o.Status.LatestCreatedRevisionName != n.Status.LatestCreatedRevisionName ||
						o.Status.LatestReadyRevisionName != n.Status.LatestReadyRevisionName ||
						o.Status.ObservedGeneration != n.Status.ObservedGeneration
				},
				CreateFunc: func(event.CreateEvent) bool { return false },
				DeleteFunc: func(event.DeleteEvent) bool { return false },
			}}},
		},
		Reconciler: r,
	}
}

// Reconcile sets the Revision's routingState label when it should change, with the
// time in routingStateModified.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	rev := &v1.Revision{}
	if err := r.Client.Get(ctx, req.NamespacedName, rev); err != nil || rev.DeletionTimestamp != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	cfg := &v1.Configuration{}
	key := types.NamespacedName{Namespace: rev.Namespace, Name: rev.Labels[v1.ConfigurationLabelKey]}
	if err := r.Client.Get(ctx, key, cfg); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// Until the Configuration has reported on its current generation, its latest
	// Revisions are not known; its next status wakes this one.
	if cfg.Status.ObservedGeneration != cfg.Generation {
		return reconcile.Result{}, nil
	}
	routes := &v1.RouteList{}
	if err := r.Client.List(ctx, routes, client.InNamespace(rev.Namespace), client.MatchingFields{index.RoutesByRevision: rev.Name}); err != nil {
		return reconcile.Result{}, err
	}
	latest := rev.Name == cfg.Status.LatestCreatedRevisionName || rev.Name == cfg.Status.LatestReadyRevisionName
	state, change := want(v1.RoutingState(rev.Labels[v1.RoutingStateLabelKey]), len(routes.Items) > 0, latest)
	if !change {
		return reconcile.Result{}, nil
	}
	patch := client.MergeFrom(rev.DeepCopy())
	if rev.Labels == nil {
		rev.Labels = map[string]string{}
	}
	if rev.Annotations == nil {
		rev.Annotations = map[string]string{}
	}
	rev.Labels[v1.RoutingStateLabelKey] = string(state)
	rev.Annotations[v1.RoutingStateModifiedAnnotation] = r.Now().UTC().Format(time.RFC3339)
	err := r.Client.Patch(ctx, rev, patch)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	// A refusal (RBAC, a webhook) would otherwise only retry in the log, while
	// min-scale keeps holding the Revision's pods.
	if err != nil && !apierrors.IsConflict(err) && r.Recorder != nil {
		r.Recorder.Eventf(rev, nil, corev1.EventTypeWarning, v1.ReasonRoutingStateFailed, "Reconcile",
			"Cannot label the Revision routingState=%s: %v", state, err)
	}
	return reconcile.Result{}, err
}

// routedRevisions maps a Route to the Revisions its status.traffic names.
func routedRevisions(_ context.Context, o client.Object) []reconcile.Request {
	rt, ok := o.(*v1.Route)
	if !ok {
		return nil
	}
	var reqs []reconcile.Request
	for _, name := range index.RoutedRevisions(rt) {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: rt.Namespace, Name: name}})
	}
	return reqs
}

// latestRevisions maps a Configuration to its latest created and ready Revisions.
func latestRevisions(_ context.Context, o client.Object) []reconcile.Request {
	cfg, ok := o.(*v1.Configuration)
	if !ok {
		return nil
	}
	var reqs []reconcile.Request
	for _, name := range []string{cfg.Status.LatestCreatedRevisionName, cfg.Status.LatestReadyRevisionName} {
		if name != "" {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: cfg.Namespace, Name: name}})
		}
	}
	return reqs
}
