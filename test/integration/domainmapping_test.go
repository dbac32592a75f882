package integration

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/api/serving/v1beta1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/gateway"
	"github.com/ferry-serving/ferry/internal/localca"
	"github.com/ferry-serving/ferry/internal/reconciler"
)

// startFerryForDomainMappings runs the reconcilers, with config-network's
// autocreate-cluster-domain-claims as given, and the gateway in one manager until the
// test ends.
func startFerryForDomainMappings(t *testing.T, autocreate bool, namespaces ...string) *gateway.Gateway {
	t.Helper()
	setLoggerOnce.Do(func() { ctrl.SetLogger(logr.New(errorSink{})) })
	cfg := config.Default()
	cfg.Network.AutocreateClusterDomainClaims = autocreate
	mgr := newTestManager(t, rest.CopyConfig(testConfig), namespaces...)
	ctrls, err := reconciler.SetupWithManager(mgr, reconciler.Options{Config: func() *config.Config { return cfg }})
	if err != nil {
		t.Fatal(err)
	}
	gw := gateway.New(gateway.Options{ExternalAddr: "127.0.0.1:0", LocalAddr: "127.0.0.1:0", SimulatedPods: true,
		Registry: prometheus.NewRegistry(), Stats: ctrls.Autoscaler})
	if err := gw.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	runTestManager(t, mgr)
	return gw
}

func domainMapping(ns, domain, service string) *v1beta1.DomainMapping {
	return &v1beta1.DomainMapping{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: domain},
		Spec:       v1beta1.DomainMappingSpec{Ref: v1beta1.KReference{APIVersion: "serving.knative.dev/v1", Kind: "Service", Name: service}},
	}
}

// waitDomainMapping waits until the DomainMapping's condition typ has the given
// status and reason for its current generation.
func waitDomainMapping(t *testing.T, dm *v1beta1.DomainMapping, typ duck.ConditionType, status corev1.ConditionStatus, reason string) {
	t.Helper()
	eventually(t, readyTimeout, func() (bool, string) {
		if !get(t, testClient, dm.Namespace, dm.Name, dm) {
			return false, "not found"
		}
		c := dm.Status.GetCondition(typ)
		if dm.Status.ObservedGeneration != dm.Generation || c == nil || c.Status != status || c.Reason != reason {
			return false, fmt.Sprintf("DomainMapping %s/%s: observedGeneration %d/%d, conditions %+v", dm.Namespace, dm.Name,
				dm.Status.ObservedGeneration, dm.Generation, dm.Status.Conditions)
		}
		return true, ""
	})
}

// deleteClaimAtEnd deletes the cluster-scoped claim of domain when the test ends: the
// test namespaces go, claims stay.
func deleteClaimAtEnd(t *testing.T, domain string) {
	t.Cleanup(func() {
		_ = testClient.Delete(context.Background(), &netv1alpha1.ClusterDomainClaim{ObjectMeta: metav1.ObjectMeta{Name: domain}})
	})
}

// TestDomainMapping: with autocreate-cluster-domain-claims on, a DomainMapping of a
// Service claims its domain for its namespace and becomes Ready with Knative's
// conditions, URL and address; a request with the mapped Host goes through the
// gateway to the Service's Revision. The same domain mapped from another namespace is
// refused with DomainAlreadyClaimed, and serves nothing of the other namespace, until
// the first mapping is deleted and its claim with it.
func TestDomainMapping(t *testing.T) {
	ns, other := testNamespace(t), testNamespace(t)
	gw := startFerryForDomainMappings(t, true, ns, other)
	dumpOnFailure(t, testClient, ns)
	ctx := context.Background()
	domain := ns + ".example.org"
	deleteClaimAtEnd(t, domain)

	svc := ksvc(ns, "hello", "ferry.test/hello")
	if err := testClient.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, testClient, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)

	dm := domainMapping(ns, domain, "hello")
	if err := testClient.Create(ctx, dm); err != nil {
		t.Fatal(err)
	}
	if dm.Spec.Ref.Namespace != ns {
		t.Errorf("spec.ref.namespace = %q, want the admission's default %q", dm.Spec.Ref.Namespace, ns)
	}
	waitDomainMapping(t, dm, v1beta1.DomainMappingConditionReady, corev1.ConditionTrue, "")
	for typ, reason := range map[duck.ConditionType]string{
		v1beta1.DomainMappingConditionDomainClaimed:          "",
		v1beta1.DomainMappingConditionReferenceResolved:      "",
		v1beta1.DomainMappingConditionIngressReady:           "",
		v1beta1.DomainMappingConditionCertificateProvisioned: v1.ReasonTLSNotEnabled,
	} {
		if c := dm.Status.GetCondition(typ); !c.IsTrue() || c.Reason != reason {
			t.Errorf("%s = %+v, want True with reason %q", typ, c, reason)
		}
	}
	wantURL := "http://" + domain
	if dm.Status.URL != wantURL || dm.Status.Address == nil || dm.Status.Address.URL != wantURL {
		t.Errorf("url %q, address %+v; want %s", dm.Status.URL, dm.Status.Address, wantURL)
	}
	claim := &netv1alpha1.ClusterDomainClaim{}
	if !get(t, testClient, "", domain, claim) || claim.Spec.Namespace != ns {
		t.Errorf("ClusterDomainClaim %s: %+v, want one for namespace %s", domain, claim.Spec, ns)
	}
	ing := &netv1alpha1.Ingress{}
	if !get(t, testClient, ns, domain, ing) {
		t.Fatalf("no KIngress %s/%s", ns, domain)
	}
	if p := ing.Spec.Rules[0].HTTP.Paths[0]; p.RewriteHost != "hello."+ns+".svc.cluster.local" || p.Splits[0].ServiceName != "hello" {
		t.Errorf("KIngress path %+v: want the host rewritten to the Service's cluster-local host", p)
	}

	// The mapped host is served: the request reaches the Service's Revision.
	eventually(t, 20*time.Second, func() (bool, string) {
		rev, why := revisionAnswering(t, gw.ExternalAddr(), domain, "")
		return rev == "hello-00001", fmt.Sprintf("%s answered by %q %s", domain, rev, why)
	})

	// Another namespace cannot take the domain.
	theirs := domainMapping(other, domain, "hello")
	if err := testClient.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	waitDomainMapping(t, theirs, v1beta1.DomainMappingConditionReady, corev1.ConditionFalse, v1beta1.ReasonDomainAlreadyClaimed)
	if c := theirs.Status.GetCondition(v1beta1.DomainMappingConditionDomainClaimed); !c.IsFalse() || c.Reason != v1beta1.ReasonDomainAlreadyClaimed ||
		c.Message != v1beta1.MessageDomainAlreadyClaimed {
		t.Errorf("DomainClaimed = %+v, want Knative's DomainAlreadyClaimed", c)
	}
	waitEvent(t, testClient, other, domain, v1beta1.ReasonDomainAlreadyClaimed)
	if get(t, testClient, other, domain, &netv1alpha1.Ingress{}) {
		t.Error("the refused DomainMapping has a KIngress")
	}
	if rev, why := revisionAnswering(t, gw.ExternalAddr(), domain, ""); rev != "hello-00001" {
		t.Errorf("after the refused mapping, %s answered by %q %s", domain, rev, why)
	}

	// Deleting the mapping releases the claim it made, as Knative's finalizer does:
	// the other namespace's mapping takes the domain.
	if err := testClient.Delete(ctx, dm); err != nil {
		t.Fatal(err)
	}
	waitDomainMapping(t, theirs, v1beta1.DomainMappingConditionDomainClaimed, corev1.ConditionTrue, "")
	if !get(t, testClient, "", domain, claim) || claim.Spec.Namespace != other {
		t.Errorf("ClusterDomainClaim %s: %+v, want it moved to namespace %s", domain, claim.Spec, other)
	}
}

// TestDomainMappingWithoutClaim: with autocreate-cluster-domain-claims off, a domain
// nobody claimed is refused as Knative refuses it (DomainAlreadyClaimed, and an Event
// with Knative's error), and the claim an administrator then creates for the namespace
// makes the DomainMapping Ready.
func TestDomainMappingWithoutClaim(t *testing.T) {
	ns := testNamespace(t)
	startFerryForDomainMappings(t, false, ns)
	dumpOnFailure(t, testClient, ns)
	ctx := context.Background()
	domain := ns + ".example.org"
	deleteClaimAtEnd(t, domain)

	svc := ksvc(ns, "hello", "ferry.test/hello")
	if err := testClient.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	dm := domainMapping(ns, domain, "hello")
	if err := testClient.Create(ctx, dm); err != nil {
		t.Fatal(err)
	}
	waitDomainMapping(t, dm, v1beta1.DomainMappingConditionReady, corev1.ConditionFalse, v1beta1.ReasonDomainAlreadyClaimed)
	want := fmt.Sprintf("no ClusterDomainClaim found for domain %q (and autocreate-cluster-domain-claims property is not true)", domain)
	eventually(t, 20*time.Second, func() (bool, string) {
		list := &eventsv1.EventList{}
		if err := testClient.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range list.Items {
			if e.Regarding.Name == domain && e.Type == corev1.EventTypeWarning && e.Note == want {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no Warning Event %q among %d", want, len(list.Items))
	})
	if get(t, testClient, "", domain, &netv1alpha1.ClusterDomainClaim{}) {
		t.Error("a ClusterDomainClaim was created with autocreate off")
	}

	if err := testClient.Create(ctx, &netv1alpha1.ClusterDomainClaim{ObjectMeta: metav1.ObjectMeta{Name: domain},
		Spec: netv1alpha1.ClusterDomainClaimSpec{Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	waitDomainMapping(t, dm, v1beta1.DomainMappingConditionReady, corev1.ConditionTrue, "")
}

// TestDomainMappingHTTPSThroughLocalCA: with external-domain-tls Enabled, as under
// ferry up, a DomainMapping gets a Certificate of the local CA's class named after its
// domain; once the CA has issued it CertificateProvisioned is True, the URL https, and
// a request to the mapped domain through the gateway's HTTPS listener, verified
// against the local CA, reaches the Service's Revision. Plain HTTP keeps serving it
// (http-protocol enabled). Not parallel: it changes ferry-system.
func TestDomainMappingHTTPSThroughLocalCA(t *testing.T) {
	setAsideConfigMaps(t)
	applyConfigMap(t, config.NetworkConfigName, map[string]string{"external-domain-tls": "Enabled", "autocreate-cluster-domain-claims": "true"})
	caDir := t.TempDir()
	ns := testNamespace(t)
	gw := startFerryWithTLS(t, caDir, ns)
	dumpOnFailure(t, testClient, ns)
	ctx := context.Background()
	domain := ns + ".example.org"
	deleteClaimAtEnd(t, domain)

	svc := ksvc(ns, "hello", "ferry.test/hello")
	if err := testClient.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, testClient, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	dm := domainMapping(ns, domain, "hello")
	if err := testClient.Create(ctx, dm); err != nil {
		t.Fatal(err)
	}
	// Until the CA has issued, CertificateProvisioned is True HTTPDowngrade (http-protocol
	// is Enabled); a Ready Certificate makes it True without a reason.
	waitDomainMapping(t, dm, v1beta1.DomainMappingConditionCertificateProvisioned, corev1.ConditionTrue, "")
	wantURL := "https://" + domain
	if dm.Status.URL != wantURL || dm.Status.Address == nil || dm.Status.Address.URL != wantURL {
		t.Errorf("url %q, address %+v; want %s", dm.Status.URL, dm.Status.Address, wantURL)
	}
	cert := &netv1alpha1.Certificate{}
	if !get(t, testClient, ns, domain, cert) || !cert.IsReady() || len(cert.Spec.DNSNames) != 1 || cert.Spec.DNSNames[0] != domain ||
		cert.Annotations[netv1alpha1.CertificateClassAnnotationKey] != netv1alpha1.LocalCACertificateClass || !metav1.IsControlledBy(cert, dm) {
		t.Fatalf("the DomainMapping's Certificate: %+v", cert)
	}
	waitDomainMapping(t, dm, v1beta1.DomainMappingConditionReady, corev1.ConditionTrue, "")
	ing := &netv1alpha1.Ingress{}
	if !get(t, testClient, ns, domain, ing) || len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != cert.Spec.SecretName {
		t.Errorf("KIngress tls %+v, want the Certificate's Secret %s", ing.Spec.TLS, cert.Spec.SecretName)
	}

	caFile := filepath.Join(caDir, localca.CertFile)
	// The gateway loads the Secret after the KIngress names it: ask until the handshake
	// finds the certificate.
	var status int
	var body string
	eventually(t, 20*time.Second, func() (bool, string) {
		var err error
		_, status, body, err = httpsGet(t, gw, caFile, domain)
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	if status != http.StatusOK || !strings.HasPrefix(body, "Hello from revision hello-00001") {
		t.Errorf("over TLS: %d %q, want 200 from hello-00001", status, body)
	}
	if rev, why := revisionAnswering(t, gw.ExternalAddr(), domain, ""); rev != "hello-00001" {
		t.Errorf("plain HTTP with http-protocol enabled: %s answered by %q %s", domain, rev, why)
	}

	// http-protocol Redirected wakes the DomainMapping: its KIngress redirects plain
	// HTTP to the HTTPS listener.
	applyConfigMap(t, config.NetworkConfigName, map[string]string{"external-domain-tls": "Enabled", "autocreate-cluster-domain-claims": "true",
		"http-protocol": "Redirected"})
	_, port, _ := net.SplitHostPort(gw.HTTPSAddr())
	eventually(t, 20*time.Second, func() (bool, string) {
		res := plainGet(t, gw, domain+":80")
		want := "https://" + domain + ":" + port + "/"
		return res.StatusCode == http.StatusMovedPermanently && res.Header.Get("Location") == want,
			fmt.Sprintf("plain HTTP: %s Location %q, want 301 to %s", res.Status, res.Header.Get("Location"), want)
	})
}

// TestDomainMappingCertificateNotReady: with external-domain-tls Enabled and a
// certificate-class nobody serves, the DomainMapping's Certificate never becomes Ready.
// With http-protocol Redirected the DomainMapping says CertificateProvisioned Unknown
// CertificateNotReady, naming the Certificate and its class, with an https URL and one
// Warning Event, and plain HTTP still serves the domain (no redirect to a host without
// a certificate), as in Knative. Not parallel: it changes ferry-system.
func TestDomainMappingCertificateNotReady(t *testing.T) {
	setAsideConfigMaps(t)
	applyConfigMap(t, config.NetworkConfigName, map[string]string{"external-domain-tls": "Enabled", "autocreate-cluster-domain-claims": "true",
		"http-protocol": "Redirected", "certificate-class": "nobody.certificate.example.com"})
	ns := testNamespace(t)
	gw := startFerryWithTLS(t, t.TempDir(), ns)
	dumpOnFailure(t, testClient, ns)
	ctx := context.Background()
	domain := ns + ".example.org"
	deleteClaimAtEnd(t, domain)

	if err := testClient.Create(ctx, ksvc(ns, "hello", "ferry.test/hello")); err != nil {
		t.Fatal(err)
	}
	dm := domainMapping(ns, domain, "hello")
	if err := testClient.Create(ctx, dm); err != nil {
		t.Fatal(err)
	}
	waitDomainMapping(t, dm, v1beta1.DomainMappingConditionCertificateProvisioned, corev1.ConditionUnknown, v1.ReasonCertificateNotReady)
	if c := dm.Status.GetCondition(v1beta1.DomainMappingConditionCertificateProvisioned); !strings.Contains(c.Message, "Certificate "+domain+" is not ready") ||
		!strings.Contains(c.Message, "nobody.certificate.example.com") {
		t.Errorf("CertificateProvisioned message %q, want the Certificate and its class named", c.Message)
	}
	if dm.Status.URL != "https://"+domain {
		t.Errorf("url %q, want https://%s (Knative keeps https with Redirected)", dm.Status.URL, domain)
	}
	waitDomainMapping(t, dm, v1beta1.DomainMappingConditionIngressReady, corev1.ConditionTrue, "")
	ing := &netv1alpha1.Ingress{}
	if !get(t, testClient, ns, domain, ing) || len(ing.Spec.TLS) != 0 || ing.Spec.HTTPOption != netv1alpha1.HTTPOptionRedirected {
		t.Errorf("KIngress tls %+v, httpOption %q: want Redirected without tls", ing.Spec.TLS, ing.Spec.HTTPOption)
	}
	eventually(t, 20*time.Second, func() (bool, string) {
		rev, why := revisionAnswering(t, gw.ExternalAddr(), domain, "")
		return rev == "hello-00001", fmt.Sprintf("plain HTTP while the certificate is not ready: %s answered by %q %s", domain, rev, why)
	})
	eventually(t, 30*time.Second, func() (bool, string) {
		n := warningEvents(t, ns, domain, v1.ReasonCertificateNotReady)
		return n == 1, fmt.Sprintf("%d CertificateNotReady Events on the DomainMapping, want 1", n)
	})
}
