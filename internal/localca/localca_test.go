package localca

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
)

// TestLoadOrCreate: the CA is made once, kept (key 0600) and read back the same.
func TestLoadOrCreate(t *testing.T) {
	dir := t.TempDir()
	ca, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v, want mode 0600", info, err)
	}
	again, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(again.CertPEM()) != string(ca.CertPEM()) {
		t.Error("a second start made a new CA")
	}
	if err := os.Remove(filepath.Join(dir, KeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreate(dir); err == nil {
		t.Error("a CA certificate without its key was accepted")
	}
}

func certificate(class string) *netv1alpha1.Certificate {
	return &netv1alpha1.Certificate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "route-uid", UID: "cert-uid", Generation: 1,
			Annotations: map[string]string{netv1alpha1.CertificateClassAnnotationKey: class}},
		Spec: netv1alpha1.CertificateSpec{DNSNames: []string{"hello.ns.example.com"}, SecretName: "route-uid"},
	}
}

// TestReconcile: a Certificate of the class gets a Secret a client trusting ca.crt
// accepts for its names, and Ready with notAfter; a second reconcile writes nothing;
// a changed name is signed again; a Secret of that name not controlled by the
// Certificate is left alone (NotOwned); another class is ignored.
func TestReconcile(t *testing.T) {
	ca, err := LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	_ = netv1alpha1.AddToScheme(scheme)
	ours, theirs := certificate(netv1alpha1.LocalCACertificateClass), certificate(netv1alpha1.CertManagerCertificateClass)
	theirs.Name = "other"
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ours, theirs).WithStatusSubresource(ours, theirs).Build()
	r := &Reconciler{Client: c, CA: ca}
	ctx := context.Background()
	reconcileOnce := func(name string) reconcile.Result {
		t.Helper()
		res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := reconcileOnce("route-uid")
	if res.RequeueAfter < 50*24*time.Hour {
		t.Errorf("requeue after %v, want at the renewal, about 60 days on", res.RequeueAfter)
	}
	got := &netv1alpha1.Certificate{}
	_ = c.Get(ctx, client.ObjectKeyFromObject(ours), got)
	if !got.IsReady() || got.Status.NotAfter == nil {
		t.Fatalf("status %+v, want Ready with notAfter", got.Status)
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "route-uid"}, secret); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(secret, got) || secret.Labels[netv1alpha1.CertificateUIDLabelKey] != "cert-uid" || secret.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret meta %+v type %s", secret.ObjectMeta, secret.Type)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(secret.Data["ca.crt"])
	pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pair.Leaf.Verify(x509.VerifyOptions{DNSName: "hello.ns.example.com", Roots: pool}); err != nil {
		t.Errorf("the certificate does not verify for its name with the CA: %v", err)
	}

	version := secret.ResourceVersion
	reconcileOnce("route-uid")
	_ = c.Get(ctx, client.ObjectKeyFromObject(secret), secret)
	if secret.ResourceVersion != version {
		t.Error("a second reconcile rewrote the Secret")
	}

	got.Spec.DNSNames = []string{"other.ns.example.com"}
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	reconcileOnce("route-uid")
	_ = c.Get(ctx, client.ObjectKeyFromObject(secret), secret)
	pair, _ = tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if pair.Leaf == nil || pair.Leaf.DNSNames[0] != "other.ns.example.com" {
		t.Error("a changed dnsName was not signed again")
	}

	secret.OwnerReferences = nil
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	reconcileOnce("route-uid")
	_ = c.Get(ctx, client.ObjectKeyFromObject(ours), got)
	if cond := got.Status.GetCondition(netv1alpha1.CertificateConditionReady); !cond.IsFalse() || cond.Reason != duck.ReasonNotOwned {
		t.Errorf("Ready %+v, want False NotOwned", cond)
	}

	reconcileOnce("other")
	_ = c.Get(ctx, client.ObjectKeyFromObject(theirs), got)
	if len(got.Status.Conditions) != 0 {
		t.Errorf("a Certificate of another class got a status: %+v", got.Status)
	}
}
