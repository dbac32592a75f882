// Package v1beta1 holds Knative Serving's v1beta1 API (serving.knative.dev/v1beta1):
// DomainMapping, which serves a Knative Service, Route or Kubernetes Service on a domain
// of the user's own, with the JSON shape, conditions and printer columns of Knative's
// type so that `kn domain` and exported manifests work unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=serving.knative.dev
package v1beta1
