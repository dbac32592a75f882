package route

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/certificate"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/child"
	"github.com/ferry-serving/ferry/internal/reconciler/route/resources"
)

// reconcileCertificates makes the Route's Certificate for each of its external hosts
// (its own, then each tag's; not those a placeholder Service made cluster-local) exist
// as desired, reads their readiness, and deletes the ones no host needs any more.
func (r *Reconciler) reconcileCertificates(ctx context.Context, w child.Writer, route *v1.Route, hosts *resources.Hosts, class string) (*certificate.Certificates, error) {
	var desired []certificate.Desired
	wanted := map[string]bool{}
	for _, tag := range hosts.Tags() {
		if hosts.IsClusterLocal(tag) {
			// As Knative: a cluster-local host has no external-domain Certificate.
			continue
		}
		d := resources.MakeCertificate(route, hosts, tag, class)
		desired = append(desired, certificate.Desired{Key: tag, Cert: d})
		wanted[d.Name] = true
	}
	certs, err := certificate.Ensure(ctx, w, route, desired)
	if err != nil {
		return nil, err
	}
	return certs, r.deleteOrphanCertificates(ctx, route, wanted)
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

// url is the URL of the Route's host for tag: https when a Certificate covers it.
func url(certs *certificate.Certificates, hosts *resources.Hosts, tag string) string {
	if certs.HTTPS(tag) {
		return "https://" + hosts.Host(tag)
	}
	return hosts.URL(tag)
}
