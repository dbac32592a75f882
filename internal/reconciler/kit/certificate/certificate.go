package certificate

import (
	"context"
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/child"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/refusal"
	"github.com/ferry-serving/ferry/internal/reconciler/route/resources"
)

// Status is the owner's status, a Route's or a DomainMapping's, as its
// CertificateProvisioned is marked.
type Status interface {
	MarkCertificateReady()
	MarkCertificateNotReady(name, why string)
	MarkCertificateProvisionFailed(name, why string)
	MarkCertificateNotOwned(name string)
	MarkHTTPDowngrade(name string)
}

// Desired is one Certificate the owner wants, for one of its hosts: key says which (a
// Route's tag, "" for its own host or a DomainMapping's domain).
type Desired struct {
	Key  string
	Cert *netv1alpha1.Certificate
}

// Certificates is what an owner's Certificates are in one reconcile: which hosts are
// served over https, the KIngress's TLS, and what CertificateProvisioned shows.
type Certificates struct {
	// https holds the keys whose URL is https: a Certificate covers the host (Knative
	// sets the scheme before it looks at readiness).
	https map[string]bool
	// TLS is the KIngress's TLS: the Ready Certificates' Secrets.
	TLS []netv1alpha1.IngressTLS
	// notReady are the Certificates that are not Ready, in the order desired; failed is
	// the first whose Ready is False.
	notReady []Desired
	failed   *netv1alpha1.Certificate
	notOwned string
	refused  error
}

// Ensure makes each desired Certificate exist as desired and reads its readiness. A
// name taken or a write refused is kept for Mark; other errors are returned.
func Ensure(ctx context.Context, w child.Writer, owner client.Object, desired []Desired) (*Certificates, error) {
	c := &Certificates{https: map[string]bool{}}
	for _, d := range desired {
		cert, err := child.Ensure(ctx, w, owner, "Certificate", d.Cert, update)
		var notOwned *child.NotOwnedError
		switch _, refused := refusal.As(err); {
		case errors.As(err, &notOwned):
			if c.notOwned == "" {
				c.notOwned = d.Cert.Name
			}
			continue
		case refused:
			c.refused = err
			continue
		case err != nil:
			return nil, err
		}
		c.https[d.Key] = true
		switch {
		case cert.IsReady():
			c.TLS = append(c.TLS, resources.MakeIngressTLS(cert, d.Cert.Spec.DNSNames))
		case cert.IsFailed() && c.failed == nil:
			c.failed = cert
			c.notReady = append(c.notReady, Desired{d.Key, cert})
		default:
			c.notReady = append(c.notReady, Desired{d.Key, cert})
		}
	}
	return c, nil
}

// update puts back the Certificate's spec, labels and annotations.
func update(desired, have *netv1alpha1.Certificate) bool {
	return child.Merge(desired, have, &have.Spec, desired.Spec)
}

// Mark shows the Certificates on CertificateProvisioned, as Knative does: all Ready is
// True; one not Ready is Unknown CertificateNotReady (False CertificateProvisionFailed
// if its Ready is False) with its URL https, unless http-protocol is enabled
// (httpEnabled): then its URL goes back to http, plain HTTP keeps serving it, and the
// condition is True HTTPDowngrade. A name taken is False CertificateNotOwned; a write
// refused shows on condition t of m as the refusal's reason.
func (c *Certificates) Mark(s Status, m duck.ConditionManager, t duck.ConditionType, o *child.Outcome, httpEnabled bool) {
	switch {
	case c.notOwned != "":
		s.MarkCertificateNotOwned(c.notOwned)
		return
	case c.refused != nil:
		o.Mark(m, t, c.refused)
		return
	case len(c.notReady) == 0:
		s.MarkCertificateReady()
		return
	}
	first := c.failed
	if first == nil {
		first = c.notReady[0].Cert
	}
	if httpEnabled {
		for _, d := range c.notReady {
			delete(c.https, d.Key)
		}
	}
	switch {
	case httpEnabled:
		s.MarkHTTPDowngrade(first.Name)
	case c.failed != nil:
		s.MarkCertificateProvisionFailed(first.Name, first.ProviderSays())
	default:
		s.MarkCertificateNotReady(first.Name, first.ProviderSays())
	}
}

// HTTPS reports whether the host of key is served over https: a Certificate covers it,
// and HTTP is not its downgrade (after Mark). A nil Certificates (no TLS) says no.
func (c *Certificates) HTTPS(key string) bool { return c != nil && c.https[key] }
