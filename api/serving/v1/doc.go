// Package v1 holds Knative Serving's v1 API (serving.knative.dev/v1): Service,
// Configuration, Revision and Route, with the JSON shape of Knative's own types so that
// existing manifests, kubectl and kn work unchanged.
//
// Validation that the API server can do lives here as OpenAPI constraints and CEL rules
// (see the kubebuilder markers). Defaults that the schema cannot hold are Knative's
// SetDefaults, in defaults.go: the mutating admission runs them on what users write, and
// the reconcilers on a copy of what they read, so that they act on what the webhook
// would have written even where it did not run. They read config-defaults and
// config-features from the context (api/defaulting), Knative's defaults when there are none.
//
// +kubebuilder:object:generate=true
// +groupName=serving.knative.dev
package v1
