package v1alpha1

import "github.com/ferry-serving/ferry/api/duck"

// PodAutoscaler condition types, as Knative's.
const (
	PodAutoscalerConditionReady = duck.ConditionReady
	// Active: the target has pods serving (True), none because there is no traffic
	// (False, NoTraffic or TimedOut), or is being woken (Unknown, Queued).
	PodAutoscalerConditionActive duck.ConditionType = "Active"
	// ScaleTargetInitialized: the target reached its initial scale once.
	PodAutoscalerConditionScaleTargetInitialized duck.ConditionType = "ScaleTargetInitialized"
	// SKSReady: the path to the pods is programmed. Ferry has no ServerlessService:
	// the gateway follows a Revision's pods itself, or holds its requests while there
	// are none, so this is always True.
	PodAutoscalerConditionSKSReady duck.ConditionType = "SKSReady"
)

// Reasons of the Active condition, as Knative's (the Revision's Active mirrors them).
const (
	ReasonNoTraffic    = "NoTraffic"
	ReasonQueued       = "Queued"
	ReasonTimedOut     = "TimedOut"
	ReasonInitializing = "Initializing"

	MessageNoTraffic = "The target is not receiving traffic."
	MessageQueued    = "Requests to the target are being buffered as resources are provisioned."
	MessageTimedOut  = "The target could not be activated."
)

// ReasonDeploymentMissing is ScaleTargetInitialized's reason (Unknown) while the
// Revision's Deployment does not exist yet.
const ReasonDeploymentMissing = "DeploymentMissing"

// MarkScaleTargetMissing says the scale target does not exist yet.
func (s *PodAutoscalerStatus) MarkScaleTargetMissing(name string) {
	PodAutoscalerConditions.Manage(&s.Status).MarkUnknown(PodAutoscalerConditionScaleTargetInitialized, ReasonDeploymentMissing,
		"The scale target %q does not exist yet.", name)
}

// MarkScaleTargetInitializing says the scale target has not reached its initial scale.
func (s *PodAutoscalerStatus) MarkScaleTargetInitializing() {
	PodAutoscalerConditions.Manage(&s.Status).MarkUnknown(PodAutoscalerConditionScaleTargetInitialized, ReasonInitializing, "")
}

// PodAutoscalerConditions derives Ready from Active, ScaleTargetInitialized and
// SKSReady, as Knative's does.
var PodAutoscalerConditions = duck.NewLivingConditionSet(PodAutoscalerConditionActive,
	PodAutoscalerConditionScaleTargetInitialized, PodAutoscalerConditionSKSReady)

// Class annotation values.
const (
	ClassAnnotationKey  = "autoscaling.knative.dev/class"
	KPA                 = "kpa.autoscaling.knative.dev"
	HPA                 = "hpa.autoscaling.knative.dev"
	MetricAnnotationKey = "autoscaling.knative.dev/metric"
)

// Class is the PodAutoscaler's class: its annotation, else the KPA.
func (pa *PodAutoscaler) Class() string {
	if c := pa.Annotations[ClassAnnotationKey]; c != "" {
		return c
	}
	return KPA
}

// IsReady reports whether the PodAutoscaler is Ready for its current generation.
func (pa *PodAutoscaler) IsReady() bool {
	return pa.Status.ObservedGeneration == pa.Generation && pa.Status.GetCondition(duck.ConditionReady).IsTrue()
}

// DuckStatus returns the PodAutoscaler's Knative status.
func (pa *PodAutoscaler) DuckStatus() *duck.Status { return &pa.Status.Status }

// MarkActive says the target has pods serving.
func (s *PodAutoscalerStatus) MarkActive() {
	PodAutoscalerConditions.Manage(&s.Status).MarkTrue(PodAutoscalerConditionActive)
}

// MarkInactive says the target has no pods, with the reason (NoTraffic, TimedOut).
func (s *PodAutoscalerStatus) MarkInactive(reason, message string) {
	PodAutoscalerConditions.Manage(&s.Status).MarkFalse(PodAutoscalerConditionActive, reason, "%s", message)
}

// MarkActivating says the target is being woken (Queued), or, with ReasonInitializing
// and no message, that the autoscaler has not decided yet.
func (s *PodAutoscalerStatus) MarkActivating(reason, message string) {
	PodAutoscalerConditions.Manage(&s.Status).MarkUnknown(PodAutoscalerConditionActive, reason, "%s", message)
}

// MarkSKSReady says the path to the pods is programmed: always, as Ferry has no
// ServerlessService (the gateway follows the pods itself).
func (s *PodAutoscalerStatus) MarkSKSReady() {
	PodAutoscalerConditions.Manage(&s.Status).MarkTrue(PodAutoscalerConditionSKSReady)
}

// MarkScaleTargetInitialized says the target reached its initial scale once.
func (s *PodAutoscalerStatus) MarkScaleTargetInitialized() {
	PodAutoscalerConditions.Manage(&s.Status).MarkTrue(PodAutoscalerConditionScaleTargetInitialized)
}
