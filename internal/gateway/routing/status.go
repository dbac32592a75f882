package routing

import (
	"fmt"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
)

// markStatus writes into status what programming ci produced. It leaves unchanged
// conditions as they are, so that an unchanged status compares equal and is not
// written. allServe says every live gateway replica serves ci's generation: until
// then LoadBalancerReady is Unknown, as Knative's while it probes the gateway pods. A
// status already Ready for the generation stays so: a replica that joins later
// programs what exists before it serves, and the records it was decided on are
// pruned once it is written.
func markStatus(status *v1alpha1.IngressStatus, ci *compiledIngress, conflicts []hostConflict, public, private string, allServe bool) {
	wasReady := status.ObservedGeneration == ci.generation &&
		v1alpha1.IngressConditions.Manage(&status.Status).GetCondition(v1alpha1.IngressConditionLoadBalancerReady).IsTrue()
	status.ObservedGeneration = ci.generation
	conditions := v1alpha1.IngressConditions.Manage(&status.Status)
	conditions.InitializeConditions()
	var failure *specError
	switch {
	case ci.invalid != nil:
		failure = ci.invalid
	case len(conflicts) > 0:
		failure = conflictError(conflicts)
	}
	if failure != nil {
		conditions.MarkFalse(v1alpha1.IngressConditionNetworkConfigured, failure.reason, "%s", failure.message)
		conditions.MarkUnknown(v1alpha1.IngressConditionLoadBalancerReady, v1alpha1.ReasonNotConfigured,
			"the gateway does not serve this ingress until its network is configured")
		status.PublicLoadBalancer = nil
		status.PrivateLoadBalancer = nil
		return
	}
	conditions.MarkTrue(v1alpha1.IngressConditionNetworkConfigured)
	if !allServe && !wasReady {
		conditions.MarkUnknown(v1alpha1.IngressConditionLoadBalancerReady, backends.ReasonWaitingForReplicas, backends.MessageWaitingForReplicas)
		return
	}
	conditions.MarkTrue(v1alpha1.IngressConditionLoadBalancerReady)
	status.PublicLoadBalancer = loadBalancer(public)
	status.PrivateLoadBalancer = loadBalancer(private)
}

func conflictError(conflicts []hostConflict) *specError {
	c := conflicts[0]
	msg := fmt.Sprintf("host %q is served by ingress %s, which is older", c.host, c.owner)
	if len(conflicts) > 1 {
		msg += fmt.Sprintf(" (and %d more hosts are taken)", len(conflicts)-1)
	}
	return &specError{reason: reasonHostConflict, message: msg}
}

func loadBalancer(domain string) *v1alpha1.LoadBalancerStatus {
	return &v1alpha1.LoadBalancerStatus{Ingress: []v1alpha1.LoadBalancerIngressStatus{{Domain: domain}}}
}
