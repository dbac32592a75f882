// Package revision reconciles Knative Revisions: a Deployment that runs the Revision's
// pods, a PodAutoscaler that scales it, and a status read from both and from the pods.
// There is no Service in front of the pods: the gateway follows them itself.
package revision

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/base"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/child"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/index"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/observe"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/oldestfirst"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/terminating"
	"github.com/ferry-serving/ferry/internal/reconciler/revision/resources"
	"github.com/ferry-serving/ferry/internal/watches"
)

// Reconciler reconciles one Revision per call.
type Reconciler struct {
	// Base.Config: config-deployment's progress deadline (a Revision's own
	// annotation overrides it), config-autoscaler's class and initial scale of new
	// Revisions, config-defaults for in-memory defaulting, and config-observability's
	// logging.revision-url-template for status.logUrl.
	base.Base
}

// Controller is what wakes the reconciler: its Revisions, their Deployments and
// PodAutoscalers, and pods in trouble. Pods belong to ReplicaSets, not to the Revision,
// so pod events are mapped to their Revision by its label.
//
// Events that cannot change the outcome are dropped, because at scale every reconcile
// costs queue time for all the others: the Revision's own status writes, Deployment
// updates that leave what the status is computed from alone, and pod events other than
// a pod starting or stopping to show a problem (the Deployment reports healthy pods).
func (r *Reconciler) Controller(o watches.Owners) watches.Controller {
	ages := oldestfirst.New()
	return watches.Controller{
		Name: "revision",
		Watches: []watches.Watch{
			// Its own status writes cannot change the outcome; anything else can, a
			// stale status another controller wrote included.
			{Object: &v1.Revision{}, Handler: ages.Object(), Predicates: []predicate.Predicate{r.Status.Changes()}},
			{Object: &appsv1.Deployment{}, Handler: ages.Owner(o.Scheme, o.Mapper, &v1.Revision{}),
				Predicates: []predicate.Predicate{predicate.Funcs{UpdateFunc: deploymentChanged}}},
			{Object: &av1alpha1.PodAutoscaler{}, Handler: ages.Owner(o.Scheme, o.Mapper, &v1.Revision{}),
				Predicates: []predicate.Predicate{predicate.Funcs{UpdateFunc: autoscalerChanged}}},
			{Object: &corev1.Pod{}, Handler: ages.Handler(handler.EnqueueRequestsFromMapFunc(podToRevision)), Predicates: []predicate.Predicate{predicate.Funcs{
				CreateFunc: func(e event.CreateEvent) bool { return troubled(e.Object.(*corev1.Pod)) != "" },
				UpdateFunc: func(e event.UpdateEvent) bool {
					return troubled(e.ObjectOld.(*corev1.Pod)) != troubled(e.ObjectNew.(*corev1.Pod))
				},
				DeleteFunc: func(event.DeleteEvent) bool { return false },
			}}},
		},
		Reconciler: terminating.Ignore(r),
	}
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

// Reconcile makes sure the Revision's Deployment and PodAutoscaler exist and reports
// how its pods are doing.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Observe.
	rev := &v1.Revision{}
	if ok, err := observe.Object(ctx, r.Client, req.NamespacedName, rev, r.Status.Forget); !ok {
		return ctrl.Result{}, err
	}
	r.Read()
	want := rev.DeepCopy()
	want.SetDefaults(config.ToContext(ctx, r.Config()))

	// Desired and apply. The Deployment and the PodAutoscaler do not depend on each
	// other: on a Revision's first reconcile, creating them side by side takes one API
	// round trip instead of two. (There is no Service: the gateway follows the pods
	// itself.)
	w := r.Writer()
	cfg := r.Config()
	as := cfg.Autoscaler
	var pa *av1alpha1.PodAutoscaler
	var d *appsv1.Deployment
	var paErr, depErr error
	child.Together(r.Serial, func() {
		d, depErr = child.Ensure(ctx, w, rev, "Deployment",
			resources.MakeDeployment(want, resources.ProgressDeadline(rev, cfg.Deployment.ProgressDeadline), resources.InitialReplicas(want, as)),
			updateDeployment)
	}, func() {
		pa, paErr = child.Ensure(ctx, w, rev, "PodAutoscaler", resources.MakePodAutoscaler(want, as), updatePodAutoscaler(rev))
	})

	// Status.
	status, m := base.OpenStatus(&rev.Status, rev.Generation, v1.RevisionConditions)
	status.LogURL = resources.LogURL(rev, cfg.Observability.RevisionURLTemplate)
	var o child.Outcome
	for _, err := range []error{depErr, paErr} {
		if o.Mark(m, v1.RevisionConditionResourcesAvailable, err) {
			// Without both children there are no pods to report on.
			return o.Result(r.Status.Write(ctx, rev, &rev.Status, status))
		}
		if err != nil {
			return ctrl.Result{}, err
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
	propagateDeployment(status, d, pods)
	status.PropagateAutoscalerStatus(pa)
	return r.Status.Write(ctx, rev, &rev.Status, status)
}

// updateDeployment puts back what the Revision sets on its Deployment: the pod
// template, the progress deadline and its labels. Fields the API server or others
// filled in are left alone, and so are the replicas: set at creation, they are the
// autoscaler's since. What an older Ferry did not set alone does not roll a
// Deployment it made, the drain (preStop sleep, grace period) and the runtime
// contract's K_REVISION, K_CONFIGURATION, K_SERVICE: at upgrade that would restart
// every Revision's pods, and the pods replaced, having no drain, would cut their
// requests. They come with the next change that rolls the pods anyway.
func updateDeployment(desired, have *appsv1.Deployment) bool {
	desired.Spec.Replicas = have.Spec.Replicas
	labels := child.MergeLabels(desired, have)
	compared := &desired.Spec
	drains, knativeEnv := resources.Drains(&have.Spec.Template.Spec), resources.HasKnativeEnv(&have.Spec.Template.Spec)
	if !drains || !knativeEnv {
		compared = desired.Spec.DeepCopy()
	}
	if !drains {
		resources.WithoutDrain(&compared.Template.Spec)
	}
	if !knativeEnv {
		resources.WithoutKnativeEnv(&compared.Template.Spec)
	}
	if equality.Semantic.DeepDerivative(*compared, have.Spec) {
		return labels
	}
	have.Spec.ProgressDeadlineSeconds = desired.Spec.ProgressDeadlineSeconds
	have.Spec.Template = desired.Spec.Template
	return true
}

// updatePodAutoscaler puts back the Revision's spec, labels and annotations on its
// PodAutoscaler. A class defaulted from config-autoscaler is chosen once, at creation,
// as in Knative: a later change of pod-autoscaler-class applies to new Revisions.
func updatePodAutoscaler(rev *v1.Revision) func(desired, have *av1alpha1.PodAutoscaler) bool {
	return func(desired, have *av1alpha1.PodAutoscaler) bool {
		if _, set := rev.Annotations[av1alpha1.ClassAnnotationKey]; !set {
			if c, ok := have.Annotations[av1alpha1.ClassAnnotationKey]; ok {
				desired.Annotations[av1alpha1.ClassAnnotationKey] = c
			}
		}
		spec := child.Set(&have.Spec, desired.Spec)
		labels := child.MergeLabels(desired, have)
		return child.MergeAnnotations(desired, have) || labels || spec
	}
}
