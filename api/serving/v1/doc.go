// Package v1 holds Knative Serving's v1 API (serving.knative.dev/v1): Service,
// Configuration, Revision and Route, with the JSON shape of Knative's own types so that
// existing manifests, kubectl and kn work unchanged.
//
// Validation that the API server can do lives here as OpenAPI constraints and CEL rules
// (see the kubebuilder markers); defaults that the schema cannot hold live in defaults.go
// and are applied by the reconcilers.
//
// +kubebuilder:object:generate=true
// +groupName=serving.knative.dev
package v1
