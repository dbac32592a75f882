package certmanager

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/api/serving/v1beta1"
	"github.com/ferry-serving/ferry/internal/config"
	dmresources "github.com/ferry-serving/ferry/internal/reconciler/domainmapping/resources"
)

// TestMarkFrom: cert-manager's Ready as Knative's provider maps it.
func TestMarkFrom(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		ready                 map[string]any // nil: no Ready condition
		wantStatus            corev1.ConditionStatus
		wantReason, wantNotAf string
	}{
		{"no condition", nil, corev1.ConditionUnknown, netv1alpha1.ReasonNoCertManagerCertCondition, ""},
		{"True", map[string]any{"type": "Ready", "status": "True", "reason": "Ready"}, corev1.ConditionTrue, "", "2030-01-02T03:04:05Z"},
		{"Unknown", map[string]any{"type": "Ready", "status": "Unknown", "reason": "Issuing"}, corev1.ConditionUnknown, "Issuing", ""},
		{"False InProgress is on its way", map[string]any{"type": "Ready", "status": "False", "reason": "InProgress"}, corev1.ConditionUnknown, "InProgress", ""},
		{"False otherwise fails", map[string]any{"type": "Ready", "status": "False", "reason": "Failed", "message": "no issuer"}, corev1.ConditionFalse, "Failed", ""},
	} {
		cm := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{}}}
		if tc.ready != nil {
			cm.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Issuing", "status": "True"}, tc.ready}}
		}
		if tc.wantNotAf != "" {
			cm.Object["status"].(map[string]any)["notAfter"] = tc.wantNotAf
		}
		s := &netv1alpha1.CertificateStatus{}
		markFrom(s, cm)
		c := s.GetCondition(netv1alpha1.CertificateConditionReady)
		if c == nil || c.Status != tc.wantStatus || c.Reason != tc.wantReason {
			t.Errorf("%s: Ready %+v, want %s %s", tc.name, c, tc.wantStatus, tc.wantReason)
		}
		if got := s.NotAfter; (tc.wantNotAf == "") != (got == nil) || got != nil && got.UTC().Format("2006-01-02T15:04:05Z") != tc.wantNotAf {
			t.Errorf("%s: notAfter %v, want %q", tc.name, got, tc.wantNotAf)
		}
	}
}

func TestMake(t *testing.T) {
	kcert := &netv1alpha1.Certificate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "route-uid", UID: "kuid", Labels: map[string]string{"l": "1"}},
		Spec:       netv1alpha1.CertificateSpec{DNSNames: []string{"a.example.com", "b.example.com"}, SecretName: "s"},
	}
	u := Make(kcert, config.IssuerRef{Kind: "Issuer", Name: "mine"})
	cn, _, _ := unstructured.NestedString(u.Object, "spec", "commonName")
	names, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "dnsNames")
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "issuerRef", "kind")
	uid, _, _ := unstructured.NestedString(u.Object, "spec", "secretTemplate", "labels", netv1alpha1.CertificateUIDLabelKey)
	if u.GetName() != "route-uid" || cn != "a.example.com" || len(names) != 2 || kind != "Issuer" || uid != "kuid" ||
		u.GetLabels()["l"] != "1" || !metav1.IsControlledBy(u, kcert) {
		t.Errorf("cert-manager Certificate %+v", u.Object)
	}
}

// A DomainMapping's Certificate is made the same way as a Route's: the provider reads
// only the Certificate, never its owner.
func TestMakeForDomainMapping(t *testing.T) {
	dm := &v1beta1.DomainMapping{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "www.example.org", UID: "dm-uid"}}
	kcert := dmresources.MakeCertificate(dm, "")
	kcert.UID = "kuid"
	u := Make(kcert, config.IssuerRef{Kind: "ClusterIssuer", Name: "letsencrypt"})
	cn, _, _ := unstructured.NestedString(u.Object, "spec", "commonName")
	secret, _, _ := unstructured.NestedString(u.Object, "spec", "secretName")
	if u.GetName() != "www.example.org" || cn != "www.example.org" || secret != "www.example.org" ||
		u.GetLabels()[v1beta1.DomainMappingUIDLabelKey] != "dm-uid" || !metav1.IsControlledBy(u, kcert) {
		t.Errorf("cert-manager Certificate %+v", u.Object)
	}
}
