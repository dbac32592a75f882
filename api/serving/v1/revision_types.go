package v1

import (
	"github.com/ferry-serving/ferry/api/duck"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Revision is an immutable snapshot of code and configuration, created by a
// Configuration for each of its template's generations.
//
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rev,categories=all;knative;serving
// +kubebuilder:printcolumn:name="Config Name",type=string,JSONPath=".metadata.labels['serving\\.knative\\.dev/configuration']"
// +kubebuilder:printcolumn:name="Generation",type=string,JSONPath=".metadata.labels['serving\\.knative\\.dev/configurationGeneration']"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].reason"
// +kubebuilder:printcolumn:name="Actual Replicas",type=integer,JSONPath=".status.actualReplicas"
// +kubebuilder:printcolumn:name="Desired Replicas",type=integer,JSONPath=".status.desiredReplicas"
type Revision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
	Spec RevisionSpec `json:"spec,omitempty"`
	// +optional
	Status RevisionStatus `json:"status,omitempty"`
}

// RevisionTemplateSpec describes the Revisions a Configuration creates.
type RevisionTemplateSpec struct {
	// +optional
	ObjectMeta metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec RevisionSpec `json:"spec,omitempty"`
}

// RevisionSpec holds the desired state of the Revision: a PodSpec plus Knative's knobs.
type RevisionSpec struct {
	corev1.PodSpec `json:",inline"`

	// ContainerConcurrency specifies the maximum allowed in-flight (concurrent) requests
	// per container of the Revision. 0 means no limit. Its default and bounds come from
	// config-defaults (container-concurrency, container-concurrency-max-limit) and are
	// applied by Ferry's admission webhooks, not by the schema.
	// +optional
	ContainerConcurrency *int64 `json:"containerConcurrency,omitempty"`
	// TimeoutSeconds is the maximum duration in seconds that the request routing layer
	// will wait for a request delivered to a container to begin replying. Its default
	// and maximum come from config-defaults (revision-timeout-seconds,
	// max-revision-timeout-seconds) and are applied by Ferry's admission webhooks.
	// +optional
	TimeoutSeconds *int64 `json:"timeoutSeconds,omitempty"`
	// ResponseStartTimeoutSeconds is the maximum duration in seconds that the request
	// routing layer will wait for a request delivered to a container to begin sending
	// any network traffic.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ResponseStartTimeoutSeconds *int64 `json:"responseStartTimeoutSeconds,omitempty"`
	// IdleTimeoutSeconds is the maximum duration in seconds a request will be allowed to
	// stay open while not receiving any bytes from the user's application.
	// +optional
	// +kubebuilder:validation:Minimum=0
	IdleTimeoutSeconds *int64 `json:"idleTimeoutSeconds,omitempty"`
}

// RevisionStatus communicates the observed state of the Revision (from the controller).
type RevisionStatus struct {
	duck.Status `json:",inline"`

	// LogURL specifies the generated logging url for this particular revision.
	// +optional
	LogURL string `json:"logUrl,omitempty"`
	// ContainerStatuses is the digest of each container's image.
	// +optional
	// +listType=atomic
	ContainerStatuses []ContainerStatus `json:"containerStatuses,omitempty"`
	// InitContainerStatuses is the digest of each init container's image.
	// +optional
	// +listType=atomic
	InitContainerStatuses []ContainerStatus `json:"initContainerStatuses,omitempty"`
	// ActualReplicas reflects the amount of ready pods running this revision.
	// +optional
	ActualReplicas *int32 `json:"actualReplicas,omitempty"`
	// DesiredReplicas reflects the desired amount of pods running this revision.
	// +optional
	DesiredReplicas *int32 `json:"desiredReplicas,omitempty"`
}

// ContainerStatus holds the resolved image digest of a container.
type ContainerStatus struct {
	Name        string `json:"name,omitempty"`
	ImageDigest string `json:"imageDigest,omitempty"`
}

// +kubebuilder:object:root=true

// RevisionList is a list of Revision resources.
type RevisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []Revision `json:"items"`
}
