// Package certificate is the certificate flow that the Route and the DomainMapping
// share, as Knative's two reconcilers do the same things with their Certificates:
// Ensure makes the owner's external-domain Certificates (a Route's, one per host; a
// DomainMapping's one) exist as desired and reads their readiness; Certificates.Mark
// shows them on the owner's CertificateProvisioned through its Mark methods (api/, in
// Knative's words, which differ by a tense between the two kinds); Warnings records one
// Warning Event for a Certificate that stays not Ready past WarnAfter.
//
// What the KIngress serves of it is Certificates.TLS and Certificates.HTTPS; the
// owner's IngressReady comes from its KIngress through the api's
// PropagateIngressStatus.
package certificate
