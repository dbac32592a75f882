package duck

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionType is the type of a Knative condition, e.g. Ready.
type ConditionType string

// ConditionReady is the happy condition of every Knative kind.
const ConditionReady ConditionType = "Ready"

// ConditionSeverity says how much a non-True condition matters. Empty means Error, the
// only severity that a happy condition is computed from.
type ConditionSeverity string

const (
	ConditionSeverityError   ConditionSeverity = ""
	ConditionSeverityWarning ConditionSeverity = "Warning"
	ConditionSeverityInfo    ConditionSeverity = "Info"
)

// Condition is Knative's condition: like metav1.Condition, plus Severity, and with
// optional reason and message.
type Condition struct {
	// Type of condition.
	// +required
	Type ConditionType `json:"type"`
	// Status of the condition, one of True, False, Unknown.
	// +required
	Status corev1.ConditionStatus `json:"status"`
	// Severity with which to treat failures of this type of condition.
	// +optional
	Severity ConditionSeverity `json:"severity,omitempty"`
	// LastTransitionTime is the last time the condition transitioned from one status to another.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is a one-word CamelCase reason for the condition's last transition.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message is a human-readable message indicating details about the transition.
	// +optional
	Message string `json:"message,omitempty"`
}

// IsTrue reports whether the condition is present and True.
func (c *Condition) IsTrue() bool { return c != nil && c.Status == corev1.ConditionTrue }

// IsFalse reports whether the condition is present and False.
func (c *Condition) IsFalse() bool { return c != nil && c.Status == corev1.ConditionFalse }

// IsUnknown reports whether the condition is absent or Unknown.
func (c *Condition) IsUnknown() bool { return c == nil || c.Status == corev1.ConditionUnknown }

// sameState reports whether two conditions say the same thing, ignoring the time.
func (c *Condition) sameState(o *Condition) bool {
	return c.Type == o.Type && c.Status == o.Status && c.Severity == o.Severity &&
		c.Reason == o.Reason && c.Message == o.Message
}

// Status is the status block that every Knative kind embeds.
type Status struct {
	// ObservedGeneration is the generation last processed by the controller.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions the latest available observations of the resource's current state.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []Condition `json:"conditions,omitempty"`
	// Annotations is additional status information.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Duck returns the Status itself, so that code that handles every kind's status alike
// (each embeds a Status) can reach it.
func (s *Status) Duck() *Status { return s }

// KeepTransitionTimes gives each condition the time it last changed status as seen
// from before, the status readers last saw: before's time where the status is the same,
// now where it changed. A condition that flipped and flipped back within one reconcile
// then compares equal to before, and is not written for its time alone; and the time
// comes from the writer's clock, not from whenever a reconcile happened to mark it.
func (s *Status) KeepTransitionTimes(before *Status, now time.Time) {
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if old := before.GetCondition(c.Type); old != nil && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		} else {
			c.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
		}
	}
}

// GetCondition returns the condition of type t, or nil.
func (s *Status) GetCondition(t ConditionType) *Condition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// Settled reports whether s speaks for generation with a Ready condition True or
// False: the controller is done with that generation, until something changes.
func (s *Status) Settled(generation int64) bool {
	return s.ObservedGeneration == generation && !s.GetCondition(ConditionReady).IsUnknown()
}

// Addressable is the status shape of something reachable inside the cluster.
type Addressable struct {
	// URL is where the resource is reachable.
	// +optional
	URL string `json:"url,omitempty"`
}
