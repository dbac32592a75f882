package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/certmanager"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/gateway"
	"github.com/ferry-serving/ferry/internal/localca"
	"github.com/ferry-serving/ferry/internal/reconciler"
)

// startFerryWithTLS runs, on ferry-system's ConfigMaps, the reconcilers with the local
// CA's class as the default certificate class, the local CA with its CA in caDir, and
// the gateway with an HTTPS listener, as ferry up does.
func startFerryWithTLS(t *testing.T, caDir, ns string) *gateway.Gateway {
	t.Helper()
	setLoggerOnce.Do(func() { ctrl.SetLogger(logr.New(errorSink{})) })
	store := startConfigStore(t)
	mgr := newTestManager(t, rest.CopyConfig(testConfig), ns)
	ctrls, err := reconciler.SetupWithManager(mgr, reconciler.Options{Config: store.Load, OnConfigChange: store.OnChange,
		CertificateClass: netv1alpha1.LocalCACertificateClass})
	if err != nil {
		t.Fatal(err)
	}
	ca, err := localca.LoadOrCreate(caDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&localca.Reconciler{Client: mgr.GetClient(), CA: ca}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	gw := gateway.New(gateway.Options{ExternalAddr: "127.0.0.1:0", LocalAddr: "127.0.0.1:0", HTTPSAddr: "127.0.0.1:0",
		SimulatedPods: true, Registry: prometheus.NewRegistry(), Stats: ctrls.Autoscaler})
	if err := gw.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	runTestManager(t, mgr)
	return gw
}

// httpsGet sends GET https://host/ to the gateway's HTTPS listener, trusting only the
// CA in caFile, and returns the answer's protocol, status and body.
func httpsGet(t *testing.T, gw *gateway.Gateway, caFile, host string) (proto string, status int, body string, err error) {
	t.Helper()
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("no certificate in %s", caFile)
	}
	// As curl --resolve host:port:127.0.0.1 does: the name in SNI and Host, the
	// connection to the listener.
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, gw.HTTPSAddr())
		}}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + host + "/")
	if err != nil {
		return "", 0, "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.Proto, res.StatusCode, string(b), nil
}

// plainGet sends GET http://host/ to the external listener without following
// redirects.
func plainGet(t *testing.T, gw *gateway.Gateway, host string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+gw.ExternalAddr()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

// waitCertificateProvisioned waits for the Route's CertificateProvisioned to be as given.
func waitCertificateProvisioned(t *testing.T, ns, name string, status corev1.ConditionStatus, reason string) *v1.Route {
	t.Helper()
	r := &v1.Route{}
	eventually(t, readyTimeout, func() (bool, string) {
		get(t, testClient, ns, name, r)
		c := r.Status.GetCondition(v1.RouteConditionCertificateProvisioned)
		if c == nil || c.Status != status || c.Reason != reason || r.Status.ObservedGeneration != r.Generation {
			return false, fmt.Sprintf("CertificateProvisioned %+v, want %s %s", c, status, reason)
		}
		return true, ""
	})
	return r
}

// warningEvents counts the Warning Events with reason about the named object.
func warningEvents(t *testing.T, ns, name, reason string) int {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := testClient.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
			n++
		}
	}
	return n
}

// TestHTTPSThroughLocalCA: with external-domain-tls Enabled in config-network, a
// Service's Route gets a Certificate that the local CA fulfils; the Route says
// CertificateProvisioned True and an https URL; the gateway serves the host over TLS
// with the Secret's certificate, which a client trusting only ca.crt accepts, over
// HTTP/2 by ALPN; plain HTTP is still served; with http-protocol Redirected it is a
// 301 to https. Not parallel: it changes ferry-system.
func TestHTTPSThroughLocalCA(t *testing.T) {
	setAsideConfigMaps(t)
	applyConfigMap(t, config.NetworkConfigName, map[string]string{"external-domain-tls": "Enabled"})
	caDir := t.TempDir()
	ns := testNamespace(t)
	gw := startFerryWithTLS(t, caDir, ns)
	dumpOnFailure(t, testClient, ns)

	svc := ksvc(ns, "hello", "ferry.test/hello")
	if err := testClient.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	host := "hello." + ns + ".example.com"
	waitCondition(t, testClient, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	rt := waitCertificateProvisioned(t, ns, "hello", corev1.ConditionTrue, "")
	if rt.Status.URL != "https://"+host {
		t.Errorf("Route URL %q, want https://%s", rt.Status.URL, host)
	}
	cert := &netv1alpha1.Certificate{}
	if !get(t, testClient, ns, "route-"+string(rt.UID), cert) || !cert.IsReady() || cert.Spec.DNSNames[0] != host ||
		cert.Annotations[netv1alpha1.CertificateClassAnnotationKey] != netv1alpha1.LocalCACertificateClass {
		t.Fatalf("the Route's Certificate: %+v", cert)
	}

	caFile := filepath.Join(caDir, localca.CertFile)
	// The KIngress is Ready once the gateway has loaded its Secret too: ask until the
	// handshake finds the certificate.
	var proto, body string
	var status int
	eventually(t, 20*time.Second, func() (bool, string) {
		var err error
		proto, status, body, err = httpsGet(t, gw, caFile, host)
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	if proto != "HTTP/2.0" || status != http.StatusOK || !strings.HasPrefix(body, "Hello from revision hello-00001") {
		t.Errorf("over TLS: %s %d %q, want HTTP/2.0 200 from hello-00001", proto, status, body)
	}
	if res := plainGet(t, gw, host); res.StatusCode != http.StatusOK {
		t.Errorf("plain HTTP with http-protocol enabled: %s, want 200", res.Status)
	}

	applyConfigMap(t, config.NetworkConfigName, map[string]string{"external-domain-tls": "Enabled", "http-protocol": "Redirected"})
	waitRouteServing(t, ns, "hello", func(ing *netv1alpha1.Ingress) (bool, string) {
		return ing.Spec.HTTPOption == netv1alpha1.HTTPOptionRedirected, "httpOption " + string(ing.Spec.HTTPOption)
	})
	_, port, _ := net.SplitHostPort(gw.HTTPSAddr())
	eventually(t, 10*time.Second, func() (bool, string) {
		res := plainGet(t, gw, host+":80")
		want := "https://" + host + ":" + port + "/"
		return res.StatusCode == http.StatusMovedPermanently && res.Header.Get("Location") == want,
			fmt.Sprintf("plain HTTP: %s Location %q, want 301 to %s", res.Status, res.Header.Get("Location"), want)
	})
}

// TestCertificateNotReady: with external-domain-tls Enabled and a certificate-class
// nobody serves, the Route's Certificate never becomes Ready. With http-protocol
// Redirected the Route says CertificateProvisioned Unknown CertificateNotReady with
// one Warning Event, and the host is still served over plain HTTP (no redirect to a
// host without a certificate); with http-protocol enabled the URL goes back to http,
// CertificateProvisioned is True HTTPDowngrade, and the Route is Ready, as in
// Knative. Not parallel: it changes ferry-system.
func TestCertificateNotReady(t *testing.T) {
	setAsideConfigMaps(t)
	applyConfigMap(t, config.NetworkConfigName, map[string]string{"external-domain-tls": "Enabled", "http-protocol": "Redirected",
		"certificate-class": "nobody.certificate.example.com"})
	ns := testNamespace(t)
	gw := startFerryWithTLS(t, t.TempDir(), ns)
	dumpOnFailure(t, testClient, ns)

	svc := ksvc(ns, "hello", "ferry.test/hello")
	if err := testClient.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	host := "hello." + ns + ".example.com"
	rt := waitCertificateProvisioned(t, ns, "hello", corev1.ConditionUnknown, v1.ReasonCertificateNotReady)
	certName := "route-" + string(rt.UID)
	if c := rt.Status.GetCondition(v1.RouteConditionCertificateProvisioned); !strings.Contains(c.Message, certName) ||
		!strings.Contains(c.Message, "nobody.certificate.example.com") {
		t.Errorf("CertificateProvisioned message %q, want the Certificate and its class named", c.Message)
	}
	if rt.Status.URL != "https://"+host {
		t.Errorf("Route URL %q, want https://%s (Knative keeps https with Redirected)", rt.Status.URL, host)
	}
	eventually(t, 30*time.Second, func() (bool, string) {
		n := warningEvents(t, ns, "hello", v1.ReasonCertificateNotReady)
		return n == 1, fmt.Sprintf("%d CertificateNotReady Events on the Route, want 1", n)
	})
	// The Route is not Ready (its certificate is not), but its KIngress is, without TLS.
	eventually(t, readyTimeout, func() (bool, string) {
		ing := &netv1alpha1.Ingress{}
		return get(t, testClient, ns, "hello", ing) && ing.IsReady() && len(ing.Spec.TLS) == 0 &&
			ing.Spec.HTTPOption == netv1alpha1.HTTPOptionRedirected, "KIngress Ready, Redirected, without tls"
	})
	if res := plainGet(t, gw, host); res.StatusCode != http.StatusOK {
		t.Errorf("plain HTTP while the certificate is not ready: %s, want 200", res.Status)
	}

	applyConfigMap(t, config.NetworkConfigName, map[string]string{"external-domain-tls": "Enabled",
		"certificate-class": "nobody.certificate.example.com"})
	rt = waitCertificateProvisioned(t, ns, "hello", corev1.ConditionTrue, v1.ReasonHTTPDowngrade)
	if rt.Status.URL != "http://"+host {
		t.Errorf("Route URL %q, want http://%s (downgraded)", rt.Status.URL, host)
	}
	waitCondition(t, testClient, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	if res := plainGet(t, gw, host); res.StatusCode != http.StatusOK {
		t.Errorf("plain HTTP, downgraded: %s, want 200", res.Status)
	}
	if n := warningEvents(t, ns, "hello", v1.ReasonCertificateNotReady); n != 1 {
		t.Errorf("%d CertificateNotReady Events, want still 1", n)
	}
}

// installCertManagerCRD installs cert-manager's real Certificate CRD (testdata) and
// waits until it is served. It stays for the other tests: nothing else uses it.
func installCertManagerCRD(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile("testdata/cert-manager-certificates-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		t.Fatal(err)
	}
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(testConfig, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(crd), crd); err != nil {
			return false, err.Error()
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, "cert-manager's CRD not established"
	})
}

// TestCertManagerProvider: with external-domain-tls Enabled and the default
// certificate-class (cert-manager's), the Route's Certificate becomes a
// cert-manager.io/v1 Certificate, on cert-manager's real CRD, with
// config-certmanager's issuerRef; until it is Ready the Route is downgraded to http.
// The test then plays cert-manager: it writes the Secret (signed by a CA of its own)
// and marks the cert-manager Certificate Ready; the Route turns https and the gateway
// serves the Secret's certificate. Not parallel: it changes ferry-system.
func TestCertManagerProvider(t *testing.T) {
	installCertManagerCRD(t)
	setAsideConfigMaps(t)
	applyConfigMap(t, config.NetworkConfigName, map[string]string{"external-domain-tls": "Enabled"})
	applyConfigMap(t, config.CertManagerConfigName, map[string]string{"issuerRef": "kind: ClusterIssuer\nname: test-issuer"})
	setLoggerOnce.Do(func() { ctrl.SetLogger(logr.New(errorSink{})) })
	store := startConfigStore(t)
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	mgr := newTestManager(t, rest.CopyConfig(testConfig), ns)
	ctrls, err := reconciler.SetupWithManager(mgr, reconciler.Options{Config: store.Load, OnConfigChange: store.OnChange})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&certmanager.Reconciler{Client: mgr.GetClient(), Config: store.Load}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	gw := gateway.New(gateway.Options{ExternalAddr: "127.0.0.1:0", LocalAddr: "127.0.0.1:0", HTTPSAddr: "127.0.0.1:0",
		SimulatedPods: true, Registry: prometheus.NewRegistry(), Stats: ctrls.Autoscaler})
	if err := gw.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	runTestManager(t, mgr)
	ctx := context.Background()

	if err := testClient.Create(ctx, ksvc(ns, "hello", "ferry.test/hello")); err != nil {
		t.Fatal(err)
	}
	host := "hello." + ns + ".example.com"
	rt := waitCertificateProvisioned(t, ns, "hello", corev1.ConditionTrue, v1.ReasonHTTPDowngrade)
	if rt.Status.URL != "http://"+host {
		t.Errorf("Route URL %q while cert-manager has not issued, want http://%s", rt.Status.URL, host)
	}
	name := "route-" + string(rt.UID)
	cm := &unstructured.Unstructured{}
	cm.SetGroupVersionKind(certmanager.CertificateGVK)
	eventually(t, 20*time.Second, func() (bool, string) {
		return get(t, testClient, ns, name, cm), "no cert-manager Certificate " + name
	})
	issuer, _, _ := unstructured.NestedString(cm.Object, "spec", "issuerRef", "name")
	names, _, _ := unstructured.NestedStringSlice(cm.Object, "spec", "dnsNames")
	secretName, _, _ := unstructured.NestedString(cm.Object, "spec", "secretName")
	if issuer != "test-issuer" || len(names) != 1 || names[0] != host || secretName != name {
		t.Fatalf("cert-manager Certificate spec %v", cm.Object["spec"])
	}

	// cert-manager's part: issue into the Secret, then say Ready.
	caDir := t.TempDir()
	ca, err := localca.LoadOrCreate(caDir)
	if err != nil {
		t.Fatal(err)
	}
	crt, key, err := ca.Sign(names, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secretName}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}}
	if err := testClient.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	notAfter := time.Now().Add(90 * 24 * time.Hour).UTC().Truncate(time.Second)
	if err := unstructured.SetNestedField(cm.Object, map[string]any{
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Ready", "message": "Certificate is up to date and has not expired",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}},
		"notAfter": notAfter.Format(time.RFC3339),
	}, "status"); err != nil {
		t.Fatal(err)
	}
	if err := testClient.Status().Update(ctx, cm); err != nil {
		t.Fatal(err)
	}

	rt = waitCertificateProvisioned(t, ns, "hello", corev1.ConditionTrue, "")
	if rt.Status.URL != "https://"+host {
		t.Errorf("Route URL %q, want https://%s", rt.Status.URL, host)
	}
	kcert := &netv1alpha1.Certificate{}
	if get(t, testClient, ns, name, kcert); !kcert.IsReady() || kcert.Status.NotAfter == nil || !kcert.Status.NotAfter.Time.Equal(notAfter) {
		t.Errorf("Knative Certificate status %+v, want Ready with cert-manager's notAfter %v", kcert.Status, notAfter)
	}
	eventually(t, 20*time.Second, func() (bool, string) {
		proto, status, body, err := httpsGet(t, gw, filepath.Join(caDir, localca.CertFile), host)
		if err != nil {
			return false, err.Error()
		}
		return status == http.StatusOK && strings.HasPrefix(body, "Hello from revision"), fmt.Sprintf("%s %d %q", proto, status, body)
	})
}
