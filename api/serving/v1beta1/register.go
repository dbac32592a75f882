package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// SchemeGroupVersion is the group and version of Knative Serving's v1beta1 API.
var SchemeGroupVersion = schema.GroupVersion{Group: "serving.knative.dev", Version: "v1beta1"}

var (
	// SchemeBuilder registers the kinds of this package.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}
	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() { SchemeBuilder.Register(&DomainMapping{}, &DomainMappingList{}) }
