package proxy

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/reconcilertest"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func tlsSecret(name string, crt, key []byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}}
}

func withTLS(ing *v1alpha1.Ingress, option v1alpha1.HTTPOption, tls ...v1alpha1.IngressTLS) *v1alpha1.Ingress {
	ing.Spec.TLS, ing.Spec.HTTPOption = tls, option
	return ing
}

// TestTLSReconcilerLoadsSecrets: spec.tls's Secrets become certificates by host; a
// missing or malformed Secret gives its hosts none, with one Warning Event; a Secret
// changed is picked up at the next reconcile; an ingress gone takes its hosts along.
func TestTLSReconcilerLoadsSecrets(t *testing.T) {
	crt, pemKey, _ := gatewaytest.SelfSigned(t, "a.example.com")
	crt2, key2, _ := gatewaytest.SelfSigned(t, "a.example.com")
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	good := withTLS(gatewaytest.NewIngress("good", 0), v1alpha1.HTTPOptionRedirected,
		v1alpha1.IngressTLS{Hosts: []string{"A.example.com"}, SecretName: "a"})
	bad := withTLS(gatewaytest.NewIngress("bad", 0), v1alpha1.HTTPOptionRedirected,
		v1alpha1.IngressTLS{Hosts: []string{"b.example.com"}, SecretName: "b"},
		v1alpha1.IngressTLS{Hosts: []string{"c.example.com"}, SecretName: "missing"})
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(good, bad, tlsSecret("a", crt, pemKey), tlsSecret("b", crt, []byte("junk"))).Build()
	events := &reconcilertest.Events{}
	store := NewTLSStore(nil)
	r := &tlsReconciler{client: c, store: store, recorder: events}
	ctx := context.Background()
	for range 2 { // the second round reports nothing new
		for _, name := range []string{"good", "bad"} {
			if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: gatewaytest.Key(name)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	a := store.lookup("a.example.com")
	if a == nil || a.Cert == nil || !a.Redirect {
		t.Fatalf("a.example.com: %+v, want a certificate and redirect", a)
	}
	if b, c := store.lookup("b.example.com"), store.lookup("c.example.com"); b != nil || c != nil {
		t.Errorf("hosts of a malformed and a missing Secret have TLS: %+v %+v", b, c)
	}
	got := events.List()
	if len(got) != 1 || !strings.Contains(got[0], v1alpha1.ReasonInvalidSecret) || !strings.Contains(got[0], "ns/missing not found") ||
		!strings.Contains(got[0], "Secret ns/b") {
		t.Errorf("events %q, want one InvalidSecret naming both Secrets", got)
	}

	s := tlsSecret("a", crt2, key2)
	if err := c.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: gatewaytest.Key("good")}); err != nil {
		t.Fatal(err)
	}
	if cert, _ := store.GetCertificate(&tls.ClientHelloInfo{ServerName: "a.example.com"}); cert == a.Cert {
		t.Error("the renewed Secret's certificate is not served")
	}
	if err := c.Delete(ctx, good); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: gatewaytest.Key("good")}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.GetCertificate(&tls.ClientHelloInfo{ServerName: "a.example.com"}); err == nil {
		t.Error("a deleted ingress's host still has a certificate")
	}
}

// TestTLSStoreOldestIngressWins: two ingresses naming one host, the oldest's
// certificate is served, as the oldest routes it.
func TestTLSStoreOldestIngressWins(t *testing.T) {
	s := NewTLSStore(nil)
	older, newer := &tls.Certificate{}, &tls.Certificate{}
	s.Set(gatewaytest.Key("new"), gatewaytest.Epoch, map[string]*HostTLS{"h": {Cert: newer}})
	s.Set(gatewaytest.Key("old"), gatewaytest.Epoch.Add(-time.Second), map[string]*HostTLS{"h": {Cert: older}})
	if got, _ := s.GetCertificate(&tls.ClientHelloInfo{ServerName: "h"}); got != older {
		t.Error("the newer ingress's certificate is served")
	}
	s.Set(gatewaytest.Key("old"), time.Time{}, nil)
	if got, _ := s.GetCertificate(&tls.ClientHelloInfo{ServerName: "h"}); got != newer {
		t.Error("after the older ingress went, the newer's certificate is not served")
	}
}
