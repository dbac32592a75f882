package v1alpha1

// IngressClass is the value of IngressClassAnnotationKey that Ferry's gateway serves.
// The Route reconciler sets it on the KIngresses it makes; the gateway also serves a
// KIngress with no class.
const IngressClass = "ferry.ingress.networking.knative.dev"

// The port of the Kubernetes Services on Knative's request path, as Knative names it:
// a KIngress split names a Revision's Service by it, and a Route's placeholder Service
// exposes it. Ferry has no Service per Revision: the gateway maps a split's port
// (by number or name) to the pods' user port.
const (
	ServiceHTTPPort      = 80
	ServicePortNameHTTP1 = "http"
)

// Headers Knative appends to each split so that the backend knows what it serves.
const (
	RevisionHeader  = "Knative-Serving-Revision"
	NamespaceHeader = "Knative-Serving-Namespace"
)
