// Package revision reconciles Knative Revisions: a Deployment that runs the Revision's
// pods, a PodAutoscaler that scales it, and a status read from both and from the pods.
// There is no Service in front of the pods: the gateway follows them itself.
package revision

import (
	"context"
	"errors"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/reconciler/created"
	"github.com/ferry-serving/ferry/internal/reconciler/index"
	"github.com/ferry-serving/ferry/internal/reconciler/oldestfirst"
	"github.com/ferry-serving/ferry/internal/reconciler/refusal"
	"github.com/ferry-serving/ferry/internal/reconciler/revision/resources"
	"github.com/ferry-serving/ferry/internal/reconciler/statuswriter"
	"github.com/ferry-serving/ferry/internal/reconciler/terminating"
)

// Reconciler reconciles one Revision per call.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Children reads and creates the objects this reconciler owns, so that one it has
	// just created counts as existing before the cache shows it.
	Children *created.Children
	// Status writes the status and records Warning Events for new failures.
	Status *statuswriter.Writer
	// Refused remembers the children the API server refused, to report and back off.
	Refused *refusal.Writes
	// ProgressDeadline returns config-deployment's progress-deadline now; a
	// Revision's own annotation overrides it.
	ProgressDeadline func() time.Duration
	// Autoscaler returns config-autoscaler now: the class and initial scale of new
	// Revisions.
	Autoscaler func() *config.Autoscaler
	AfterRead  func()
}

// SetupWithManager registers the controller. Pods belong to ReplicaSets, not to the
// Revision, so pod events are mapped to their Revision by its label.
//
// Events that cannot change the outcome are dropped, because at scale every reconcile
// costs queue time for all the others: the Revision's own status writes, Deployment
// updates that leave what the status is computed from alone, and pod events other than
// a pod starting or stopping to show a problem (the Deployment reports healthy pods).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	ages := oldestfirst.New()
	return ctrl.NewControllerManagedBy(mgr).
		Named("revision").
		// Its own status writes cannot change the outcome; anything else can, a stale
		// status another controller wrote included.
		Watches(&v1.Revision{}, ages.Object(), builder.WithPredicates(r.Status.Changes())).
		Watches(&appsv1.Deployment{}, ages.Owner(mgr, &v1.Revision{}), builder.WithPredicates(predicate.Funcs{UpdateFunc: deploymentChanged})).
		Watches(&av1alpha1.PodAutoscaler{}, ages.Owner(mgr, &v1.Revision{}), builder.WithPredicates(predicate.Funcs{UpdateFunc: autoscalerChanged})).
		Watches(&corev1.Pod{}, ages.Handler(handler.EnqueueRequestsFromMapFunc(podToRevision)), builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(e event.CreateEvent) bool { return troubled(e.Object.(*corev1.Pod)) != "" },
			UpdateFunc: func(e event.UpdateEvent) bool {
				return troubled(e.ObjectOld.(*corev1.Pod)) != troubled(e.ObjectNew.(*corev1.Pod))
			},
			DeleteFunc: func(event.DeleteEvent) bool { return false },
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(terminating.Ignore(r))
}

// deploymentChanged reports an update to what the Revision reads from its Deployment.
func deploymentChanged(e event.UpdateEvent) bool {
	o, n := e.ObjectOld.(*appsv1.Deployment), e.ObjectNew.(*appsv1.Deployment)
	return o.Generation != n.Generation ||
		o.Status.ObservedGeneration != n.Status.ObservedGeneration ||
		o.Status.ReadyReplicas != n.Status.ReadyReplicas ||
		!equality.Semantic.DeepEqual(o.Status.Conditions, n.Status.Conditions) ||
		!equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
		!equality.Semantic.DeepEqual(o.OwnerReferences, n.OwnerReferences)
}

// autoscalerChanged reports an update to what the Revision mirrors from its
// PodAutoscaler, or to what the Revision sets on it.
func autoscalerChanged(e event.UpdateEvent) bool {
	o, n := e.ObjectOld.(*av1alpha1.PodAutoscaler), e.ObjectNew.(*av1alpha1.PodAutoscaler)
	return o.Generation != n.Generation ||
		!equality.Semantic.DeepEqual(o.Status.DesiredScale, n.Status.DesiredScale) ||
		!equality.Semantic.DeepEqual(o.Status.ActualScale, n.Status.ActualScale) ||
		!sameCondition(o.Status.GetCondition(av1alpha1.PodAutoscalerConditionActive), n.Status.GetCondition(av1alpha1.PodAutoscalerConditionActive)) ||
		!equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
		!equality.Semantic.DeepEqual(o.Annotations, n.Annotations)
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

// Reconcile makes sure the Revision's Deployment and PodAutoscaler exist and reports
// how its pods are doing.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rev := &v1.Revision{}
	if err := r.Client.Get(ctx, req.NamespacedName, rev); err != nil {
		if apierrors.IsNotFound(err) {
			r.Status.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if rev.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	if r.AfterRead != nil {
		r.AfterRead()
	}
	want := rev.DeepCopy()
	want.SetDefaults(ctx)

	status := rev.Status.DeepCopy()
	status.ObservedGeneration = rev.Generation
	m := v1.RevisionConditions.Manage(&status.Status)
	m.InitializeConditions()

	// The Deployment and the PodAutoscaler do not depend on each other: on a
	// Revision's first reconcile, creating them side by side takes one API round trip
	// instead of two. (There is no Service: the gateway follows the pods itself.)
	as := r.Autoscaler()
	var pa *av1alpha1.PodAutoscaler
	paErr := make(chan error, 1)
	go func() {
		var err error
		pa, err = r.reconcilePodAutoscaler(ctx, rev, resources.MakePodAutoscaler(want, as))
		paErr <- err
	}()
	d, depErr := r.reconcileDeployment(ctx, rev, resources.MakeDeployment(want, resources.ProgressDeadline(rev, r.ProgressDeadline()), resources.InitialReplicas(want, as)))
	for _, e := range []struct {
		err  error
		kind string
		name string
	}{{depErr, "Deployment", v1.DeploymentName(rev.Name)}, {<-paErr, "PodAutoscaler", rev.Name}} {
		refused, isRefused := refusal.As(e.err)
		switch {
		case errors.Is(e.err, errNotOwned):
			m.MarkFalse(v1.RevisionConditionResourcesAvailable, ReasonNotOwned, "There is an existing %s %q that we do not own.", e.kind, e.name)
			return r.Status.Write(ctx, rev, &rev.Status, status)
		case isRefused:
			m.MarkFalse(v1.RevisionConditionResourcesAvailable, refused.Reason(), "%s", refused.Error())
			res, err := r.Status.Write(ctx, rev, &rev.Status, status)
			return refusal.Result(res, err, refused)
		case e.err != nil:
			return ctrl.Result{}, e.err
		}
	}

	var pods []corev1.Pod
	if needsPods(d) {
		list := &corev1.PodList{}
		if err := r.Client.List(ctx, list, client.InNamespace(rev.Namespace), client.MatchingFields{index.PodsByRevision: rev.Name}); err != nil {
			return ctrl.Result{}, err
		}
		pods = list.Items
	}
	propagateDeployment(status, m, d, pods)
	propagateAutoscaler(status, m, pa)
	return r.Status.Write(ctx, rev, &rev.Status, status)
}

// reconcileDeployment returns the Deployment as last acknowledged by the API server,
// creating it or putting back what the Revision sets (fields the API server or others
// filled in are left alone).
func (r *Reconciler) reconcileDeployment(ctx context.Context, rev *v1.Revision, desired *appsv1.Deployment) (*appsv1.Deployment, error) {
	have := &appsv1.Deployment{}
	err := r.Children.Get(ctx, client.ObjectKeyFromObject(desired), have)
	switch {
	case apierrors.IsNotFound(err):
		return desired, r.Refused.Create(desired, func() error { return r.Children.Create(ctx, r.Client, desired) })
	case err != nil:
		return nil, err
	case !metav1.IsControlledBy(have, rev):
		return nil, errNotOwned
	}
	// Replicas were set at creation; since then they are the autoscaler's.
	desired.Spec.Replicas = have.Spec.Replicas
	if equality.Semantic.DeepDerivative(desired.Spec, have.Spec) && hasAll(have.Labels, desired.Labels) {
		return have, nil
	}
	upd := have.DeepCopy()
	upd.Spec.ProgressDeadlineSeconds = desired.Spec.ProgressDeadlineSeconds
	upd.Spec.Template = desired.Spec.Template
	upd.Labels = merge(upd.Labels, desired.Labels)
	return upd, r.Refused.Update(desired, func() error { return r.Client.Update(ctx, upd) })
}

// reconcilePodAutoscaler returns the Revision's PodAutoscaler, creating it or putting
// back what the Revision sets: its spec, labels and annotations.
func (r *Reconciler) reconcilePodAutoscaler(ctx context.Context, rev *v1.Revision, desired *av1alpha1.PodAutoscaler) (*av1alpha1.PodAutoscaler, error) {
	have := &av1alpha1.PodAutoscaler{}
	err := r.Children.Get(ctx, client.ObjectKeyFromObject(desired), have)
	switch {
	case apierrors.IsNotFound(err):
		return desired, r.Refused.Create(desired, func() error { return r.Children.Create(ctx, r.Client, desired) })
	case err != nil:
		return nil, err
	case !metav1.IsControlledBy(have, rev):
		return nil, errNotOwned
	}
	// A class defaulted from config-autoscaler is chosen once, at creation, as in
	// Knative: a later change of pod-autoscaler-class applies to new Revisions.
	if _, set := rev.Annotations[av1alpha1.ClassAnnotationKey]; !set {
		if c, ok := have.Annotations[av1alpha1.ClassAnnotationKey]; ok {
			desired.Annotations[av1alpha1.ClassAnnotationKey] = c
		}
	}
	if equality.Semantic.DeepEqual(desired.Spec, have.Spec) && hasAll(have.Labels, desired.Labels) && hasAll(have.Annotations, desired.Annotations) {
		return have, nil
	}
	upd := have.DeepCopy()
	upd.Spec = desired.Spec
	upd.Labels = merge(upd.Labels, desired.Labels)
	upd.Annotations = merge(upd.Annotations, desired.Annotations)
	return upd, r.Refused.Update(desired, func() error { return r.Client.Update(ctx, upd) })
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
