package v1alpha1

import (
	"github.com/ferry-serving/ferry/api/duck"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// IngressClassAnnotationKey picks the ingress implementation that serves a KIngress.
const IngressClassAnnotationKey = "networking.knative.dev/ingress.class"

// RolloutAnnotationKey is the KIngress annotation that holds a gradual rollout's state
// (Knative's networking.RolloutAnnotationKey).
const RolloutAnnotationKey = "networking.internal.knative.dev/rollout"

// Ingress is a collection of rules that allow inbound connections to reach the endpoints
// defined by a backend (Knative's KIngress).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kingress;king,categories=knative-internal;networking
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].reason"
type Ingress struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec IngressSpec `json:"spec,omitempty"`
	// +optional
	Status IngressStatus `json:"status,omitempty"`
}

// IngressSpec describes the Ingress the user wishes to exist.
type IngressSpec struct {
	// TLS configuration.
	// +optional
	// +listType=atomic
	TLS []IngressTLS `json:"tls,omitempty"`
	// Rules for routing traffic, by host.
	// +optional
	// +listType=atomic
	Rules []IngressRule `json:"rules,omitempty"`
	// HTTPOption is Enabled or Redirected (to HTTPS).
	// +optional
	HTTPOption HTTPOption `json:"httpOption,omitempty"`
}

// HTTPOption says what to do with plain HTTP when TLS is configured.
// +kubebuilder:validation:Enum=Enabled;Redirected
type HTTPOption string

const (
	HTTPOptionEnabled    HTTPOption = "Enabled"
	HTTPOptionRedirected HTTPOption = "Redirected"
)

// IngressTLS describes the transport layer security of hosts.
type IngressTLS struct {
	// +listType=atomic
	Hosts           []string `json:"hosts,omitempty"`
	SecretName      string   `json:"secretName,omitempty"`
	SecretNamespace string   `json:"secretNamespace,omitempty"`
}

// IngressVisibility says on which listener a rule is served.
// +kubebuilder:validation:Enum=ExternalIP;ClusterLocal
type IngressVisibility string

const (
	IngressVisibilityExternalIP   IngressVisibility = "ExternalIP"
	IngressVisibilityClusterLocal IngressVisibility = "ClusterLocal"
)

// IngressRule routes the requests for some hosts.
type IngressRule struct {
	// Hosts that this rule serves.
	// +listType=atomic
	Hosts []string `json:"hosts,omitempty"`
	// Visibility of the rule: ExternalIP (the default) or ClusterLocal.
	// +optional
	Visibility IngressVisibility `json:"visibility,omitempty"`
	// HTTP holds the paths of the rule.
	HTTP *HTTPIngressRuleValue `json:"http,omitempty"`
}

// HTTPIngressRuleValue is a list of paths.
type HTTPIngressRuleValue struct {
	// +listType=atomic
	Paths []HTTPIngressPath `json:"paths"`
}

// HTTPIngressPath routes one path prefix to weighted backends.
type HTTPIngressPath struct {
	// Path is a prefix; empty matches everything.
	// +optional
	Path string `json:"path,omitempty"`
	// RewriteHost rewrites the Host header for the backends.
	// +optional
	RewriteHost string `json:"rewriteHost,omitempty"`
	// Headers the request must carry to match this path.
	// +optional
	Headers map[string]HeaderMatch `json:"headers,omitempty"`
	// AppendHeaders are added to requests matching this path.
	// +optional
	AppendHeaders map[string]string `json:"appendHeaders,omitempty"`
	// Splits of the traffic over backends, by percent.
	// +listType=atomic
	Splits []IngressBackendSplit `json:"splits"`
}

// HeaderMatch matches a header value exactly.
type HeaderMatch struct {
	Exact string `json:"exact"`
}

// IngressBackend is a Kubernetes Service and port.
type IngressBackend struct {
	ServiceNamespace string             `json:"serviceNamespace"`
	ServiceName      string             `json:"serviceName"`
	ServicePort      intstr.IntOrString `json:"servicePort"`
}

// IngressBackendSplit is a backend with its share of traffic.
type IngressBackendSplit struct {
	IngressBackend `json:",inline"`
	// Percent of the path's traffic for this backend.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Percent int `json:"percent,omitempty"`
	// AppendHeaders are added to requests sent to this backend.
	// +optional
	AppendHeaders map[string]string `json:"appendHeaders,omitempty"`
}

// IngressStatus describes the current state of the Ingress.
type IngressStatus struct {
	duck.Status `json:",inline"`
	// PublicLoadBalancer is where external traffic enters.
	// +optional
	PublicLoadBalancer *LoadBalancerStatus `json:"publicLoadBalancer,omitempty"`
	// PrivateLoadBalancer is where cluster-local traffic enters.
	// +optional
	PrivateLoadBalancer *LoadBalancerStatus `json:"privateLoadBalancer,omitempty"`
}

// LoadBalancerStatus lists the load balancer's entry points.
type LoadBalancerStatus struct {
	// +listType=atomic
	Ingress []LoadBalancerIngressStatus `json:"ingress,omitempty"`
}

// LoadBalancerIngressStatus is one entry point.
type LoadBalancerIngressStatus struct {
	IP             string `json:"ip,omitempty"`
	Domain         string `json:"domain,omitempty"`
	DomainInternal string `json:"domainInternal,omitempty"`
	MeshOnly       bool   `json:"meshOnly,omitempty"`
}

// IsReady reports whether the Ingress is Ready for its current generation.
func (i *Ingress) IsReady() bool {
	return i.Status.ObservedGeneration == i.Generation && i.Status.GetCondition(duck.ConditionReady).IsTrue()
}

// +kubebuilder:object:root=true

// IngressList is a list of Ingress resources.
type IngressList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []Ingress `json:"items"`
}
