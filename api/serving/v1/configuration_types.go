package v1

import (
	"github.com/ferry-serving/ferry/api/duck"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Configuration keeps a template of the Revision it creates for each change of it, and
// tracks the latest created and latest ready one.
//
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=config;cfg,categories=all;knative;serving
// +kubebuilder:printcolumn:name="LatestCreated",type=string,JSONPath=".status.latestCreatedRevisionName"
// +kubebuilder:printcolumn:name="LatestReady",type=string,JSONPath=".status.latestReadyRevisionName"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].reason"
type Configuration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec ConfigurationSpec `json:"spec,omitempty"`
	// +optional
	Status ConfigurationStatus `json:"status,omitempty"`
}

// ConfigurationSpec holds the desired state of the Configuration (from the client).
type ConfigurationSpec struct {
	// Template holds the latest specification for the Revision to be stamped out.
	Template RevisionTemplateSpec `json:"template"`
}

// ConfigurationStatusFields holds the fields of Configuration's status that Service
// status also has.
type ConfigurationStatusFields struct {
	// LatestReadyRevisionName holds the name of the latest Revision stamped out from this
	// Configuration that has had its "Ready" condition become "True".
	// +optional
	LatestReadyRevisionName string `json:"latestReadyRevisionName,omitempty"`
	// LatestCreatedRevisionName is the last revision that was created from this
	// Configuration. It might not be ready yet.
	// +optional
	LatestCreatedRevisionName string `json:"latestCreatedRevisionName,omitempty"`
}

// ConfigurationStatus communicates the observed state of the Configuration.
type ConfigurationStatus struct {
	duck.Status               `json:",inline"`
	ConfigurationStatusFields `json:",inline"`
}

// +kubebuilder:object:root=true

// ConfigurationList is a list of Configuration resources.
type ConfigurationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []Configuration `json:"items"`
}
