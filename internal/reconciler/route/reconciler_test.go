package route

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

func TestMarkIngress(t *testing.T) {
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
		{"none yet", nil, corev1.ConditionUnknown, reasonIngressNotConfigured},
		{"ready", ingress(2, 2, &duck.Condition{Type: duck.ConditionReady, Status: corev1.ConditionTrue}), corev1.ConditionTrue, ""},
		{"ready for an older generation", ingress(3, 2, &duck.Condition{Type: duck.ConditionReady, Status: corev1.ConditionTrue}), corev1.ConditionUnknown, reasonIngressNotConfigured},
		{"not reconciled", ingress(1, 1, nil), corev1.ConditionUnknown, reasonIngressNotConfigured},
		{"its own reason", ingress(1, 1, &duck.Condition{Type: duck.ConditionReady, Status: corev1.ConditionUnknown, Reason: "Programming"}), corev1.ConditionUnknown, "Programming"},
		{"failed", ingress(1, 1, &duck.Condition{Type: duck.ConditionReady, Status: corev1.ConditionFalse, Reason: "Conflict", Message: "host taken"}), corev1.ConditionFalse, "Conflict"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &v1.RouteStatus{}
			m := v1.RouteConditions.Manage(&s.Status)
			m.InitializeConditions()
			markIngress(m, tc.ing)
			if c := s.GetCondition(v1.RouteConditionIngressReady); c.Status != tc.status || c.Reason != tc.reason {
				t.Errorf("IngressReady = %+v, want %s/%s", c, tc.status, tc.reason)
			}
		})
	}
}

func TestRoutingChanges(t *testing.T) {
	cfg := &v1.Configuration{}
	before := routingOfConfiguration(cfg)
	cfg.Status.LatestCreatedRevisionName = "c-00002"
	if routingOfConfiguration(cfg) != before {
		t.Error("a new latest created Revision must not wake Routes")
	}
	cfg.Status.LatestReadyRevisionName = "c-00002"
	if routingOfConfiguration(cfg) == before {
		t.Error("a new latest ready Revision must wake Routes")
	}

	rev := &v1.Revision{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	rev.Status.ObservedGeneration = 1
	was := routingOfRevision(rev)
	rev.Status.ActualReplicas = new(int32)
	if routingOfRevision(rev) != was {
		t.Error("replicas must not wake Routes")
	}
	rev.Status.Conditions = []duck.Condition{{Type: duck.ConditionReady, Status: corev1.ConditionTrue}}
	if routingOfRevision(rev) == was {
		t.Error("readiness must wake Routes")
	}
}
