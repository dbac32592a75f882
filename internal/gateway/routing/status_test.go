package routing

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
)

func TestMarkStatusWaitsForEveryReplica(t *testing.T) {
	good := compileIngress(gatewaytest.SimpleIngress("a", 0, "a-1", "a.example.com"), backends.NewRegistry())
	var status v1alpha1.IngressStatus
	markStatus(&status, good, nil, "pub", "priv", false)
	lb := v1alpha1.IngressConditions.Manage(&status.Status).GetCondition(v1alpha1.IngressConditionLoadBalancerReady)
	if lb.Status != corev1.ConditionUnknown || lb.Reason != v1alpha1.ReasonUninitialized || lb.Message != "Waiting for load balancer to be ready" {
		t.Errorf("LoadBalancerReady %+v while a replica does not serve the ingress", lb)
	}
	if status.ObservedGeneration != 1 || v1alpha1.IngressConditions.Manage(&status.Status).IsHappy() || !backends.WaitingForReplicas(&status) {
		t.Errorf("status %+v", status)
	}
	markStatus(&status, good, nil, "pub", "priv", true)
	if !v1alpha1.IngressConditions.Manage(&status.Status).IsHappy() || status.PublicLoadBalancer == nil {
		t.Fatalf("status %+v once every replica serves it", status)
	}
	// Ready for this generation stays Ready when the records it was decided on are
	// pruned (or a replica joins).
	markStatus(&status, good, nil, "pub", "priv", false)
	if !v1alpha1.IngressConditions.Manage(&status.Status).IsHappy() {
		t.Errorf("status %+v went back from Ready", status)
	}
}
