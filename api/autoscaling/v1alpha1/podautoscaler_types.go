package v1alpha1

import (
	"github.com/ferry-serving/ferry/api/duck"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodAutoscaler scales one Revision's Deployment. The Revision reconciler creates it;
// the autoscaling.knative.dev/class annotation chooses who acts on it (the KPA, built
// into Ferry, or the HPA class, which hands it to a HorizontalPodAutoscaler).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kpa;pa,categories=all;knative-internal;autoscaling
// +kubebuilder:printcolumn:name="DesiredScale",type=integer,JSONPath=".status.desiredScale"
// +kubebuilder:printcolumn:name="ActualScale",type=integer,JSONPath=".status.actualScale"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].reason"
type PodAutoscaler struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec PodAutoscalerSpec `json:"spec,omitempty"`
	// +optional
	Status PodAutoscalerStatus `json:"status,omitempty"`
}

// ReachabilityType says whether a Route sends the Revision traffic.
type ReachabilityType string

const (
	// ReachabilityUnknown: not yet known (a new Revision).
	ReachabilityUnknown ReachabilityType = ""
	// ReachabilityReachable: a Route sends it traffic.
	ReachabilityReachable ReachabilityType = "Reachable"
	// ReachabilityUnreachable: no Route does; min-scale no longer holds pods.
	ReachabilityUnreachable ReachabilityType = "Unreachable"
)

// PodAutoscalerSpec says what to scale and how many requests one pod may take.
type PodAutoscalerSpec struct {
	// ScaleTargetRef is the Deployment to scale, through its scale subresource.
	ScaleTargetRef corev1.ObjectReference `json:"scaleTargetRef"`
	// ContainerConcurrency is the Revision's hard limit of requests in flight per pod
	// (0: no limit). It caps the autoscaler's target.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ContainerConcurrency int64 `json:"containerConcurrency,omitempty"`
	// Reachability says whether any Route sends the Revision traffic.
	// +optional
	// +kubebuilder:validation:Enum="";Reachable;Unreachable
	Reachability ReachabilityType `json:"reachability,omitempty"`
	// ProtocolType is the protocol the Revision's pods speak (http1 or h2c).
	// +optional
	ProtocolType string `json:"protocolType,omitempty"`
}

// PodAutoscalerStatus reports the autoscaler's decision and what runs.
type PodAutoscalerStatus struct {
	duck.Status `json:",inline"`

	// ServiceName is the Service through which the Revision's pods are reached.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`
	// MetricsServiceName is where the pods' metrics come from; Ferry's come from the
	// gateway, so it is the same Service.
	// +optional
	MetricsServiceName string `json:"metricsServiceName,omitempty"`
	// DesiredScale is the number of pods the autoscaler wants.
	// +optional
	DesiredScale *int32 `json:"desiredScale,omitempty"`
	// ActualScale is the number of ready pods.
	// +optional
	ActualScale *int32 `json:"actualScale,omitempty"`
}

// PodAutoscalerList is a list of PodAutoscalers.
//
// +kubebuilder:object:root=true
type PodAutoscalerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodAutoscaler `json:"items"`
}
