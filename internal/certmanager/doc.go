// Package certmanager is Ferry's cert-manager certificate provider, as Knative's
// (knative/serving pkg/reconciler/certificate): for each Knative Certificate
// (networking.internal.knative.dev/v1alpha1) of class
// cert-manager.certificate.networking.knative.dev, or of no class, it keeps a
// cert-manager.io/v1 Certificate of the same name, controlled by it, with commonName
// the first dnsName, the dnsNames, the secretName and config-certmanager's issuerRef,
// and copies that Certificate's Ready condition and notAfter back: Ready True is
// Ready; missing is Unknown NoCertManagerCertCondition; Unknown, or False with
// InProgress, Pending or TemporaryCertificate, is Unknown with cert-manager's reason;
// any other False is Ready False with it. A cert-manager Certificate of that name the
// Knative one does not control is left alone: Ready False, NotOwned.
//
// cert-manager's objects are handled as unstructured.Unstructured: the cert-manager
// module pins its own Kubernetes and controller-runtime versions, and Ferry needs four
// fields of one kind. cert-manager's CRDs must be installed before the controller
// starts (ferry controller --cert-manager), as in Knative.
//
// Not done: Knative's k.<domain> common name for names over 63 characters, and ACME
// HTTP-01 challenges (status.http01Challenges stays empty).
package certmanager
