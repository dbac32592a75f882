// Package podautoscaler reconciles PodAutoscalers. The KPA class applies the
// autoscaler's decisions (package autoscaler) to the Revision's Deployment through its
// scale subresource; the HPA class hands the Deployment to a HorizontalPodAutoscaler.
//
// A reconcile is level-based: it reads the PodAutoscaler, the Deployment and the
// latest decision, and computes the scale and the status from them alone (the state
// machine of scale to zero lives in the Active condition and its transition time).
package podautoscaler

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/autoscaler"
	"github.com/ferry-serving/ferry/internal/autoscaler/decider"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/metrics"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/base"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/child"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/observe"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/oldestfirst"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/terminating"
	"github.com/ferry-serving/ferry/internal/reconciler/podautoscaler/resources"
	"github.com/ferry-serving/ferry/internal/watches"
)

// Reconciler reconciles one PodAutoscaler per call.
type Reconciler struct {
	// Base.Config: config-autoscaler, config-deployment. Base.Clock tells the KPA's
	// time.
	base.Base
	Autoscaler *autoscaler.Autoscaler
	// Calm, if set, returns a channel that is closed when no burst of Services is on
	// its way to Ready (backpressure.Backlog.Calm): scaling to zero waits for it (see
	// reconcileKPA).
	Calm func() <-chan struct{}
	// Quiet, if set, returns a channel that is closed when no user's change is on
	// its way to Ready (backpressure.Backlog.Quiet): a Revision whose turn to scale to
	// zero came waits for it too.
	Quiet func() <-chan struct{}
	// afterBurst and afterChange queue again the PodAutoscalers that waited for
	// Calm and for Quiet.
	afterBurst, afterChange *afterBurst
	// pace spreads scale-to-zero over time (ScaleToZeroRate).
	pace *pace
}

// Controller is what wakes the reconciler: its PodAutoscalers, their Deployments'
// scale, their HPAs, and the end of a burst it waited for.
func (r *Reconciler) Controller(o watches.Owners) watches.Controller {
	r.afterBurst, r.afterChange = newAfterBurst(), newAfterBurst()
	r.pace = newPace(ScaleToZeroRate)
	ages := oldestfirst.New()
	return watches.Controller{
		Name: "podautoscaler",
		Watches: []watches.Watch{
			{Object: &av1alpha1.PodAutoscaler{}, Handler: ages.Object(), Predicates: []predicate.Predicate{r.Status.Changes()}},
			// The Deployment belongs to the Revision; its PodAutoscaler has the Revision's name.
			{Object: &appsv1.Deployment{}, Handler: ages.Handler(handler.EnqueueRequestsFromMapFunc(deploymentToPA)),
				Predicates: []predicate.Predicate{predicate.Funcs{UpdateFunc: scaleChanged}}},
			{Object: &autoscalingv2.HorizontalPodAutoscaler{}, Handler: ages.Owner(o.Scheme, o.Mapper, &av1alpha1.PodAutoscaler{})},
		},
		Sources:    []source.Source{r.afterBurst, r.afterChange},
		Reconciler: terminating.Ignore(r),
	}
}

func deploymentToPA(_ context.Context, o client.Object) []reconcile.Request {
	name, ok := o.GetLabels()[v1.RevisionLabelKey]
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// scaleChanged reports a Deployment update that changes what the PodAutoscaler reads.
func scaleChanged(e event.UpdateEvent) bool {
	o, n := e.ObjectOld.(*appsv1.Deployment), e.ObjectNew.(*appsv1.Deployment)
	return o.Status.ReadyReplicas != n.Status.ReadyReplicas || !equality.Semantic.DeepEqual(o.Spec.Replicas, n.Spec.Replicas)
}

// Reconcile scales the PodAutoscaler's target and reports it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pa := &av1alpha1.PodAutoscaler{}
	if ok, err := observe.Object(ctx, r.Client, req.NamespacedName, pa, r.Autoscaler.Forget, r.Status.Forget, r.pace.forget); !ok {
		return ctrl.Result{}, err
	}
	if r.Status.Behind(pa) {
		// Its status is its state (Active and since when): computed from a copy
		// without the last write, a TimedOut would turn into NoTraffic.
		return ctrl.Result{RequeueAfter: behindRetry}, nil
	}
	status, m := base.OpenStatus(&pa.Status, pa.Generation, av1alpha1.PodAutoscalerConditions)
	status.ServiceName, status.MetricsServiceName = pa.Name, pa.Name
	// No ServerlessService: the gateway follows the Revision's pods itself, and holds
	// requests while there are none.
	status.MarkSKSReady()

	dep := &appsv1.Deployment{}
	switch err := r.Client.Get(ctx, types.NamespacedName{Namespace: pa.Namespace, Name: pa.Spec.ScaleTargetRef.Name}, dep); {
	case apierrors.IsNotFound(err):
		// The Revision creates its Deployment alongside; its creation wakes us.
		status.MarkScaleTargetMissing(pa.Spec.ScaleTargetRef.Name)
		return r.Status.Write(ctx, pa, &pa.Status, status)
	case err != nil:
		return ctrl.Result{}, err
	}

	switch pa.Class() {
	case av1alpha1.KPA:
		return r.reconcileKPA(ctx, pa, dep, status, m)
	case av1alpha1.HPA:
		return r.reconcileHPA(ctx, pa, dep, status, m)
	default:
		// Another autoscaler's class (Knative's classes are pluggable): not ours.
		return ctrl.Result{}, nil
	}
}

func (r *Reconciler) reconcileKPA(ctx context.Context, pa *av1alpha1.PodAutoscaler, dep *appsv1.Deployment, status *av1alpha1.PodAutoscalerStatus, m duck.ConditionManager) (ctrl.Result, error) {
	cfg := r.Config()
	key := client.ObjectKeyFromObject(pa)
	settings := decider.SettingsFor(cfg.Autoscaler, pa.Annotations, pa.Spec.ContainerConcurrency)
	reachable := pa.Spec.Reachability != av1alpha1.ReachabilityUnreachable
	ready := dep.Status.ReadyReplicas
	r.Autoscaler.Watch(key, settings, ready, reachable)
	decision := r.Autoscaler.Decision(key)

	current := int32(1)
	if dep.Spec.Replicas != nil {
		current = *dep.Spec.Replicas
	}
	activity, since := activityOf(pa)
	res := decider.Scale(decider.ScaleInput{
		Settings:          settings,
		Desired:           decision.DesiredPods,
		Current:           current,
		Ready:             ready,
		Reachable:         reachable,
		Initialized:       pa.Status.GetCondition(av1alpha1.PodAutoscalerConditionScaleTargetInitialized).IsTrue(),
		Activity:          activity,
		Since:             since,
		ActivationTimeout: activationTimeout(pa, cfg),
		Now:               r.Now(),
	})
	if res.Scale == 0 && current > 0 && r.Calm != nil && r.afterBurst.postpone(key, r.Calm()) {
		// Reclaiming an idle Revision's pods is not urgent; the Services a burst
		// is bringing up are. Scaling to zero costs a dozen writes across the control
		// plane (scale, ReplicaSet, pod deletion, statuses), and a
		// burst's first Services reach their stable window while later ones still
		// wait: the wave of scale-downs would halve the burst's throughput. The
		// PodAutoscaler stays as it is, Active, until the burst ends, which queues
		// it again.
		return ctrl.Result{}, nil
	}
	if res.Scale == 0 && current > 0 {
		if r.Quiet != nil && r.afterChange.postpone(key, r.Quiet()) {
			// A user's Service is on its way: the scale-down's writes would queue in
			// the API server ahead of that Service's. Its turn, if it had one, is given
			// up, so that the Revisions that waited take new turns at the pace when
			// the change is Ready, not all at once on the next user's change.
			r.pace.forget(key)
			return ctrl.Result{}, nil
		}
		if d := r.pace.wait(key, r.Now()); d > 0 {
			// Not its turn yet (pace.go): it stays as it is, and no user waits for it.
			low := oldestfirst.Unchanged
			return ctrl.Result{RequeueAfter: d, Priority: &low}, nil
		}
	} else {
		r.pace.forget(key)
	}
	if res.Scale >= 0 && res.Scale != current {
		if err := r.scale(ctx, dep, res.Scale); err != nil {
			return ctrl.Result{}, err
		}
		if current == 0 {
			if d, ok := r.Autoscaler.Woken(key); ok {
				metrics.ObserveWake(d)
			}
		}
	}
	status.DesiredScale, status.ActualScale = desiredScale(res.Desired, pa.Status.DesiredScale, current), &ready
	markActivity(status, res)
	if res.Initialized {
		status.MarkScaleTargetInitialized()
	} else if !m.GetCondition(av1alpha1.PodAutoscalerConditionScaleTargetInitialized).IsTrue() {
		status.MarkScaleTargetInitializing()
	}
	result, err := r.Status.Write(ctx, pa, &pa.Status, status)
	if err == nil && res.RequeueAfter > 0 && (result.RequeueAfter == 0 || res.RequeueAfter < result.RequeueAfter) {
		result.RequeueAfter = res.RequeueAfter
	}
	return result, err
}

// desiredScale is what status.desiredScale says, as in Knative: the bounded decision,
// written or not, and while there is none (no load known yet) the last one reported.
// A new PodAutoscaler, which Knative takes as activating and scales to its initial
// scale, reports the replicas its Deployment was created with.
func desiredScale(decided int32, reported *int32, current int32) *int32 {
	switch {
	case decided >= 0:
	case reported != nil && *reported >= 0:
		decided = *reported
	default:
		decided = current
	}
	return &decided
}

// behindRetry is how soon a reconcile that found its cache behind its own last status
// write looks again: the write's echo, which the cache is waiting for, wakes no one.
const behindRetry = 50 * time.Millisecond

// scale sets the Deployment's replicas through its scale subresource, the one write
// an autoscaler needs (and the only Deployment access its RBAC grants for writing).
func (r *Reconciler) scale(ctx context.Context, dep *appsv1.Deployment, n int32) error {
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n))
	return r.Client.SubResource("scale").Patch(ctx, dep, patch,
		&client.SubResourcePatchOptions{SubResourceBody: &autoscalingv1.Scale{}})
}

// activityOf reads the scale-to-zero state from the Active condition.
func activityOf(pa *av1alpha1.PodAutoscaler) (decider.Activity, time.Time) {
	c := pa.Status.GetCondition(av1alpha1.PodAutoscalerConditionActive)
	if c == nil {
		return "", time.Time{}
	}
	since := c.LastTransitionTime.Time
	switch {
	case c.Status == corev1.ConditionTrue:
		return decider.Active, since
	case c.Status == corev1.ConditionFalse && c.Reason == av1alpha1.ReasonTimedOut:
		return decider.TimedOut, since
	case c.Status == corev1.ConditionFalse:
		return decider.Inactive, since
	case c.Reason == av1alpha1.ReasonQueued:
		return decider.Activating, since
	}
	return "", since
}

func markActivity(status *av1alpha1.PodAutoscalerStatus, res decider.ScaleResult) {
	switch res.Activity {
	case decider.Active:
		status.MarkActive()
	case decider.Inactive, decider.TimedOut:
		status.MarkInactive(res.Reason, res.Message)
	case decider.Activating:
		status.MarkActivating(res.Reason, res.Message)
	default:
		status.MarkActivating(av1alpha1.ReasonInitializing, "")
	}
}

// activationTimeout is Knative's: the progress deadline plus 30 s.
func activationTimeout(pa *av1alpha1.PodAutoscaler, cfg *config.Config) time.Duration {
	d := cfg.Deployment.ProgressDeadline
	if v, ok := pa.Annotations[v1.ProgressDeadlineAnnotationKey]; ok {
		if pd, err := time.ParseDuration(v); err == nil {
			d = pd
		}
	}
	return d + 30*time.Second
}

// reconcileHPA hands the Deployment to a HorizontalPodAutoscaler, as Knative's HPA
// class does; it never scales to zero.
func (r *Reconciler) reconcileHPA(ctx context.Context, pa *av1alpha1.PodAutoscaler, dep *appsv1.Deployment, status *av1alpha1.PodAutoscalerStatus, m duck.ConditionManager) (ctrl.Result, error) {
	r.Autoscaler.Forget(client.ObjectKeyFromObject(pa))
	w := r.Writer()
	hpa, err := child.Ensure(ctx, w, pa, "HorizontalPodAutoscaler", resources.MakeHPA(pa, r.Config().Autoscaler),
		func(desired, have *autoscalingv2.HorizontalPodAutoscaler) bool {
			return child.SetDerivative(&have.Spec, desired.Spec)
		})
	var o child.Outcome
	switch {
	case o.Mark(m, av1alpha1.PodAutoscalerConditionActive, err):
		return o.Result(r.Status.Write(ctx, pa, &pa.Status, status))
	case err != nil:
		return ctrl.Result{}, err
	}
	// As Knative's HPA class: always Active, the scales are the HPA's, and the target is
	// initialized once it has max(min-scale, initial-scale) replicas (max(min-scale, 1)
	// after). Until kube-controller-manager's HPA controller first reports (it syncs
	// every 15 s) the Deployment stands in, so a new Revision is not held back by it.
	desired, actual := hpa.Status.DesiredReplicas, hpa.Status.CurrentReplicas
	if actual == 0 && desired == 0 {
		actual = dep.Status.ReadyReplicas
		if dep.Spec.Replicas != nil {
			desired = *dep.Spec.Replicas
		}
	}
	status.DesiredScale, status.ActualScale = &desired, &actual
	status.MarkActive()
	settings := decider.SettingsFor(r.Config().Autoscaler, pa.Annotations, pa.Spec.ContainerConcurrency)
	initialized := pa.Status.GetCondition(av1alpha1.PodAutoscalerConditionScaleTargetInitialized).IsTrue()
	threshold := max(settings.MinScale, 1)
	if !initialized {
		threshold = max(settings.MinScale, settings.InitialScale)
	}
	if initialized || max(actual, dep.Status.ReadyReplicas) >= threshold {
		status.MarkScaleTargetInitialized()
	}
	return r.Status.Write(ctx, pa, &pa.Status, status)
}
