package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// SchemeGroupVersion is the group and version of Knative's KIngress API.
var SchemeGroupVersion = schema.GroupVersion{Group: "networking.internal.knative.dev", Version: "v1alpha1"}

var (
	// SchemeBuilder registers the kinds of this package.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}
	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&Ingress{}, &IngressList{}, &Certificate{}, &CertificateList{})
}
