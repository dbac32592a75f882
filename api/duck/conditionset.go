package duck

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:generate=false

// ConditionSet names a happy condition and the dependents it is computed from: happy is
// True when every dependent is True, False when any is False, Unknown otherwise.
type ConditionSet struct {
	happy      ConditionType
	dependents []ConditionType
}

// NewLivingConditionSet returns a set whose happy condition is Ready.
func NewLivingConditionSet(dependents ...ConditionType) ConditionSet {
	return ConditionSet{happy: ConditionReady, dependents: dependents}
}

// Manage returns a manager that reads and writes the set's conditions on s. The clock
// is injectable so that table tests compare exact conditions.
func (cs ConditionSet) Manage(s *Status) ConditionManager {
	return ConditionManager{set: cs, status: s, now: time.Now}
}

// +kubebuilder:object:generate=false

// ConditionManager changes the conditions of one Status.
type ConditionManager struct {
	set    ConditionSet
	status *Status
	now    func() time.Time
}

// WithClock returns the manager with a fixed clock, for tests.
func (m ConditionManager) WithClock(now func() time.Time) ConditionManager {
	m.now = now
	return m
}

// InitializeConditions sets every condition of the set that is missing to Unknown.
func (m ConditionManager) InitializeConditions() {
	for _, t := range append([]ConditionType{m.set.happy}, m.set.dependents...) {
		if m.status.GetCondition(t) == nil {
			m.set1(Condition{Type: t, Status: corev1.ConditionUnknown})
		}
	}
}

// GetCondition returns the condition of type t, or nil.
func (m ConditionManager) GetCondition(t ConditionType) *Condition {
	return m.status.GetCondition(t)
}

// GetTopLevelCondition returns the happy condition.
func (m ConditionManager) GetTopLevelCondition() *Condition {
	return m.status.GetCondition(m.set.happy)
}

// IsHappy reports whether the happy condition is True.
func (m ConditionManager) IsHappy() bool {
	return m.GetTopLevelCondition().IsTrue()
}

// MarkTrue sets condition t True and recomputes the happy condition.
func (m ConditionManager) MarkTrue(t ConditionType) {
	m.set1(Condition{Type: t, Status: corev1.ConditionTrue, Severity: m.severity(t)})
	m.recomputeHappy()
}

// MarkTrueWithReason sets condition t True with a reason and message.
func (m ConditionManager) MarkTrueWithReason(t ConditionType, reason, format string, args ...any) {
	m.set1(Condition{Type: t, Status: corev1.ConditionTrue, Severity: m.severity(t), Reason: reason, Message: fmt.Sprintf(format, args...)})
	m.recomputeHappy()
}

// MarkUnknown sets condition t Unknown and recomputes the happy condition.
func (m ConditionManager) MarkUnknown(t ConditionType, reason, format string, args ...any) {
	m.set1(Condition{Type: t, Status: corev1.ConditionUnknown, Severity: m.severity(t), Reason: reason, Message: fmt.Sprintf(format, args...)})
	m.recomputeHappy()
}

// MarkFalse sets condition t False and recomputes the happy condition.
func (m ConditionManager) MarkFalse(t ConditionType, reason, format string, args ...any) {
	m.set1(Condition{Type: t, Status: corev1.ConditionFalse, Severity: m.severity(t), Reason: reason, Message: fmt.Sprintf(format, args...)})
	m.recomputeHappy()
}

// SetCondition copies c (e.g. a child's condition) into the set under its own type.
func (m ConditionManager) SetCondition(c Condition) {
	c.Severity = m.severity(c.Type)
	m.set1(c)
	m.recomputeHappy()
}

func (m ConditionManager) severity(t ConditionType) ConditionSeverity {
	if t == m.set.happy {
		return ConditionSeverityError
	}
	for _, d := range m.set.dependents {
		if d == t {
			return ConditionSeverityError
		}
	}
	return ConditionSeverityInfo
}

// recomputeHappy derives the happy condition from the dependents: the first False
// dependent's reason wins, then the first Unknown one's.
func (m ConditionManager) recomputeHappy() {
	if len(m.set.dependents) == 0 {
		return
	}
	var unknown *Condition
	for _, t := range m.set.dependents {
		c := m.status.GetCondition(t)
		switch {
		case c.IsFalse():
			m.set1(Condition{Type: m.set.happy, Status: corev1.ConditionFalse, Reason: c.Reason, Message: c.Message})
			return
		case c == nil:
			if unknown == nil {
				unknown = &Condition{Type: t, Status: corev1.ConditionUnknown}
			}
		case c.IsUnknown():
			if unknown == nil {
				unknown = c
			}
		}
	}
	if unknown != nil {
		m.set1(Condition{Type: m.set.happy, Status: corev1.ConditionUnknown, Reason: unknown.Reason, Message: unknown.Message})
		return
	}
	m.set1(Condition{Type: m.set.happy, Status: corev1.ConditionTrue})
}

// set1 stores c, keeping the old transition time when nothing but the time would
// change, so that an unchanged status compares equal and is not written.
func (m ConditionManager) set1(c Condition) {
	if old := m.status.GetCondition(c.Type); old != nil {
		if old.sameState(&c) {
			return
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
	}
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = metav1.NewTime(m.now().Truncate(time.Second))
	}
	conds := make([]Condition, 0, len(m.status.Conditions)+1)
	for _, o := range m.status.Conditions {
		if o.Type != c.Type {
			conds = append(conds, o)
		}
	}
	conds = append(conds, c)
	// Knative sorts conditions by type so that status diffs are stable.
	sort.Slice(conds, func(i, j int) bool { return conds[i].Type < conds[j].Type })
	m.status.Conditions = conds
}

// Mirror sets condition t to what another object's condition c says: a child's
// Ready, as Knative's Propagate*Status methods copy it (nil counts as Unknown with no
// reason).
func (m ConditionManager) Mirror(t ConditionType, c *Condition) {
	switch {
	case c.IsTrue():
		m.MarkTrue(t)
	case c.IsFalse():
		m.MarkFalse(t, c.Reason, "%s", c.Message)
	case c == nil:
		m.MarkUnknown(t, "", "")
	default:
		m.MarkUnknown(t, c.Reason, "%s", c.Message)
	}
}
