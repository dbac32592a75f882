package route

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

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
