package v1alpha1

import (
	"fmt"

	"github.com/ferry-serving/ferry/api/duck"
)

// Knative's names around Certificates (knative.dev/networking pkg/apis/networking).
const (
	// CertificateClassAnnotationKey picks the provider that fulfils a Certificate;
	// on a Route it overrides config-network's certificate-class.
	CertificateClassAnnotationKey = "networking.knative.dev/certificate.class"
	// CertificateTypeLabelKey says what a Certificate is for.
	CertificateTypeLabelKey = "networking.knative.dev/certificate-type"
	// CertificateUIDLabelKey labels a Certificate's Secret with the Certificate's UID,
	// as Knative's providers do.
	CertificateUIDLabelKey = "networking.internal.knative.dev/certificate-uid"
	// CertificateTypeExternalDomain is the type of a Route's external-domain certificates.
	CertificateTypeExternalDomain = "external-domain"
	// CertManagerCertificateClass is cert-manager's class, Knative's default.
	CertManagerCertificateClass = "cert-manager.certificate.networking.knative.dev"
	// LocalCACertificateClass is the class of Ferry's local CA (internal/localca),
	// the default of ferry up.
	LocalCACertificateClass = "ferry.local-ca"
)

// CertificateConditionReady is the Certificate's only condition.
const CertificateConditionReady = duck.ConditionReady

// CertificateConditions is the Certificate's condition set: Ready alone.
var CertificateConditions = duck.NewLivingConditionSet()

// IsReady reports whether the Certificate is Ready for its current generation.
func (c *Certificate) IsReady() bool {
	return c.Status.ObservedGeneration == c.Generation && c.Status.GetCondition(CertificateConditionReady).IsTrue()
}

// IsFailed reports whether the Certificate's Ready is False for its current generation.
func (c *Certificate) IsFailed() bool {
	return c.Status.ObservedGeneration == c.Generation && c.Status.GetCondition(CertificateConditionReady).IsFalse()
}

// ProviderSays is what the Certificate's provider says of it, for its owner's
// condition; a Certificate no provider has looked at says so, naming its class.
func (c *Certificate) ProviderSays() string {
	cond := c.Status.GetCondition(CertificateConditionReady)
	switch {
	case c.Status.ObservedGeneration != c.Generation || cond == nil:
		return fmt.Sprintf("no provider of class %q has reported on it", c.Annotations[CertificateClassAnnotationKey])
	case cond.Message != "":
		return cond.Reason + ": " + cond.Message
	}
	return cond.Reason
}

// MarkReady marks the certificate issued and stored in its Secret.
func (s *CertificateStatus) MarkReady() {
	CertificateConditions.Manage(&s.Status).MarkTrue(CertificateConditionReady)
}

// MarkNotReady marks the certificate on its way (Unknown).
func (s *CertificateStatus) MarkNotReady(reason, message string) {
	CertificateConditions.Manage(&s.Status).MarkUnknown(CertificateConditionReady, reason, "%s", message)
}

// MarkFailed marks the certificate as one that cannot be issued (False).
func (s *CertificateStatus) MarkFailed(reason, message string) {
	CertificateConditions.Manage(&s.Status).MarkFalse(CertificateConditionReady, reason, "%s", message)
}

// ReasonNoCertManagerCertCondition is Ready's reason (Unknown) while cert-manager has
// not reported on the Certificate it fulfils this one with, Knative's
// (net-certmanager).
const ReasonNoCertManagerCertCondition = "NoCertManagerCertCondition"

// MarkNoCertManagerCondition says cert-manager has not reported yet.
func (s *CertificateStatus) MarkNoCertManagerCondition() {
	s.MarkNotReady(ReasonNoCertManagerCertCondition, "The ready condition of Cert Manager Certificate does not exist.")
}

// MarkResourceNotOwned says the Secret (or the provider's object) of that name is not
// the Certificate's.
func (s *CertificateStatus) MarkResourceNotOwned(kind, name string) {
	s.MarkFailed(duck.ReasonNotOwned, duck.NotOwnedMessage(kind, name))
}
