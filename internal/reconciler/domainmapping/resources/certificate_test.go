package resources

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
)

// The Certificate as Knative's resources.MakeCertificate builds it for a DomainMapping,
// but for the UID label's value.
func TestMakeCertificate(t *testing.T) {
	dm := mapping("www.example.org", map[string]string{
		"team":                             "a",
		corev1.LastAppliedConfigAnnotation: "{}",
		"networking.knative.dev/certificate-class": "theirs",
	}, nil)
	got := MakeCertificate(dm, "ferry.local-ca")
	if got.Name != "www.example.org" || got.Namespace != "ns" || !metav1.IsControlledBy(got, dm) {
		t.Errorf("name %s/%s, owners %+v", got.Namespace, got.Name, got.OwnerReferences)
	}
	wantSpec := netv1alpha1.CertificateSpec{DNSNames: []string{"www.example.org"}, Domain: "www.example.org", SecretName: "www.example.org"}
	if !equality.Semantic.DeepEqual(got.Spec, wantSpec) {
		t.Errorf("spec %+v, want %+v", got.Spec, wantSpec)
	}
	wantLabels := map[string]string{"serving.knative.dev/domainMappingUID": "uid-1", "networking.knative.dev/certificate-type": "external-domain"}
	if !equality.Semantic.DeepEqual(got.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", got.Labels, wantLabels)
	}
	// The class is the one given, under Knative's key only; kubectl's copy stays behind.
	wantAnnotations := map[string]string{"team": "a", netv1alpha1.CertificateClassAnnotationKey: "ferry.local-ca"}
	if !equality.Semantic.DeepEqual(got.Annotations, wantAnnotations) {
		t.Errorf("annotations %v, want %v", got.Annotations, wantAnnotations)
	}
	if dm.Annotations[corev1.LastAppliedConfigAnnotation] == "" {
		t.Error("the DomainMapping's annotations were changed")
	}
}

// A domain longer than an object name may be gets Knative's hashed child name, for the
// Certificate and its Secret alike.
func TestMakeCertificateLongDomain(t *testing.T) {
	long := strings.Repeat("a", 60) + ".example.org"
	got := MakeCertificate(mapping(long, nil, nil), "")
	if got.Name != IngressName(mapping(long, nil, nil)) || len(got.Name) > 63 || got.Spec.SecretName != got.Name || got.Spec.DNSNames[0] != long {
		t.Errorf("name %q, secret %q, dnsNames %v", got.Name, got.Spec.SecretName, got.Spec.DNSNames)
	}
}
