package v1alpha1

import (
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Knative's networking.knative.dev keys that users write on Services, Routes and
// DomainMappings (knative.dev/networking pkg/apis/networking/register.go), beside the
// ingress class (ingress_types.go) and the certificate's keys (certificate_lifecycle.go).
const (
	networkingGroup = "networking.knative.dev"

	// IngressClassAnnotationAltKey is the other spelling of IngressClassAnnotationKey.
	IngressClassAnnotationAltKey = networkingGroup + "/ingress-class"
	// CertificateClassAnnotationAltKey is the other spelling of
	// CertificateClassAnnotationKey.
	CertificateClassAnnotationAltKey = networkingGroup + "/certificate-class"

	// The opt-out of external-domain-tls, in the order Knative looks for them: the
	// first present wins (ExternalDomainTLSDisabled).
	DisableAutoTLSAnnotationKey           = networkingGroup + "/disableAutoTLS"
	DisableAutoTLSAnnotationAltKey        = networkingGroup + "/disable-auto-tls"
	DisableExternalDomainTLSAnnotationKey = networkingGroup + "/disable-external-domain-tls"

	// The Route's (or Service's) override of config-network's http-protocol, in the
	// order Knative looks for them.
	HTTPOptionAnnotationKey   = networkingGroup + "/httpOption"
	HTTPProtocolAnnotationKey = networkingGroup + "/http-protocol"

	// VisibilityLabelKey on a Service, a Route or a Route's placeholder Service:
	// VisibilityClusterLocal keeps its hosts off the external listener.
	VisibilityLabelKey     = networkingGroup + "/visibility"
	VisibilityClusterLocal = "cluster-local"
)

// UserAnnotations are the networking.knative.dev annotations Knative's admission lets a
// user write on a Service, Configuration or Route; it refuses others of the group.
var UserAnnotations = []string{
	IngressClassAnnotationKey, IngressClassAnnotationAltKey,
	CertificateClassAnnotationKey, CertificateClassAnnotationAltKey,
	DisableAutoTLSAnnotationKey, DisableAutoTLSAnnotationAltKey, DisableExternalDomainTLSAnnotationKey,
	HTTPOptionAnnotationKey, HTTPProtocolAnnotationKey,
}

// InNetworkingGroup says whether key is one of networking.knative.dev.
func InNetworkingGroup(key string) bool { return strings.HasPrefix(key, networkingGroup) }

// ExternalDomainTLSDisabled reports whether o (a Route, a DomainMapping) opts out of
// external-domain-tls: the first of Knative's three keys present decides, by
// strconv.ParseBool; a value that does not parse does not opt out (as in Knative).
func ExternalDomainTLSDisabled(o metav1.Object) bool {
	for _, key := range []string{DisableAutoTLSAnnotationKey, DisableAutoTLSAnnotationAltKey, DisableExternalDomainTLSAnnotationKey} {
		if v, ok := o.GetAnnotations()[key]; ok {
			b, err := strconv.ParseBool(v)
			return err == nil && b
		}
	}
	return false
}
