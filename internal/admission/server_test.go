package admission

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"
)

func TestClusterCerts(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	a := &Server{opts: Options{InCluster: true, Namespace: "ferry-system"}, client: client}
	if err := a.loadClusterCerts(ctx); err != nil {
		t.Fatal(err)
	}
	sec, err := client.CoreV1().Secrets("ferry-system").Get(ctx, CertSecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Secret was not created: %v", err)
	}
	// A second replica uses the same certificate.
	b := &Server{opts: a.opts, client: client}
	if err := b.loadClusterCerts(ctx); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.CABundle(), b.CABundle()) || !bytes.Equal(a.cert.Load().Certificate[0], b.cert.Load().Certificate[0]) {
		t.Error("two replicas serve different certificates")
	}
	if !strings.Contains(string(a.cert.Load().Leaf.DNSNames[0]), "ferry-webhook.ferry-system.svc") {
		t.Errorf("DNS names %v", a.cert.Load().Leaf.DNSNames)
	}

	// A certificate about to expire is renewed, and the old CA stays trusted.
	old := &certBundle{CA: sec.Data["ca.crt"], Cert: sec.Data[corev1.TLSCertKey]}
	if old.expiresSoon(time.Now()) || !old.expiresSoon(time.Now().Add(certValidity)) {
		t.Error("expiresSoon is wrong")
	}
	sec.Data[corev1.TLSCertKey] = []byte("garbage")
	if _, err := client.CoreV1().Secrets("ferry-system").Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := b.loadClusterCerts(ctx); err != nil {
		t.Fatal(err)
	}
	if ca := b.CABundle(); bytes.Count(ca, []byte("BEGIN CERTIFICATE")) != 2 || !bytes.Contains(ca, old.CA) {
		t.Errorf("renewed bundle does not keep the old CA:\n%s", ca)
	}
}

// TestManifestsMatchRegistration: config/webhook/webhooks.yaml says what the controller
// registers, so that a server-side re-apply and the controller agree.
func TestManifestsMatchRegistration(t *testing.T) {
	raw, err := os.ReadFile("../../config/webhook/webhooks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(raw), "\n---\n")
	var m admissionregv1.MutatingWebhookConfiguration
	var v admissionregv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &m); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &v); err != nil {
		t.Fatal(err)
	}
	s := &Server{opts: Options{InCluster: true, Namespace: "ferry-system"}}
	empty := []byte(nil)
	s.ca.Store(&empty)
	wm, wv := WebhookConfigurations(s.clientConfig(MutatePath), s.clientConfig(ValidatePath), s.clientConfig(HoldPath), "system:serviceaccount:ferry-system:ferry-controller")
	m.TypeMeta, v.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
	if !equality.Semantic.DeepEqual(&m, wm) {
		t.Errorf("mutating:\nmanifest %+v\nregistered %+v", m.Webhooks[0], wm.Webhooks[0])
	}
	if !equality.Semantic.DeepEqual(&v, wv) {
		t.Errorf("validating:\nmanifest %+v\nregistered %+v", v.Webhooks[0], wv.Webhooks[0])
	}
}
