// Package watches declares what wakes each of Ferry's controllers — the kinds it
// watches, with which handler and predicates — once, as data. Every controller Ferry
// runs is declared so, the reconcilers', the gateway's and the certificate providers':
// controller-runtime's builder registers it (Register), and the convergence simulation
// (internal/convergence) delivers its own events through the very same handlers and
// predicates: what the simulation proves is about the wiring that runs, not a copy.
package watches

import (
	"context"
	"runtime/pprof"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Watch is one kind a controller watches: its events go through Predicates, then
// Handler turns them into requests.
type Watch struct {
	Object     client.Object
	Handler    handler.EventHandler
	Predicates []predicate.Predicate
}

// Controller is a named reconciler and everything that wakes it. Sources are the
// wake-ups that are not watches of a kind (the tracker's requeue, configuration
// changes, the autoscaler's decisions).
type Controller struct {
	Name       string
	Watches    []Watch
	Sources    []source.Source
	Reconciler reconcile.Reconciler
	// EveryReplica: every replica runs it, leader or not, as each gateway serves
	// what it reconciles; otherwise it runs where the manager's leader election says.
	EveryReplica bool
}

// Enqueue is the handler of a controller's own kind: the object's own key.
func Enqueue() handler.EventHandler { return &handler.EnqueueRequestForObject{} }

// Owner is the handler of a child kind: the key of its controlling owner, of ownerType.
func Owner(o Owners, ownerType client.Object) handler.EventHandler {
	return handler.EnqueueRequestForOwner(o.Scheme, o.Mapper, ownerType, handler.OnlyControllerOwner())
}

// Owners is what an owner handler needs to find a child's controlling owner: the
// manager's scheme and REST mapper, or the simulation's.
type Owners struct {
	Scheme *runtime.Scheme
	Mapper meta.RESTMapper
}

// OwnersOf returns the manager's Owners, its mapper's answers kept (knownMappings).
func OwnersOf(mgr ctrl.Manager) Owners {
	return Owners{Scheme: mgr.GetScheme(), Mapper: &knownMappings{RESTMapper: mgr.GetRESTMapper()}}
}

// Register adds c to mgr with workers concurrent reconciles.
func (c Controller) Register(mgr ctrl.Manager, workers int) error {
	b := ctrl.NewControllerManagedBy(mgr).Named(c.Name)
	for _, w := range c.Watches {
		b = b.Watches(w.Object, w.Handler, builder.WithPredicates(w.Predicates...))
	}
	for _, s := range c.Sources {
		b = b.WatchesRawSource(s)
	}
	opts := controller.Options{MaxConcurrentReconciles: workers}
	if c.EveryReplica {
		opts.NeedLeaderElection = ptr.To(false)
	}
	return b.WithOptions(opts).Complete(labelled(c.Name, c.Reconciler))
}

// labelled runs each reconcile with the profiler labels component=ferry and
// ferry=<controller>: a CPU profile (ferry scale --cpuprofile) tells each controller's
// share of Ferry's (go tool pprof -tags). Both are set: the reconcile's context does not
// carry the labels of the goroutine that started the manager. They cost a context per
// reconcile, nothing beside a reconcile's reads.
func labelled(name string, r reconcile.Reconciler) reconcile.Reconciler {
	labels := pprof.Labels("component", "ferry", "ferry", name)
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (res reconcile.Result, err error) {
		pprof.Do(ctx, labels, func(ctx context.Context) { res, err = r.Reconcile(ctx, req) })
		return res, err
	})
}
