package v1alpha1

import (
	"github.com/ferry-serving/ferry/api/duck"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Certificate asks a certificate provider for a TLS certificate covering dnsNames, stored
// in the Secret secretName of its namespace (Knative's KCertificate). The provider is
// picked by the CertificateClassAnnotationKey annotation.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kcert,categories=knative-internal;networking
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].reason"
type Certificate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec CertificateSpec `json:"spec,omitempty"`
	// +optional
	Status CertificateStatus `json:"status,omitempty"`
}

// CertificateSpec is the certificate wanted.
//
// +kubebuilder:validation:XValidation:rule="!has(self.domain) || size(self.domain) == 0 || self.dnsNames.exists(n, n == self.domain || n.endsWith('.' + self.domain))",message="domain must equal or be a suffix of one of dnsNames"
type CertificateSpec struct {
	// DNSNames the certificate covers; wildcards allowed.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	DNSNames []string `json:"dnsNames"`
	// Domain is the domain these names belong to.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Domain string `json:"domain,omitempty"`
	// SecretName is the Secret, in the Certificate's namespace, that receives
	// tls.crt and tls.key.
	// +kubebuilder:validation:MinLength=1
	SecretName string `json:"secretName"`
}

// CertificateStatus is what the provider reports.
type CertificateStatus struct {
	duck.Status `json:",inline"`
	// NotAfter is when the certificate expires.
	// +optional
	NotAfter *metav1.Time `json:"notAfter,omitempty"`
	// HTTP01Challenges are the ACME HTTP-01 challenges the ingress must route while the
	// certificate is issued.
	// +optional
	// +listType=atomic
	HTTP01Challenges []HTTP01Challenge `json:"http01Challenges,omitempty"`
}

// HTTP01Challenge is one ACME challenge path and the Service that answers it.
type HTTP01Challenge struct {
	// URL the challenge is fetched at.
	URL string `json:"url,omitempty"`
	// ServiceName, ServiceNamespace and ServicePort answer it.
	ServiceName      string `json:"serviceName,omitempty"`
	ServiceNamespace string `json:"serviceNamespace,omitempty"`
	ServicePort      int32  `json:"servicePort,omitempty"`
}

// +kubebuilder:object:root=true

// CertificateList is a list of Certificate resources.
type CertificateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []Certificate `json:"items"`
}
