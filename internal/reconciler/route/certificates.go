package route

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler/child"
	"github.com/ferry-serving/ferry/internal/reconciler/refusal"
	"github.com/ferry-serving/ferry/internal/reconciler/route/resources"
)

// CertificateProvisioned's reasons, as Knative spells them (serving
// pkg/apis/serving/v1/route_lifecycle.go).
const (
	reasonCertificateNotReady        = "CertificateNotReady"
	reasonCertificateProvisionFailed = "CertificateProvisionFailed"
	reasonCertificateNotOwned        = "CertificateNotOwned"
	reasonHTTPDowngrade              = "HTTPDowngrade"
)

// certificates is what a Route's Certificates are in one reconcile: which hosts are
// served over https, the KIngress's TLS, and the condition to show.
type certificates struct {
	// https holds the tags whose URL is https: a Certificate covers the host (Knative
	// sets the scheme before it looks at readiness).
	https map[string]bool
	tls   []netv1alpha1.IngressTLS
	// notReady are the Certificates that are not Ready, by tag; failed is the first
	// whose Ready is False.
	notReady map[string]*netv1alpha1.Certificate
	failed   *netv1alpha1.Certificate
	notOwned string
	refused  error
}

// reconcileCertificates makes the Route's Certificate for each of its external hosts
// (its own, then each tag's) exist as desired, and reads their readiness.
func (r *Reconciler) reconcileCertificates(ctx context.Context, w child.Writer, route *v1.Route, hosts *resources.Hosts, class string) (*certificates, error) {
	c := &certificates{https: map[string]bool{}, notReady: map[string]*netv1alpha1.Certificate{}}
	wanted := map[string]bool{}
	for _, tag := range hosts.Tags() {
		desired := resources.MakeCertificate(route, hosts, tag, class)
		wanted[desired.Name] = true
		cert, err := child.Ensure(ctx, w, route, "Certificate", desired, updateCertificate)
		var notOwned *child.NotOwnedError
		switch _, refused := refusal.As(err); {
		case errors.As(err, &notOwned):
			if c.notOwned == "" {
				c.notOwned = desired.Name
			}
			continue
		case refused:
			c.refused = err
			continue
		case err != nil:
			return nil, err
		}
		c.https[tag] = true
		switch {
		case cert.IsReady():
			c.tls = append(c.tls, resources.MakeIngressTLS(cert, desired.Spec.DNSNames))
		case cert.IsFailed() && c.failed == nil:
			c.failed, c.notReady[tag] = cert, cert
		default:
			c.notReady[tag] = cert
		}
	}
	return c, r.deleteOrphanCertificates(ctx, route, wanted)
}

// deleteOrphanCertificates deletes the Route's external-domain Certificates that no
// host needs any more (a tag removed), as Knative does, so that no provider keeps
// renewing them.
func (r *Reconciler) deleteOrphanCertificates(ctx context.Context, route *v1.Route, wanted map[string]bool) error {
	list := &netv1alpha1.CertificateList{}
	if err := r.Client.List(ctx, list, client.InNamespace(route.Namespace), client.MatchingLabels{
		v1.RouteLabelKey: route.Name, netv1alpha1.CertificateTypeLabelKey: netv1alpha1.CertificateTypeExternalDomain,
	}); err != nil {
		return err
	}
	for i := range list.Items {
		cert := &list.Items[i]
		if wanted[cert.Name] || !metav1.IsControlledBy(cert, route) || cert.DeletionTimestamp != nil {
			continue
		}
		if err := r.Client.Delete(ctx, cert, client.Preconditions{UID: &cert.UID}); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// mark shows the Certificates on CertificateProvisioned, as Knative does: all Ready is
// True; one not Ready is Unknown CertificateNotReady (False CertificateProvisionFailed
// if its Ready is False) with its URL https, unless http-protocol is enabled
// (httpEnabled): then its URL goes back to http, plain HTTP keeps serving it, and the
// condition is True HTTPDowngrade. A name taken or a write refused is False.
func (c *certificates) mark(m duck.ConditionManager, o *child.Outcome, httpEnabled bool) {
	switch {
	case c.notOwned != "":
		m.MarkFalse(v1.RouteConditionCertificateProvisioned, reasonCertificateNotOwned, "There is an existing certificate %s that we don't own.", c.notOwned)
		return
	case c.refused != nil:
		o.Mark(m, v1.RouteConditionCertificateProvisioned, c.refused)
		return
	case len(c.notReady) == 0:
		m.MarkTrue(v1.RouteConditionCertificateProvisioned)
		return
	}
	first := c.failed
	for _, tag := range sortedTags(c.notReady) {
		if first == nil {
			first = c.notReady[tag]
		}
		if httpEnabled {
			delete(c.https, tag)
		}
	}
	reason := first.ProviderSays()
	switch {
	case httpEnabled:
		m.MarkTrueWithReason(v1.RouteConditionCertificateProvisioned, reasonHTTPDowngrade, "Certificate %s is not ready downgrade HTTP.", first.Name)
	case c.failed != nil:
		m.MarkFalse(v1.RouteConditionCertificateProvisioned, reasonCertificateProvisionFailed, "Certificate %s fails to be provisioned: %s", first.Name, reason)
	default:
		m.MarkUnknown(v1.RouteConditionCertificateProvisioned, reasonCertificateNotReady, "Certificate %s is not ready: %s", first.Name, reason)
	}
}

// url is the URL of the Route's host for tag: https when a Certificate covers it.
func (c *certificates) url(hosts *resources.Hosts, tag string) string {
	if c != nil && c.https[tag] {
		return "https://" + hosts.Host(tag)
	}
	return hosts.URL(tag)
}

// sortedTags puts "" (the Route's own host) first.
func sortedTags(m map[string]*netv1alpha1.Certificate) []string { return slices.Sorted(maps.Keys(m)) }

// updateCertificate puts back the Certificate's spec, labels and annotations.
func updateCertificate(desired, have *netv1alpha1.Certificate) bool {
	spec := child.Set(&have.Spec, desired.Spec)
	labels := child.MergeLabels(desired, have)
	return child.MergeAnnotations(desired, have) || labels || spec
}

// certificateWarnings remembers, per Route, the certificate problem last reported by
// an Event, so that a problem makes one Event however often the Route is reconciled
// before its status is written.
type certificateWarnings struct{ last sync.Map }

// certificateWarnAfter is how long a Certificate may stay not Ready before the Route
// warns: a provider that works issues within it (the local CA in milliseconds), so
// the Event means one that does not, or none of its class.
const certificateWarnAfter = 10 * time.Second

// warnCertificate records a Warning Event when the Route's certificate has been
// pending, or downgraded to HTTP, for certificateWarnAfter; before that it returns
// when to look again. A False condition needs none here: Ready turns False with it,
// and the status writer records that.
func (r *Reconciler) warnCertificate(route *v1.Route, status *v1.RouteStatus, certs *certificates, now time.Time) time.Duration {
	key := types.NamespacedName{Namespace: route.Namespace, Name: route.Name}
	c := status.GetCondition(v1.RouteConditionCertificateProvisioned)
	warn := certs != nil && c != nil && (c.Status == corev1.ConditionUnknown && c.Reason == reasonCertificateNotReady ||
		c.Status == corev1.ConditionTrue && c.Reason == reasonHTTPDowngrade)
	if !warn {
		r.warnings.last.Delete(key)
		return 0
	}
	var newest time.Time
	for _, cert := range certs.notReady {
		if t := cert.CreationTimestamp.Time; t.After(newest) {
			newest = t
		}
	}
	// A Certificate just created has no timestamp yet: its age starts now.
	if newest.IsZero() {
		newest = now
	}
	if wait := newest.Add(certificateWarnAfter).Sub(now); wait > 0 {
		return wait
	}
	if old, _ := r.warnings.last.Swap(key, c.Reason+"/"+c.Message); old == c.Reason+"/"+c.Message || r.Recorder == nil {
		return 0
	}
	r.Recorder.Eventf(route, nil, corev1.EventTypeWarning, c.Reason, "Reconcile", "%s", c.Message)
	return 0
}
