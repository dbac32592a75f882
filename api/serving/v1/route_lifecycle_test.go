package v1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
)

func TestPropagateIngressStatus(t *testing.T) {
	ingress := func(gen, observed int64, ready *duck.Condition) *netv1alpha1.Ingress {
		i := &netv1alpha1.Ingress{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
		i.Status.ObservedGeneration = observed
		if ready != nil {
			i.Status.Conditions = []duck.Condition{*ready}
		}
		return i
	}
	tests := []struct {
		name   string
		ing    *netv1alpha1.Ingress
		status corev1.ConditionStatus
		reason string
	}{
		{"none yet", nil, corev1.ConditionUnknown, ReasonIngressNotConfigured},
		{"ready", ingress(2, 2, &duck.Condition{Type: duck.ConditionReady, Status: corev1.ConditionTrue}), corev1.ConditionTrue, ""},
		{"ready for an older generation", ingress(3, 2, &duck.Condition{Type: duck.ConditionReady, Status: corev1.ConditionTrue}), corev1.ConditionUnknown, ReasonIngressNotConfigured},
		{"not reconciled", ingress(1, 1, nil), corev1.ConditionUnknown, ReasonIngressNotConfigured},
		{"its own reason", ingress(1, 1, &duck.Condition{Type: duck.ConditionReady, Status: corev1.ConditionUnknown, Reason: "Programming"}), corev1.ConditionUnknown, "Programming"},
		// As Knative's: an Unknown Ready without a reason is copied as it is.
		{"no reason", ingress(1, 1, &duck.Condition{Type: duck.ConditionReady, Status: corev1.ConditionUnknown}), corev1.ConditionUnknown, ""},
		{"failed", ingress(1, 1, &duck.Condition{Type: duck.ConditionReady, Status: corev1.ConditionFalse, Reason: "Conflict", Message: "host taken"}), corev1.ConditionFalse, "Conflict"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &RouteStatus{}
			RouteConditions.Manage(&s.Status).InitializeConditions()
			s.PropagateIngressStatus(tc.ing)
			if c := s.GetCondition(RouteConditionIngressReady); c.Status != tc.status || c.Reason != tc.reason {
				t.Errorf("IngressReady = %+v, want %s/%s", c, tc.status, tc.reason)
			}
		})
	}
}
