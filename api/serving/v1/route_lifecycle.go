package v1

import (
	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
)

// Route condition types.
const (
	RouteConditionReady                                     = duck.ConditionReady
	RouteConditionAllTrafficAssigned     duck.ConditionType = "AllTrafficAssigned"
	RouteConditionIngressReady           duck.ConditionType = "IngressReady"
	RouteConditionCertificateProvisioned duck.ConditionType = "CertificateProvisioned"
)

// RouteConditions derives Ready from traffic assignment, ingress and certificate.
var RouteConditions = duck.NewLivingConditionSet(RouteConditionAllTrafficAssigned, RouteConditionIngressReady, RouteConditionCertificateProvisioned)

// Reasons of a Route's conditions, as Knative spells them (serving
// pkg/apis/serving/v1/route_lifecycle.go and its Route reconciler). Users, `kubectl
// wait`, `kn` and `ferry explain` match on them.
const (
	// AllTrafficAssigned.
	ReasonConfigurationMissing = "ConfigurationMissing"
	ReasonRevisionMissing      = "RevisionMissing"
	// ReasonInvalidTraffic has no Knative counterpart: Knative's webhook rejects such a
	// Route. Ferry relies on CEL at admission, so this only shows for objects written
	// before the CRD had its rules (or by a client that bypassed them).
	ReasonInvalidTraffic = "InvalidTraffic"
	// ReasonErrorConfig: the configuration gives the Route a host that is not a valid
	// domain name.
	ReasonErrorConfig = "ErrorConfig"

	// IngressReady (also a DomainMapping's).
	ReasonIngressNotConfigured = "IngressNotConfigured"
	// ReasonRolloutInProgress: a gradual rollout moves traffic to the latest Revision.
	ReasonRolloutInProgress = "RolloutInProgress"
	// ReasonInvalidHTTPProtocol: the http-protocol annotation is neither enabled nor
	// redirected (Knative fails the reconcile with that error).
	ReasonInvalidHTTPProtocol = "InvalidHTTPProtocol"

	// CertificateProvisioned (also a DomainMapping's).
	ReasonTLSNotEnabled              = "TLSNotEnabled"
	ReasonCertificateNotReady        = "CertificateNotReady"
	ReasonCertificateProvisionFailed = "CertificateProvisionFailed"
	ReasonCertificateNotOwned        = "CertificateNotOwned"
	ReasonHTTPDowngrade              = "HTTPDowngrade"
)

// Messages that go with the reasons above, Knative's; the Certificate's are formats
// of its name (and what its provider says).
const (
	MessageIngressNotConfigured = "Ingress has not yet been reconciled."
	MessageRolloutInProgress    = "A gradual rollout of the latest revision(s) is in progress."
	MessageTLSNotEnabled        = "external-domain-tls is not enabled"
	MessageCertificateNotOwned  = "There is an existing certificate %s that we don't own."
	MessageCertificateNotReady  = "Certificate %s is not ready: %s"
	MessageHTTPDowngrade        = "Certificate %s is not ready downgrade HTTP."
)

func (rs *RouteStatus) manage() duck.ConditionManager { return RouteConditions.Manage(&rs.Status) }

// MarkIngressNotConfigured says the KIngress has not reported on the Route's current
// traffic yet.
func (rs *RouteStatus) MarkIngressNotConfigured() {
	rs.manage().MarkUnknown(RouteConditionIngressReady, ReasonIngressNotConfigured, MessageIngressNotConfigured)
}

// MarkIngressRolloutInProgress holds IngressReady at Unknown until a gradual rollout
// ends: the Route is not done until it is.
func (rs *RouteStatus) MarkIngressRolloutInProgress() {
	rs.manage().MarkUnknown(RouteConditionIngressReady, ReasonRolloutInProgress, MessageRolloutInProgress)
}

// MarkInvalidHTTPProtocol says the http-protocol annotation is not one Knative knows.
func (rs *RouteStatus) MarkInvalidHTTPProtocol(message string) {
	rs.manage().MarkFalse(RouteConditionIngressReady, ReasonInvalidHTTPProtocol, "%s", message)
}

// PropagateIngressStatus turns the KIngress's Ready into IngressReady, as Knative's
// does, once the KIngress has observed its generation: before that, or without a
// KIngress or its Ready, it is IngressNotConfigured.
func (rs *RouteStatus) PropagateIngressStatus(ing *netv1alpha1.Ingress) {
	c := ing.ObservedReady()
	if c == nil {
		rs.MarkIngressNotConfigured()
		return
	}
	rs.manage().Mirror(RouteConditionIngressReady, c)
}

// MarkTLSNotEnabled says the Route's hosts have no Certificate: external-domain-tls is
// off (or off for this Route, or its hosts are cluster-local).
func (rs *RouteStatus) MarkTLSNotEnabled() {
	rs.manage().MarkTrueWithReason(RouteConditionCertificateProvisioned, ReasonTLSNotEnabled, MessageTLSNotEnabled)
}

// MarkCertificateReady says every Certificate of the Route is Ready.
func (rs *RouteStatus) MarkCertificateReady() {
	rs.manage().MarkTrue(RouteConditionCertificateProvisioned)
}

// MarkCertificateNotReady says the named Certificate is on its way; why is what its
// provider says (netv1alpha1.Certificate.ProviderSays).
func (rs *RouteStatus) MarkCertificateNotReady(name, why string) {
	rs.manage().MarkUnknown(RouteConditionCertificateProvisioned, ReasonCertificateNotReady, MessageCertificateNotReady, name, why)
}

// MarkCertificateProvisionFailed says the named Certificate cannot be issued.
func (rs *RouteStatus) MarkCertificateProvisionFailed(name, why string) {
	rs.manage().MarkFalse(RouteConditionCertificateProvisioned, ReasonCertificateProvisionFailed, "Certificate %s fails to be provisioned: %s", name, why)
}

// MarkCertificateNotOwned says the Certificate's name is taken by one the Route does
// not control.
func (rs *RouteStatus) MarkCertificateNotOwned(name string) {
	rs.manage().MarkFalse(RouteConditionCertificateProvisioned, ReasonCertificateNotOwned, MessageCertificateNotOwned, name)
}

// MarkHTTPDowngrade says the named Certificate is not Ready and http-protocol Enabled
// serves its hosts over plain HTTP meanwhile.
func (rs *RouteStatus) MarkHTTPDowngrade(name string) {
	rs.manage().MarkTrueWithReason(RouteConditionCertificateProvisioned, ReasonHTTPDowngrade, MessageHTTPDowngrade, name)
}
