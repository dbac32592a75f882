package resources

import (
	"cmp"
	"fmt"
	"hash/adler32"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
)

// CertificateClass is the class of the Route's (or DomainMapping's) Certificates: its
// annotation (either spelling), else config-network's certificate-class, else def.
func CertificateClass(r metav1.Object, network *config.Network, def string) string {
	a := r.GetAnnotations()
	return cmp.Or(a[netv1alpha1.CertificateClassAnnotationKey], a[netv1alpha1.CertificateClassAnnotationAltKey], network.CertificateClass, def)
}

// CertificateName is Knative's name for the Certificate of a Route's host: route-<UID>
// for the Route's own, route-<UID>-<adler32 of the tag> for a tag's.
func CertificateName(r *v1.Route, tag string) string {
	name := "route-" + string(r.UID)
	if tag == "" {
		return name
	}
	return name + "-" + strconv.FormatUint(uint64(adler32.Checksum([]byte(tag))), 10)
}

// MakeCertificate builds the Certificate for the Route's host of tag ("" for its own),
// as Knative's route reconciler does: dnsNames the host, the config-domain domain,
// secretName its own name, the class annotation and the Route's other annotations,
// labelled with the Route and the external-domain type, controlled by the Route.
func MakeCertificate(r *v1.Route, hosts *Hosts, tag, class string) *netv1alpha1.Certificate {
	annotations := map[string]string{}
	for k, v := range r.Annotations {
		if k != corev1.LastAppliedConfigAnnotation && k != netv1alpha1.CertificateClassAnnotationAltKey {
			annotations[k] = v
		}
	}
	annotations[netv1alpha1.CertificateClassAnnotationKey] = class
	name := CertificateName(r, tag)
	labels := routeLabels(r)
	labels[netv1alpha1.CertificateTypeLabelKey] = netv1alpha1.CertificateTypeExternalDomain
	return &netv1alpha1.Certificate{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       r.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{ownerRef(r)},
		},
		Spec: netv1alpha1.CertificateSpec{
			DNSNames:   []string{hosts.Host(tag)},
			Domain:     hosts.Domain(),
			SecretName: name,
		},
	}
}

// MakeIngressTLS is the KIngress spec.tls entry that serves hosts with cert's Secret.
func MakeIngressTLS(cert *netv1alpha1.Certificate, hosts []string) netv1alpha1.IngressTLS {
	return netv1alpha1.IngressTLS{Hosts: hosts, SecretName: cert.Spec.SecretName, SecretNamespace: cert.Namespace}
}

// HTTPOption is the KIngress's httpOption: the Route's (or DomainMapping's) annotation
// if it has one (only enabled or redirected, any case, as in Knative; anything else is
// an error naming the annotation), else config-network's http-protocol, whose disabled
// (deprecated in Knative) leaves it empty.
func HTTPOption(r metav1.Object, network *config.Network) (netv1alpha1.HTTPOption, error) {
	for _, key := range []string{netv1alpha1.HTTPOptionAnnotationKey, netv1alpha1.HTTPProtocolAnnotationKey} {
		v, ok := r.GetAnnotations()[key]
		if !ok {
			continue
		}
		switch strings.ToLower(v) {
		case config.HTTPEnabled:
			return netv1alpha1.HTTPOptionEnabled, nil
		case config.HTTPRedirected:
			return netv1alpha1.HTTPOptionRedirected, nil
		}
		return "", fmt.Errorf("annotation %s: %q is not enabled or redirected", key, v)
	}
	switch strings.ToLower(network.HTTPProtocol) {
	case config.HTTPRedirected:
		return netv1alpha1.HTTPOptionRedirected, nil
	case config.HTTPDisabled:
		return "", nil
	}
	return netv1alpha1.HTTPOptionEnabled, nil
}
