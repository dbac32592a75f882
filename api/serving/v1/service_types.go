package v1

import (
	"github.com/ferry-serving/ferry/api/duck"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Service manages a Configuration and a Route of its own name: the whole lifecycle of
// one piece of software.
//
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kservice;ksvc,categories=all;knative;serving
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=".status.url"
// +kubebuilder:printcolumn:name="LatestCreated",type=string,JSONPath=".status.latestCreatedRevisionName"
// +kubebuilder:printcolumn:name="LatestReady",type=string,JSONPath=".status.latestReadyRevisionName"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].reason"
type Service struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec ServiceSpec `json:"spec,omitempty"`
	// +optional
	Status ServiceStatus `json:"status,omitempty"`
}

// ServiceSpec is a Configuration's spec and a Route's spec side by side.
type ServiceSpec struct {
	ConfigurationSpec `json:",inline"`
	RouteSpec         `json:",inline"`
}

// ServiceStatus communicates the observed state of the Service (from the controller).
type ServiceStatus struct {
	duck.Status               `json:",inline"`
	ConfigurationStatusFields `json:",inline"`
	RouteStatusFields         `json:",inline"`
}

// +kubebuilder:object:root=true

// ServiceList is a list of Service resources.
type ServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []Service `json:"items"`
}
