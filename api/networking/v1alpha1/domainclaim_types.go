package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ClusterDomainClaim gives one namespace the right to map a domain, its name, with a
// DomainMapping, so that two namespaces cannot serve the same host (Knative's
// networking.internal.knative.dev ClusterDomainClaim). It has no status.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cdc,categories=knative-internal;networking
type ClusterDomainClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec ClusterDomainClaimSpec `json:"spec,omitempty"`
}

// ClusterDomainClaimSpec is the desired state of a ClusterDomainClaim.
type ClusterDomainClaimSpec struct {
	// Namespace is the namespace which is allowed to create a DomainMapping using this
	// ClusterDomainClaim's name.
	Namespace string `json:"namespace"`
}

// +kubebuilder:object:root=true

// ClusterDomainClaimList is a list of ClusterDomainClaim resources.
type ClusterDomainClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterDomainClaim `json:"items"`
}

// Registered here rather than in register.go, so that the kinds of this package each
// keep to their own file.
func init() { SchemeBuilder.Register(&ClusterDomainClaim{}, &ClusterDomainClaimList{}) }
