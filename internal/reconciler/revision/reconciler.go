// Package revision reconciles Knative Revisions: a Deployment that runs the Revision's
// pods, a Service in front of them, and a status read from both and from the pods.
package revision

import (
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler/revision/resources"
)

// Reconciler reconciles one Revision per call.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client   client.Client
	Recorder events.EventRecorder
	// ProgressDeadline is the Deployment's progressDeadlineSeconds.
	ProgressDeadline int32
	AfterRead        func()
}

// SetupWithManager registers the controller. Pods belong to ReplicaSets, not to the
// Revision, so pod events are mapped to their Revision by its label.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("revision").
		For(&v1.Revision{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToRevision)).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

func podToRevision(_ context.Context, o client.Object) []reconcile.Request {
	name, ok := o.GetLabels()[v1.RevisionLabelKey]
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}

// errNotOwned says a child's name is taken by an object the Revision does not control.
var errNotOwned = errors.New("not owned")

// Reconcile makes sure the Revision's Deployment and Service exist and reports how
// its pods are doing.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rev := &v1.Revision{}
	if err := r.Client.Get(ctx, req.NamespacedName, rev); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if rev.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	if r.AfterRead != nil {
		r.AfterRead()
	}
	want := rev.DeepCopy()
	want.SetDefaults()

	status := rev.Status.DeepCopy()
	status.ObservedGeneration = rev.Generation
	m := v1.RevisionConditions.Manage(&status.Status)
	m.InitializeConditions()

	if err := r.reconcileService(ctx, rev, resources.MakeService(want)); err != nil {
		if !errors.Is(err, errNotOwned) {
			return ctrl.Result{}, err
		}
		m.MarkFalse(v1.RevisionConditionResourcesAvailable, ReasonNotOwned, "There is an existing Service %q that we do not own.", rev.Name)
		return ctrl.Result{}, r.updateStatus(ctx, rev, status)
	}

	d, err := r.reconcileDeployment(ctx, rev, resources.MakeDeployment(want, r.ProgressDeadline))
	if err != nil {
		if !errors.Is(err, errNotOwned) {
			return ctrl.Result{}, err
		}
		m.MarkFalse(v1.RevisionConditionResourcesAvailable, ReasonNotOwned, "There is an existing Deployment %q that we do not own.", resources.DeploymentName(rev))
		return ctrl.Result{}, r.updateStatus(ctx, rev, status)
	}

	var pods []corev1.Pod
	if needsPods(d) {
		list := &corev1.PodList{}
		if err := r.Client.List(ctx, list, client.InNamespace(rev.Namespace), client.MatchingLabels(resources.Selector(rev))); err != nil {
			return ctrl.Result{}, err
		}
		pods = list.Items
	}
	propagateDeployment(status, m, d, pods)
	return ctrl.Result{}, r.updateStatus(ctx, rev, status)
}

// reconcileDeployment returns the Deployment as last acknowledged by the API server,
// creating it or putting back what the Revision sets (fields the API server or others
// filled in are left alone).
func (r *Reconciler) reconcileDeployment(ctx context.Context, rev *v1.Revision, desired *appsv1.Deployment) (*appsv1.Deployment, error) {
	have := &appsv1.Deployment{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), have)
	switch {
	case apierrors.IsNotFound(err):
		return desired, r.Client.Create(ctx, desired)
	case err != nil:
		return nil, err
	case !metav1.IsControlledBy(have, rev):
		return nil, errNotOwned
	case equality.Semantic.DeepDerivative(desired.Spec, have.Spec) && hasAll(have.Labels, desired.Labels):
		return have, nil
	}
	upd := have.DeepCopy()
	upd.Spec.Replicas = desired.Spec.Replicas
	upd.Spec.ProgressDeadlineSeconds = desired.Spec.ProgressDeadlineSeconds
	upd.Spec.Template = desired.Spec.Template
	upd.Labels = merge(upd.Labels, desired.Labels)
	return upd, r.Client.Update(ctx, upd)
}

func (r *Reconciler) reconcileService(ctx context.Context, rev *v1.Revision, desired *corev1.Service) error {
	have := &corev1.Service{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), have)
	switch {
	case apierrors.IsNotFound(err):
		return r.Client.Create(ctx, desired)
	case err != nil:
		return err
	case !metav1.IsControlledBy(have, rev):
		return errNotOwned
	case equality.Semantic.DeepDerivative(desired.Spec, have.Spec) && hasAll(have.Labels, desired.Labels):
		return nil
	}
	upd := have.DeepCopy()
	upd.Spec.Selector = desired.Spec.Selector
	upd.Spec.Ports = desired.Spec.Ports
	upd.Labels = merge(upd.Labels, desired.Labels)
	return r.Client.Update(ctx, upd)
}

// updateStatus writes status once, with observedGeneration, only when it changed, and
// records an Event when the Revision newly fails.
func (r *Reconciler) updateStatus(ctx context.Context, rev *v1.Revision, status *v1.RevisionStatus) error {
	if equality.Semantic.DeepEqual(&rev.Status, status) {
		return nil
	}
	if c := status.GetCondition(duck.ConditionReady); c.IsFalse() && r.Recorder != nil {
		if o := rev.Status.GetCondition(duck.ConditionReady); !o.IsFalse() || o.Reason != c.Reason || o.Message != c.Message {
			r.Recorder.Eventf(rev, nil, corev1.EventTypeWarning, c.Reason, "Reconcile", "%s", c.Message)
		}
	}
	upd := rev.DeepCopy()
	upd.Status = *status
	return r.Client.Status().Update(ctx, upd)
}

// hasAll reports whether have holds every key of want with the same value.
func hasAll(have, want map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

// merge returns have with want's keys set, leaving keys others added alone.
func merge(have, want map[string]string) map[string]string {
	out := make(map[string]string, len(have)+len(want))
	for k, v := range have {
		out[k] = v
	}
	for k, v := range want {
		out[k] = v
	}
	return out
}
