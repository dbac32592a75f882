package v1

import (
	"fmt"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
)

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
