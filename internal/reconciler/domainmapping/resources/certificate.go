package resources

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/api/serving/v1beta1"
	"github.com/ferry-serving/ferry/internal/kmeta"
)

// CertificateName is the name of the DomainMapping's Certificate and of its Secret:
// Knative's, the KIngress's name.
func CertificateName(dm *v1beta1.DomainMapping) string { return kmeta.ChildName(dm.Name, "") }

// MakeCertificate builds the Certificate for the mapped domain when external-domain-tls
// is on, as Knative's domainmapping reconciler does: dnsNames and domain the domain,
// secretName its own name, the class annotation and the DomainMapping's other
// annotations, labelled external-domain, controlled by the DomainMapping. Knative
// labels it with the DomainMapping's name under the UID key; Ferry puts the UID there,
// as on the KIngress, since a domain may be longer than a label value can be.
func MakeCertificate(dm *v1beta1.DomainMapping, class string) *netv1alpha1.Certificate {
	annotations := kmeta.WithoutLastApplied(dm.Annotations)
	delete(annotations, netv1alpha1.CertificateClassAnnotationAltKey)
	name := CertificateName(dm)
	return &netv1alpha1.Certificate{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   dm.Namespace,
			Annotations: kmeta.Union(annotations, map[string]string{netv1alpha1.CertificateClassAnnotationKey: class}),
			Labels: map[string]string{
				v1beta1.DomainMappingUIDLabelKey:    string(dm.UID),
				netv1alpha1.CertificateTypeLabelKey: netv1alpha1.CertificateTypeExternalDomain,
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(dm, v1beta1.SchemeGroupVersion.WithKind("DomainMapping"))},
		},
		Spec: netv1alpha1.CertificateSpec{
			DNSNames:   []string{dm.Name},
			Domain:     dm.Name,
			SecretName: name,
		},
	}
}
