package v1beta1

import (
	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// DomainMapping condition types, as in Knative.
const (
	DomainMappingConditionReady                                     = duck.ConditionReady
	DomainMappingConditionDomainClaimed          duck.ConditionType = "DomainClaimed"
	DomainMappingConditionReferenceResolved      duck.ConditionType = "ReferenceResolved"
	DomainMappingConditionIngressReady           duck.ConditionType = "IngressReady"
	DomainMappingConditionCertificateProvisioned duck.ConditionType = "CertificateProvisioned"
)

// DomainMappingConditions derives Ready from the four conditions Knative requires.
var DomainMappingConditions = duck.NewLivingConditionSet(DomainMappingConditionDomainClaimed,
	DomainMappingConditionReferenceResolved, DomainMappingConditionIngressReady, DomainMappingConditionCertificateProvisioned)

// Reasons of a DomainMapping's conditions that a Route's do not have, as Knative spells
// them (serving pkg/apis/serving/v1beta1/domainmapping_lifecycle.go). IngressReady and
// CertificateProvisioned share the Route's reasons (v1.ReasonIngressNotConfigured,
// v1.ReasonCertificateNotReady, ...).
const (
	ReasonDomainAlreadyClaimed          = "DomainAlreadyClaimed"
	ReasonResolveFailed                 = "ResolveFailed"
	ReasonCertificateExternallyProvided = "CertificateExternallyProvided"

	MessageDomainAlreadyClaimed          = "The domain name is already in use by another DomainMapping"
	MessageCertificateExternallyProvided = "TLS certificate was provided externally"
)

func (dms *DomainMappingStatus) manage() duck.ConditionManager {
	return DomainMappingConditions.Manage(&dms.Status)
}

// MarkDomainClaimed says the DomainMapping's namespace holds the claim on its domain.
func (dms *DomainMappingStatus) MarkDomainClaimed() {
	dms.manage().MarkTrue(DomainMappingConditionDomainClaimed)
}

// MarkDomainAlreadyClaimed says another namespace holds the domain, or nobody does and
// claims are not created.
func (dms *DomainMappingStatus) MarkDomainAlreadyClaimed() {
	dms.manage().MarkFalse(DomainMappingConditionDomainClaimed, ReasonDomainAlreadyClaimed, MessageDomainAlreadyClaimed)
}

// MarkReferenceResolved says the reference resolved to a cluster-local host.
func (dms *DomainMappingStatus) MarkReferenceResolved() {
	dms.manage().MarkTrue(DomainMappingConditionReferenceResolved)
}

// MarkReferenceNotResolved says why the reference does not resolve.
func (dms *DomainMappingStatus) MarkReferenceNotResolved(message string) {
	dms.manage().MarkFalse(DomainMappingConditionReferenceResolved, ReasonResolveFailed, "%s", message)
}

// MarkIngressNotConfigured says the KIngress has not reported on this generation yet.
func (dms *DomainMappingStatus) MarkIngressNotConfigured() {
	dms.manage().MarkUnknown(DomainMappingConditionIngressReady, v1.ReasonIngressNotConfigured, v1.MessageIngressNotConfigured)
}

// MarkInvalidHTTPProtocol says the http-protocol annotation is not one Knative knows.
func (dms *DomainMappingStatus) MarkInvalidHTTPProtocol(message string) {
	dms.manage().MarkFalse(DomainMappingConditionIngressReady, v1.ReasonInvalidHTTPProtocol, "%s", message)
}

// PropagateIngressStatus turns the KIngress's Ready into IngressReady, as the Route's
// does: IngressNotConfigured until the KIngress observed its generation.
func (dms *DomainMappingStatus) PropagateIngressStatus(ing *netv1alpha1.Ingress) {
	c := ing.ObservedReady()
	if c == nil {
		dms.MarkIngressNotConfigured()
		return
	}
	dms.manage().Mirror(DomainMappingConditionIngressReady, c)
}

// MarkTLSNotEnabled says the domain has no Certificate of Ferry's: external-domain-tls
// is off.
func (dms *DomainMappingStatus) MarkTLSNotEnabled() {
	dms.manage().MarkTrueWithReason(DomainMappingConditionCertificateProvisioned, v1.ReasonTLSNotEnabled, v1.MessageTLSNotEnabled)
}

// MarkCertificateExternallyProvided says the user's own secret serves the domain.
func (dms *DomainMappingStatus) MarkCertificateExternallyProvided() {
	dms.manage().MarkTrueWithReason(DomainMappingConditionCertificateProvisioned, ReasonCertificateExternallyProvided, MessageCertificateExternallyProvided)
}

// MarkCertificateReady says the DomainMapping's Certificate is Ready.
func (dms *DomainMappingStatus) MarkCertificateReady() {
	dms.manage().MarkTrue(DomainMappingConditionCertificateProvisioned)
}

// MarkCertificateNotReady says the named Certificate is on its way; why is what its
// provider says.
func (dms *DomainMappingStatus) MarkCertificateNotReady(name, why string) {
	dms.manage().MarkUnknown(DomainMappingConditionCertificateProvisioned, v1.ReasonCertificateNotReady, v1.MessageCertificateNotReady, name, why)
}

// MarkCertificateProvisionFailed says the named Certificate cannot be issued (Knative's
// words differ from the Route's by a tense).
func (dms *DomainMappingStatus) MarkCertificateProvisionFailed(name, why string) {
	dms.manage().MarkFalse(DomainMappingConditionCertificateProvisioned, v1.ReasonCertificateProvisionFailed, "Certificate %s failed to be provisioned: %s", name, why)
}

// MarkCertificateNotOwned says the Certificate's name is taken by one the
// DomainMapping does not control.
func (dms *DomainMappingStatus) MarkCertificateNotOwned(name string) {
	dms.manage().MarkFalse(DomainMappingConditionCertificateProvisioned, v1.ReasonCertificateNotOwned, v1.MessageCertificateNotOwned, name)
}

// MarkHTTPDowngrade says the named Certificate is not Ready and http-protocol Enabled
// serves the domain over plain HTTP meanwhile.
func (dms *DomainMappingStatus) MarkHTTPDowngrade(name string) {
	dms.manage().MarkTrueWithReason(DomainMappingConditionCertificateProvisioned, v1.ReasonHTTPDowngrade, v1.MessageHTTPDowngrade, name)
}
