// Package service reconciles Knative Services: each owns a Configuration and a Route
// of its own name, kept equal to its spec, and reports their status as its own.
package service

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler/created"
	"github.com/ferry-serving/ferry/internal/reconciler/oldestfirst"
	"github.com/ferry-serving/ferry/internal/reconciler/refusal"
	"github.com/ferry-serving/ferry/internal/reconciler/service/resources"
	"github.com/ferry-serving/ferry/internal/reconciler/statuswriter"
	"github.com/ferry-serving/ferry/internal/reconciler/terminating"
)

// Reconciler reconciles one Service per call.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Children reads and creates the objects this reconciler owns, so that one it has
	// just created counts as existing before the cache shows it.
	Children *created.Children
	// Refused remembers the children the API server refused, to report and back off.
	Refused *refusal.Writes
	// Status writes the status and records Warning Events for new failures.
	Status    *statuswriter.Writer
	AfterRead func()
}

// SetupWithManager registers the controller: Services and the children they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	ages := oldestfirst.New()
	return ctrl.NewControllerManagedBy(mgr).
		Named("service").
		// Its own status writes cannot change the outcome; anything else can, a stale
		// status another controller wrote included.
		Watches(&v1.Service{}, ages.Object(), builder.WithPredicates(r.Status.Changes())).
		Watches(&v1.Configuration{}, ages.Owner(mgr, &v1.Service{})).
		Watches(&v1.Route{}, ages.Owner(mgr, &v1.Service{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(terminating.Ignore(r))
}

// errNotOwned says a child's name is taken by an object the Service does not control.
var errNotOwned = errors.New("not owned")

// Reconcile keeps the Service's Configuration and Route equal to its spec and copies
// their status up.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	svc := &v1.Service{}
	if err := r.Client.Get(ctx, req.NamespacedName, svc); err != nil {
		if apierrors.IsNotFound(err) {
			r.Status.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if svc.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	if r.AfterRead != nil {
		r.AfterRead()
	}
	want := svc.DeepCopy()
	want.SetDefaults(ctx)

	status := svc.Status.DeepCopy()
	status.ObservedGeneration = svc.Generation
	m := v1.ServiceConditions.Manage(&status.Status)
	m.InitializeConditions()

	// The two children do not depend on each other: on a Service's first reconcile,
	// creating them side by side takes one API round trip instead of two.
	type child struct {
		obj client.Object
		err error
	}
	route := make(chan child, 1)
	go func() {
		obj, err := r.reconcileChild(ctx, svc, resources.MakeRoute(want), &v1.Route{}, routeDiffers)
		route <- child{obj, err}
	}()

	cfg, err := r.reconcileChild(ctx, svc, resources.MakeConfiguration(want), &v1.Configuration{}, configurationDiffers)
	rt := <-route
	var refused []*refusal.Error
	cfgRefused, isRefused := refusal.As(err)
	switch {
	case errors.Is(err, errNotOwned):
		m.MarkFalse(v1.ServiceConditionConfigurationsReady, ReasonNotOwned, "There is an existing Configuration %q that we do not own.", svc.Name)
	case isRefused:
		m.MarkFalse(v1.ServiceConditionConfigurationsReady, cfgRefused.Reason(), "%s", cfgRefused.Error())
		refused = append(refused, cfgRefused)
	case err != nil:
		return ctrl.Result{}, err
	default:
		propagateConfiguration(status, m, cfg.(*v1.Configuration))
	}

	rtRefused, isRefused := refusal.As(rt.err)
	switch {
	case errors.Is(rt.err, errNotOwned):
		m.MarkFalse(v1.ServiceConditionRoutesReady, ReasonNotOwned, "There is an existing Route %q that we do not own.", svc.Name)
	case isRefused:
		m.MarkFalse(v1.ServiceConditionRoutesReady, rtRefused.Reason(), "%s", rtRefused.Error())
		refused = append(refused, rtRefused)
	case rt.err != nil:
		return ctrl.Result{}, rt.err
	default:
		propagateRoute(status, m, rt.obj.(*v1.Route), want.Spec.Traffic, status.LatestReadyRevisionName)
	}

	res, err := r.Status.Write(ctx, svc, &svc.Status, status)
	for _, e := range refused {
		res, err = refusal.Result(res, err, e)
	}
	return res, err
}

// reconcileChild returns the child as the API server last acknowledged it: created
// from desired if missing, or with desired's spec, labels and annotations put back if
// they drifted (differs copies them into have and reports whether it did).
func (r *Reconciler) reconcileChild(ctx context.Context, owner *v1.Service, desired, have client.Object, differs func(desired, have client.Object) bool) (client.Object, error) {
	err := r.Children.Get(ctx, client.ObjectKeyFromObject(desired), have)
	switch {
	case apierrors.IsNotFound(err):
		// On AlreadyExists the cache is behind; the error requeues us until it catches up.
		return desired, r.Refused.Create(desired, func() error { return r.Children.Create(ctx, r.Client, desired) })
	case err != nil:
		return nil, err
	case !metav1.IsControlledBy(have, owner):
		return nil, errNotOwned
	case !differs(desired, have):
		return have, nil
	}
	return have, r.Refused.Update(desired, func() error { return r.Client.Update(ctx, have) })
}

// configurationDiffers overwrites have's spec and metadata with desired's if they
// differ, reporting whether it did.
func configurationDiffers(desired, have client.Object) bool {
	d, h := desired.(*v1.Configuration), have.(*v1.Configuration)
	if equality.Semantic.DeepEqual(d.Spec, h.Spec) && sameMeta(d, h) {
		return false
	}
	h.Spec = d.Spec
	copyMeta(d, h)
	return true
}

func routeDiffers(desired, have client.Object) bool {
	d, h := desired.(*v1.Route), have.(*v1.Route)
	if equality.Semantic.DeepEqual(d.Spec, h.Spec) && sameMeta(d, h) {
		return false
	}
	h.Spec = d.Spec
	copyMeta(d, h)
	return true
}

// Labels and annotations are the Service's: a label removed from the Service goes
// from its children too.
func sameMeta(d, h client.Object) bool {
	return equality.Semantic.DeepEqual(d.GetLabels(), h.GetLabels()) &&
		equality.Semantic.DeepEqual(d.GetAnnotations(), h.GetAnnotations())
}

func copyMeta(d, h client.Object) {
	h.SetLabels(d.GetLabels())
	h.SetAnnotations(d.GetAnnotations())
}
