// Package v1alpha1 holds Knative's networking.internal.knative.dev/v1alpha1 Ingress
// (KIngress): the contract between a Route and the ingress layer that serves it. Ferry's
// gateway implements it, and so do Kourier, Istio and Contour. Beside it, the Certificate
// (KCertificate): the contract between a Route and the certificate provider that
// fulfils it (cert-manager, or Ferry's local CA).
//
// +kubebuilder:object:generate=true
// +groupName=networking.internal.knative.dev
package v1alpha1
