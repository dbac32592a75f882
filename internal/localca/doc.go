// Package localca is Ferry's built-in certificate provider for `ferry up`: it fulfils
// the Certificates (networking.internal.knative.dev/v1alpha1) of class
// v1alpha1.LocalCACertificateClass by signing them with a CA of its own, so that
// external-domain-tls works on a laptop with nothing else installed.
//
// The CA is created on first start by certauthority (ECDSA P-256, ten years) and kept
// in the data directory as ca.crt and ca.key (0600); clients trust it with
// `curl --cacert <data dir>/ca.crt`. For each Certificate the reconciler keeps the
// Secret spec.secretName (kubernetes.io/tls: tls.crt, tls.key, and ca.crt), controlled by
// the Certificate and labelled networking.internal.knative.dev/certificate-uid as
// Knative's providers label theirs, holding a certificate for exactly spec.dnsNames,
// valid for 90 days and signed again when a third of that is left, or when the names,
// the CA or the Secret's contents change. Then it marks the Certificate Ready with
// status.notAfter. A Secret of that name that the Certificate does not control is left
// alone: Ready False, NotOwned.
//
// A local CA is for development: its key sits on disk unencrypted, and anyone who
// trusts ca.crt trusts every name it signs.
package localca
