package v1

import (
	"github.com/ferry-serving/ferry/api/duck"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Route maps a host name to Revisions, directly or through the latest ready Revision of
// Configurations, with traffic splits and tags.
//
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rt,categories=all;knative;serving
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=".status.url"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].reason"
type Route struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec RouteSpec `json:"spec,omitempty"`
	// +optional
	Status RouteStatus `json:"status,omitempty"`
}

// RouteStatusFields holds the fields of Route's status that Service status also has.
type RouteStatusFields struct {
	// URL holds the url that will distribute traffic over the provided traffic targets.
	// +optional
	URL string `json:"url,omitempty"`
	// Address holds the information needed for a Route to be the target of an event.
	// +optional
	Address *duck.Addressable `json:"address,omitempty"`
	// Traffic holds the configured traffic distribution, every target resolved to a
	// Revision name.
	// +optional
	// +listType=atomic
	Traffic []TrafficTarget `json:"traffic,omitempty"`
}

// RouteStatus communicates the observed state of the Route (from the controller).
type RouteStatus struct {
	duck.Status       `json:",inline"`
	RouteStatusFields `json:",inline"`
}

// +kubebuilder:object:root=true

// RouteList is a list of Route resources.
type RouteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []Route `json:"items"`
}
