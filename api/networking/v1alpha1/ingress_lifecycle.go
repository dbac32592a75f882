package v1alpha1

import "github.com/ferry-serving/ferry/api/duck"

// Ingress condition types.
const (
	IngressConditionReady                                = duck.ConditionReady
	IngressConditionNetworkConfigured duck.ConditionType = "NetworkConfigured"
	IngressConditionLoadBalancerReady duck.ConditionType = "LoadBalancerReady"
)

// IngressConditions derives Ready from NetworkConfigured and LoadBalancerReady.
var IngressConditions = duck.NewLivingConditionSet(IngressConditionNetworkConfigured, IngressConditionLoadBalancerReady)

// Reasons of a KIngress's conditions, as Ferry's gateway writes them.
const (
	// NetworkConfigured False: the spec cannot be served as it is.
	ReasonInvalidHost  = "InvalidHost"
	ReasonInvalidPath  = "InvalidPath"
	ReasonInvalidSplit = "InvalidSplit"
	// ReasonHostConflict: an older KIngress serves one of the hosts.
	ReasonHostConflict = "HostConflict"
	// LoadBalancerReady Unknown: not served until the network is configured.
	ReasonNotConfigured = "NotConfigured"
	// ReasonUninitialized: LoadBalancerReady Unknown until every gateway replica serves
	// the generation, Knative's reason while it probes the gateway pods.
	ReasonUninitialized = "Uninitialized"
	// ReasonInvalidSecret is the Warning Event's reason for a spec.tls Secret that is
	// missing or holds no valid certificate.
	ReasonInvalidSecret = "InvalidSecret"
)

// ObservedReady is the KIngress's Ready condition once its status speaks for its
// current generation; nil before that, without a Ready, or without a KIngress.
func (i *Ingress) ObservedReady() *duck.Condition {
	if i == nil || i.Status.ObservedGeneration != i.Generation {
		return nil
	}
	return i.Status.GetCondition(IngressConditionReady)
}
