package gateway

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/internal/reconciler/reconcilertest"
)

// selfSigned returns a PEM certificate and key for hosts, and a pool that trusts it.
func selfSigned(t *testing.T, hosts ...string) (crtPEM, keyPEM []byte, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: hosts[0]}, DNSNames: hosts,
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), pool
}

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
	crt, pemKey, _ := selfSigned(t, "a.example.com")
	crt2, key2, _ := selfSigned(t, "a.example.com")
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	good := withTLS(newIngress("good", 0), v1alpha1.HTTPOptionRedirected,
		v1alpha1.IngressTLS{Hosts: []string{"A.example.com"}, SecretName: "a"})
	bad := withTLS(newIngress("bad", 0), v1alpha1.HTTPOptionRedirected,
		v1alpha1.IngressTLS{Hosts: []string{"b.example.com"}, SecretName: "b"},
		v1alpha1.IngressTLS{Hosts: []string{"c.example.com"}, SecretName: "missing"})
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(good, bad, tlsSecret("a", crt, pemKey), tlsSecret("b", crt, []byte("junk"))).Build()
	events := &reconcilertest.Events{}
	store := NewTLSStore(nil)
	r := &tlsReconciler{client: c, store: store, recorder: events}
	ctx := context.Background()
	for range 2 { // the second round reports nothing new
		for _, name := range []string{"good", "bad"} {
			if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key(name)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	a := store.lookup("a.example.com")
	if a == nil || a.cert == nil || !a.redirect {
		t.Fatalf("a.example.com: %+v, want a certificate and redirect", a)
	}
	if b, c := store.lookup("b.example.com"), store.lookup("c.example.com"); b != nil || c != nil {
		t.Errorf("hosts of a malformed and a missing Secret have TLS: %+v %+v", b, c)
	}
	got := events.List()
	if len(got) != 1 || !strings.Contains(got[0], reasonInvalidSecret) || !strings.Contains(got[0], "ns/missing not found") ||
		!strings.Contains(got[0], "Secret ns/b") {
		t.Errorf("events %q, want one InvalidSecret naming both Secrets", got)
	}

	s := tlsSecret("a", crt2, key2)
	if err := c.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key("good")}); err != nil {
		t.Fatal(err)
	}
	if cert, _ := store.getCertificate(&tls.ClientHelloInfo{ServerName: "a.example.com"}); cert == a.cert {
		t.Error("the renewed Secret's certificate is not served")
	}
	if err := c.Delete(ctx, good); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key("good")}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.getCertificate(&tls.ClientHelloInfo{ServerName: "a.example.com"}); err == nil {
		t.Error("a deleted ingress's host still has a certificate")
	}
}

// TestTLSStoreOldestIngressWins: two ingresses naming one host, the oldest's
// certificate is served, as the oldest routes it.
func TestTLSStoreOldestIngressWins(t *testing.T) {
	s := NewTLSStore(nil)
	older, newer := &tls.Certificate{}, &tls.Certificate{}
	s.set(key("new"), epoch, map[string]*hostTLS{"h": {cert: newer}})
	s.set(key("old"), epoch.Add(-time.Second), map[string]*hostTLS{"h": {cert: older}})
	if got, _ := s.getCertificate(&tls.ClientHelloInfo{ServerName: "h"}); got != older {
		t.Error("the newer ingress's certificate is served")
	}
	s.set(key("old"), time.Time{}, nil)
	if got, _ := s.getCertificate(&tls.ClientHelloInfo{ServerName: "h"}); got != newer {
		t.Error("after the older ingress went, the newer's certificate is not served")
	}
}

// TestHTTPSListener: the HTTPS listener serves a host with a certificate over HTTP/2
// (ALPN) and HTTP/1.1, refuses the handshake for a host without one; the plain
// listener redirects a Redirected host with a certificate (301, to the HTTPS port when
// the client named a port) and serves the others.
func TestHTTPSListener(t *testing.T) {
	g := startGateway(t, Options{HTTPSAddr: "127.0.0.1:0"})
	backend := newEchoBackend(t, "rev")
	g.serve("rev", backend)
	for _, h := range []string{"secure.example.com", "plain.example.com", "nocert.example.com"} {
		g.program(newIngress(strings.Split(h, ".")[0], 0, externalRule([]string{h}, path("", splitTo("rev", 100)))))
	}
	crt, k, pool := selfSigned(t, "secure.example.com")
	cert, err := tls.X509KeyPair(crt, k)
	if err != nil {
		t.Fatal(err)
	}
	g.tlsStore.set(key("secure"), epoch, map[string]*hostTLS{"secure.example.com": {cert: &cert, redirect: true}})
	g.tlsStore.set(key("plain"), epoch, map[string]*hostTLS{"plain.example.com": {cert: &cert}})
	// nocert's Secret is broken: Redirected, but no certificate.
	g.tlsStore.set(key("nocert"), epoch, map[string]*hostTLS{})

	for _, h2 := range []bool{true, false} {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "secure.example.com"}, ForceAttemptHTTP2: h2}
		if !h2 {
			tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
		}
		req, _ := http.NewRequest("GET", "https://"+g.HTTPSAddr()+"/x", nil)
		req.Host = "secure.example.com"
		res, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		want := map[bool]int{true: 2, false: 1}[h2]
		if res.StatusCode != 200 || res.ProtoMajor != want || !strings.Contains(string(body), `"backend":"rev"`) {
			t.Errorf("h2=%v: %s %s %s, want 200 over HTTP/%d from rev", h2, res.Proto, res.Status, body, want)
		}
		tr.CloseIdleConnections()
	}
	_, err = tls.Dial("tcp", g.HTTPSAddr(), &tls.Config{RootCAs: pool, ServerName: "nocert.example.com"})
	if err == nil {
		t.Error("a handshake for a host without a certificate succeeded")
	}
	// Without SNI (an IP address is never sent as one).
	if _, err := tls.Dial("tcp", g.HTTPSAddr(), &tls.Config{InsecureSkipVerify: true}); err == nil {
		t.Error("a handshake without a server name succeeded")
	}
	for reason, want := range map[string]float64{refusedNoCertificate: 1, refusedNoServerName: 1} {
		if got := testutil.ToFloat64(g.metrics.TLSRefused.WithLabelValues(reason)); got != want {
			t.Errorf("ferry_gateway_tls_handshakes_refused_total{reason=%q} = %v, want %v", reason, got, want)
		}
	}

	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	_, port, _ := strings.Cut(g.HTTPSAddr(), ":")
	for _, tc := range []struct{ host, wantLocation string }{
		{"secure.example.com:8080", "https://secure.example.com:" + port + "/p?q=1"},
		{"secure.example.com", "https://secure.example.com/p?q=1"},
		{"plain.example.com", ""},
		{"nocert.example.com", ""},
	} {
		req, _ := http.NewRequest("GET", g.externalURL("/p?q=1"), nil)
		req.Host = tc.host
		res, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if tc.wantLocation == "" {
			if res.StatusCode != 200 {
				t.Errorf("%s: %s, want 200 over plain HTTP", tc.host, res.Status)
			}
			continue
		}
		if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != tc.wantLocation {
			t.Errorf("%s: %s Location %q, want 301 to %s", tc.host, res.Status, res.Header.Get("Location"), tc.wantLocation)
		}
	}
	// The cluster-local listener never redirects.
	req, _ := http.NewRequest("GET", g.localURL("/"), nil)
	req.Host = "secure.example.com"
	res, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("cluster-local listener: %s, want 200", res.Status)
	}
}
