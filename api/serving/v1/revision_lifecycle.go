package v1

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	"github.com/ferry-serving/ferry/api/duck"
)

// Revision condition types.
const (
	RevisionConditionReady                                 = duck.ConditionReady
	RevisionConditionResourcesAvailable duck.ConditionType = "ResourcesAvailable"
	RevisionConditionContainerHealthy   duck.ConditionType = "ContainerHealthy"
	RevisionConditionActive             duck.ConditionType = "Active"
)

// RevisionConditions derives Ready from ResourcesAvailable and ContainerHealthy; Active
// is reported but does not count.
var RevisionConditions = duck.NewLivingConditionSet(RevisionConditionResourcesAvailable, RevisionConditionContainerHealthy)

// Reasons of a Revision's conditions, as Knative spells them (serving
// pkg/apis/serving/v1/revision_lifecycle.go). Active mirrors the PodAutoscaler's
// reasons (av1alpha1.ReasonNoTraffic, ...).
const (
	// ReasonDeploying: the Deployment is on its way (ResourcesAvailable, Active).
	ReasonDeploying = "Deploying"
	// ReasonProgressDeadlineExceeded: the pods did not become available within the
	// Deployment's progress deadline; it is the Deployment's own Progressing reason.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonContainerMissing: the image cannot be fetched (ContainerHealthy).
	ReasonContainerMissing = "ContainerMissing"
	// ReasonRoutingStateFailed is the reason of the Warning Event when a Revision's
	// routingState label cannot be written.
	ReasonRoutingStateFailed = "RoutingStateFailed"
)

// Reasons a container of Ferry's program node (internal/programs) waits with, beside
// the kubelet's own; the Revision and the explainer read them.
const (
	// ReasonBuildingImage: the go command is building the container's ko:// package.
	ReasonBuildingImage = "BuildingImage"
	// ReasonErrImageBuild: the image has no program (its package does not build, its
	// executable is gone). Its message says why, and does not change between retries.
	ReasonErrImageBuild = "ErrImageBuild"
	// ReasonNeedsIsolation: the pod asks for what only a runc container gives (volumes
	// at their mountPath) on a node that runs plain processes. No retry can help, so the
	// Revision shows it at once, with the message's way out.
	ReasonNeedsIsolation = "NeedsIsolation"
)

// ExitCodeReason is ContainerHealthy's reason for a container that exited with code,
// Knative's "ExitCode<N>".
func ExitCodeReason(code int32) string { return fmt.Sprintf("ExitCode%d", code) }

// ReasonExitCode is what every ExitCodeReason starts with.
const ReasonExitCode = "ExitCode"

// MarkDeploying says the Deployment has not made the pods available yet.
func (rs *RevisionStatus) MarkDeploying() {
	RevisionConditions.Manage(&rs.Status).MarkUnknown(RevisionConditionResourcesAvailable, ReasonDeploying, "")
}

// MarkActiveDeploying says no pod serves yet while the Revision deploys.
func (rs *RevisionStatus) MarkActiveDeploying() {
	RevisionConditions.Manage(&rs.Status).MarkUnknown(RevisionConditionActive, ReasonDeploying, "")
}

// MarkInactiveNoTraffic says the Revision is scaled to zero.
func (rs *RevisionStatus) MarkInactiveNoTraffic() {
	RevisionConditions.Manage(&rs.Status).MarkFalse(RevisionConditionActive, av1alpha1.ReasonNoTraffic, "%s", av1alpha1.MessageNoTraffic)
}

// MarkProgressDeadlineExceeded says the pods were not available within seconds.
func (rs *RevisionStatus) MarkProgressDeadlineExceeded(seconds int32) {
	RevisionConditions.Manage(&rs.Status).MarkFalse(RevisionConditionResourcesAvailable, ReasonProgressDeadlineExceeded,
		"Unable to create pods for more than %d seconds.", seconds)
}

// MarkResourcesUnavailable says why the pods cannot be had (a pod that cannot be
// scheduled, a ReplicaSet that cannot create pods), with Kubernetes' reason.
func (rs *RevisionStatus) MarkResourcesUnavailable(reason, message string) {
	RevisionConditions.Manage(&rs.Status).MarkFalse(RevisionConditionResourcesAvailable, reason, "%s", message)
}

// MarkContainerUnhealthy says why a container cannot run (ContainerMissing, ExitCode<N>).
func (rs *RevisionStatus) MarkContainerUnhealthy(reason, message string) {
	RevisionConditions.Manage(&rs.Status).MarkFalse(RevisionConditionContainerHealthy, reason, "%s", message)
}

// PropagateDeploymentStatus sets replicas, ResourcesAvailable, ContainerHealthy and
// Active from the Revision's Deployment, as Knative's PropagateDeploymentStatus does.
// While the Deployment is not available (DeploymentAvailable), its pods may say more:
// the reconciler reads them then.
func (rs *RevisionStatus) PropagateDeploymentStatus(d *appsv1.Deployment) {
	m := RevisionConditions.Manage(&rs.Status)
	desired := int32(1)
	if d.Spec.Replicas != nil {
		desired = *d.Spec.Replicas
	}
	rs.DesiredReplicas = &desired
	ready := d.Status.ReadyReplicas
	rs.ActualReplicas = &ready

	// Once its pods were available, a Revision stays so while the autoscaler scales
	// it: a new replica count is a Deployment generation not yet observed, and then
	// Available=False while the new pods start (Knative reads Progressing, not
	// Available, for the same reason). Only a failure takes it back.
	wasAvailable := m.GetCondition(RevisionConditionResourcesAvailable).IsTrue()
	switch {
	case wasAvailable && !ProgressDeadlineExceeded(d) && replicaFailure(d) == nil:
		if DeploymentAvailable(d) {
			// A container that failed while the pods were available (a crash, since
			// restarted) is healthy again once they all are.
			m.MarkTrue(RevisionConditionContainerHealthy)
		}
	case d.Status.ObservedGeneration < d.Generation:
		rs.MarkDeploying()
	case DeploymentAvailable(d):
		m.MarkTrue(RevisionConditionResourcesAvailable)
		m.MarkTrue(RevisionConditionContainerHealthy)
	case ProgressDeadlineExceeded(d):
		var seconds int32
		if d.Spec.ProgressDeadlineSeconds != nil {
			seconds = *d.Spec.ProgressDeadlineSeconds
		}
		rs.MarkProgressDeadlineExceeded(seconds)
	case replicaFailure(d) != nil:
		// The ReplicaSet cannot create pods (a ResourceQuota, a policy, RBAC): say so
		// now, with Kubernetes' reason and message, not after the progress deadline.
		c := replicaFailure(d)
		rs.MarkResourcesUnavailable(c.Reason, c.Message)
	default:
		rs.MarkDeploying()
	}

	switch {
	case d.Status.ReadyReplicas > 0:
		m.MarkTrue(RevisionConditionActive)
	case desired == 0:
		rs.MarkInactiveNoTraffic()
	default:
		rs.MarkActiveDeploying()
	}
}

// PropagateAutoscalerStatus mirrors the PodAutoscaler, which owns the scale: the
// replicas it wants and sees, and its Active condition with Knative's reasons
// (NoTraffic at zero, Queued while waking, TimedOut). A Revision at zero stays Ready:
// Active does not count. A nil PodAutoscaler changes nothing.
func (rs *RevisionStatus) PropagateAutoscalerStatus(pa *av1alpha1.PodAutoscaler) {
	if pa == nil {
		return
	}
	if s := pa.Status.DesiredScale; s != nil {
		desired := *s
		rs.DesiredReplicas = &desired
	}
	if s := pa.Status.ActualScale; s != nil {
		actual := *s
		rs.ActualReplicas = &actual
	}
	m := RevisionConditions.Manage(&rs.Status)
	c := pa.Status.GetCondition(av1alpha1.PodAutoscalerConditionActive)
	switch {
	case c == nil:
	case c.Status == corev1.ConditionTrue:
		m.MarkTrue(RevisionConditionActive)
	case c.Status == corev1.ConditionFalse:
		m.MarkFalse(RevisionConditionActive, c.Reason, "%s", c.Message)
	case c.Reason != "" && c.Reason != av1alpha1.ReasonInitializing:
		m.MarkUnknown(RevisionConditionActive, c.Reason, "%s", c.Message)
	}
	// As Knative's: a PodAutoscaler that gave up on its target's first pods (Ready
	// False, the target never initialized) has scaled the Deployment to zero, which
	// then reads as available; the Revision failed all the same. A reason already
	// False is kept.
	if pa.Status.GetCondition(duck.ConditionReady).IsFalse() &&
		!pa.Status.GetCondition(av1alpha1.PodAutoscalerConditionScaleTargetInitialized).IsTrue() &&
		!m.GetCondition(RevisionConditionResourcesAvailable).IsFalse() && pa.Status.ServiceName != "" {
		m.MarkFalse(RevisionConditionResourcesAvailable, ReasonProgressDeadlineExceeded, "Initial scale was never achieved")
	}
}

// DeploymentAvailable says whether the Deployment's current generation has its pods
// available.
func DeploymentAvailable(d *appsv1.Deployment) bool {
	if d.Status.ObservedGeneration < d.Generation {
		return false
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ProgressDeadlineExceeded reports whether the Deployment's pods did not become
// available within its progressDeadlineSeconds.
func ProgressDeadlineExceeded(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing {
			return c.Status == corev1.ConditionFalse && c.Reason == ReasonProgressDeadlineExceeded
		}
	}
	return false
}

// replicaFailure is the Deployment's ReplicaFailure condition when it is True.
func replicaFailure(d *appsv1.Deployment) *appsv1.DeploymentCondition {
	for i, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}
