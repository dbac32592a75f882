package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-serving/ferry/api/duck"
)

// DomainMapping maps a domain name, its own name, to an Addressable in its namespace: a
// Knative Service or Route, or a Kubernetes Service.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dm,categories=all;knative;serving
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=".status.url"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].reason"
type DomainMapping struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec DomainMappingSpec `json:"spec,omitempty"`
	// +optional
	Status DomainMappingStatus `json:"status,omitempty"`
}

// DomainMappingSpec is the desired state of a DomainMapping.
type DomainMappingSpec struct {
	// Ref is the target of the mapping: an Addressable whose URL is
	// {name}.{namespace}.svc.{cluster domain}, such as a Knative Service or Route or a
	// Kubernetes Service, in the DomainMapping's namespace.
	Ref KReference `json:"ref"`
	// TLS terminates TLS for the domain with an existing secret.
	// +optional
	TLS *SecretTLS `json:"tls,omitempty"`
}

// KReference is Knative's reference to an object in the same namespace (knative.dev/pkg
// duck/v1 KReference).
type KReference struct {
	// Kind of the referent.
	Kind string `json:"kind"`
	// Namespace of the referent; defaults to the DomainMapping's.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the referent.
	Name string `json:"name"`
	// APIVersion of the referent.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Group of the referent; Knative refuses it unless its kreference-group feature is
	// on, which Ferry does not have.
	// +optional
	Group string `json:"group,omitempty"`
}

// SecretTLS names the secret that terminates TLS for the domain.
type SecretTLS struct {
	// SecretName is the name of an existing secret in the DomainMapping's namespace.
	SecretName string `json:"secretName"`
}

// DomainMappingStatus is the observed state of a DomainMapping.
type DomainMappingStatus struct {
	duck.Status `json:",inline"`
	// URL is where the domain is served.
	// +optional
	URL string `json:"url,omitempty"`
	// Address holds the information needed for the DomainMapping to be the target of an
	// event (the same URL).
	// +optional
	Address *duck.Addressable `json:"address,omitempty"`
}

// IsReady reports whether the DomainMapping is Ready for its current generation.
func (dm *DomainMapping) IsReady() bool {
	return dm.Status.ObservedGeneration == dm.Generation && dm.Status.GetCondition(duck.ConditionReady).IsTrue()
}

// +kubebuilder:object:root=true

// DomainMappingList is a list of DomainMapping resources.
type DomainMappingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []DomainMapping `json:"items"`
}

// Labels Knative puts on a DomainMapping's KIngress, to find it from the mapping.
const (
	DomainMappingUIDLabelKey       = "serving.knative.dev/domainMappingUID"
	DomainMappingNamespaceLabelKey = "serving.knative.dev/domainMappingNamespace"
)
