package domainmapping_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/api/serving/v1beta1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/reconciler/domainmapping"
	"github.com/ferry-serving/ferry/internal/reconciler/domainmapping/resources"
	rt "github.com/ferry-serving/ferry/internal/reconciler/kit/reconcilertest"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/refusal"
)

const (
	ns     = "ns"
	domain = "www.example.org"
)

var key = rt.Key(ns, domain)

func mapping(opts ...func(*v1beta1.DomainMapping)) *v1beta1.DomainMapping {
	dm := &v1beta1.DomainMapping{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: domain, UID: "dm-uid", Generation: 1},
		Spec: v1beta1.DomainMappingSpec{Ref: v1beta1.KReference{APIVersion: "serving.knative.dev/v1", Kind: "Service", Name: "hello"}}}
	for _, o := range opts {
		o(dm)
	}
	return dm
}

// ksvc is the Knative Service hello, addressable at its cluster-local host unless
// address is "".
func ksvc(address string) *v1.Service {
	s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello", UID: "svc-uid", Generation: 1}}
	if address != "" {
		s.Status.Address = &duck.Addressable{URL: address}
	}
	return s
}

func claim(namespace string) *netv1alpha1.ClusterDomainClaim {
	return &netv1alpha1.ClusterDomainClaim{ObjectMeta: metav1.ObjectMeta{Name: domain}, Spec: netv1alpha1.ClusterDomainClaimSpec{Namespace: namespace}}
}

var target = resources.Target{ServiceName: "hello", Host: "hello.ns.svc.cluster.local"}

func ingress(ready *duck.Condition) *netv1alpha1.Ingress {
	dm := mapping()
	dm.SetDefaults()
	ing := resources.MakeIngress(dm, target, nil, netv1alpha1.HTTPOptionEnabled)
	ing.UID, ing.Generation = "ing-uid", 1
	if ready != nil {
		ing.Status.ObservedGeneration = 1
		ing.Status.Conditions = []duck.Condition{*ready}
	}
	return ing
}

var (
	ready       = rt.True(duck.ConditionReady)
	claimed     = rt.True(v1beta1.DomainMappingConditionDomainClaimed)
	resolved    = rt.True(v1beta1.DomainMappingConditionReferenceResolved)
	ingressOK   = rt.True(v1beta1.DomainMappingConditionIngressReady)
	noTLS       = rt.Cond(v1beta1.DomainMappingConditionCertificateProvisioned, corev1.ConditionTrue, v1.ReasonTLSNotEnabled, v1.MessageTLSNotEnabled)
	notConfigd  = rt.Unknown(v1beta1.DomainMappingConditionIngressReady, v1.ReasonIngressNotConfigured, v1.MessageIngressNotConfigured)
	certUnknown = rt.Unknown(v1beta1.DomainMappingConditionCertificateProvisioned, "", "")
	refUnknown  = rt.Unknown(v1beta1.DomainMappingConditionReferenceResolved, "", "")
	inUse       = v1beta1.MessageDomainAlreadyClaimed
	taken       = rt.False(v1beta1.DomainMappingConditionDomainClaimed, v1beta1.ReasonDomainAlreadyClaimed, inUse)
	takenReady  = rt.False(duck.ConditionReady, v1beta1.ReasonDomainAlreadyClaimed, inUse)
)

// now is the reconciler's clock in the table.
var now = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// certificate is the DomainMapping's Certificate of the local CA's class, created 2 s
// ago, its Ready as given (nil: no provider has looked at it).
func certificate(ready *duck.Condition) *netv1alpha1.Certificate {
	dm := mapping()
	cert := resources.MakeCertificate(dm, netv1alpha1.LocalCACertificateClass)
	cert.UID, cert.Generation = "cert-uid", 1
	cert.CreationTimestamp = metav1.NewTime(now.Add(-2 * time.Second))
	if ready != nil {
		cert.Status.ObservedGeneration = 1
		cert.Status.Conditions = []duck.Condition{*ready}
	}
	return cert
}

func wantStatus(url string, conds ...duck.Condition) func(*testing.T, *rt.Env) {
	return func(t *testing.T, env *rt.Env) {
		t.Helper()
		o := env.Written(rt.Status, "DomainMapping", domain)
		if o == nil {
			t.Fatal("no status written")
		}
		dm := o.(*v1beta1.DomainMapping)
		if dm.Status.ObservedGeneration != dm.Generation {
			t.Errorf("observedGeneration %d, generation %d", dm.Status.ObservedGeneration, dm.Generation)
		}
		if dm.Status.URL != url || dm.Status.Address == nil || dm.Status.Address.URL != url {
			t.Errorf("url %q, address %+v, want %s", dm.Status.URL, dm.Status.Address, url)
		}
		rt.CheckConditions(t, "DomainMapping", dm.Status.Conditions, conds...)
	}
}

func TestReconcileTable(t *testing.T) {
	autocreate := true
	var network func(*config.Network)
	build := func(env *rt.Env) reconcile.Reconciler {
		b := env.Base()
		b.Clock = rt.Clock(func() time.Time { return now })
		b.Config = func() *config.Config {
			cfg := config.Default()
			cfg.Network.AutocreateClusterDomainClaims = autocreate
			if network != nil {
				network(cfg.Network)
			}
			return cfg
		}
		return &domainmapping.Reconciler{Base: b, Recorder: env.Events, DefaultCertificateClass: netv1alpha1.LocalCACertificateClass}
	}
	// tlsOn turns external-domain-tls on for a case, with http-protocol as given.
	tlsOn := func(httpProtocol string) func(*testing.T, *rt.Env) {
		return func(t *testing.T, _ *rt.Env) {
			network = func(n *config.Network) { n.ExternalDomainTLS, n.HTTPProtocol = true, httpProtocol }
			t.Cleanup(func() { network = nil })
		}
	}
	certProvisioned := func(status corev1.ConditionStatus, reason, message string) duck.Condition {
		return rt.Cond(v1beta1.DomainMappingConditionCertificateProvisioned, status, reason, message)
	}
	notConfigdReady := rt.Unknown(duck.ConditionReady, v1.ReasonIngressNotConfigured, v1.MessageIngressNotConfigured)
	pending := `Certificate www.example.org is not ready: no provider of class "ferry.local-ca" has reported on it`
	addressed := ksvc("http://hello.ns.svc.cluster.local")
	rt.Run(t, []rt.Case{{
		Name: "the DomainMapping is gone: nothing is written",
		Key:  key,
	}, {
		Name:       "the DomainMapping is gone: its namespace's claim is released",
		Key:        key,
		Objects:    []client.Object{claim(ns)},
		WantWrites: []string{"delete ClusterDomainClaim /" + domain},
	}, {
		Name:    "the DomainMapping is gone: another namespace's claim is kept",
		Key:     key,
		Objects: []client.Object{claim("theirs")},
	}, {
		Name:    "the DomainMapping is gone, autocreate off: the claim is the administrator's",
		Key:     key,
		Objects: []client.Object{claim(ns)},
		Before: func(t *testing.T, _ *rt.Env) {
			autocreate = false
			t.Cleanup(func() { autocreate = true })
		},
	}, {
		Name:       "first reconcile: the domain is claimed, the KIngress created",
		Key:        key,
		Objects:    []client.Object{mapping(), addressed},
		WantWrites: []string{"create ClusterDomainClaim /" + domain, "create Ingress ns/" + domain, "status DomainMapping ns/" + domain},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus("http://"+domain, rt.Unknown(duck.ConditionReady, v1.ReasonIngressNotConfigured, v1.MessageIngressNotConfigured),
				claimed, resolved, notConfigd, noTLS)(t, env)
			c := env.Written(rt.Create, "ClusterDomainClaim", domain).(*netv1alpha1.ClusterDomainClaim)
			if c.Spec.Namespace != ns {
				t.Errorf("claim for namespace %q", c.Spec.Namespace)
			}
			ing, want := env.Written(rt.Create, "Ingress", domain).(*netv1alpha1.Ingress), ingress(nil)
			if !equality.Semantic.DeepEqual(ing.Spec, want.Spec) || !equality.Semantic.DeepEqual(ing.Labels, want.Labels) {
				t.Errorf("created KIngress\n got %+v\nwant %+v", ing, want)
			}
		},
	}, {
		Name:       "the KIngress is Ready: so is the DomainMapping",
		Key:        key,
		Objects:    []client.Object{mapping(), addressed, claim(ns), ingress(&duck.Condition{Type: duck.ConditionReady, Status: corev1.ConditionTrue})},
		WantWrites: []string{"status DomainMapping ns/" + domain},
		Check:      wantStatus("http://"+domain, ready, claimed, resolved, ingressOK, noTLS),
	}, {
		Name:       "another namespace holds the domain: DomainAlreadyClaimed, no KIngress",
		Key:        key,
		Objects:    []client.Object{mapping(), addressed, claim("theirs")},
		WantWrites: []string{"status DomainMapping ns/" + domain},
		WantEvents: []string{
			`Warning InternalError www.example.org: namespace "ns" does not own ClusterDomainClaim for "www.example.org"`,
			"Warning DomainAlreadyClaimed www.example.org: " + inUse,
		},
		Check: wantStatus("http://"+domain, takenReady, taken, refUnknown, notConfigd, certUnknown),
	}, {
		Name:    "no claim and autocreate off: Knative's refusal, no claim created",
		Key:     key,
		Objects: []client.Object{mapping(), addressed},
		Before: func(t *testing.T, _ *rt.Env) {
			autocreate = false
			t.Cleanup(func() { autocreate = true })
		},
		WantWrites: []string{"status DomainMapping ns/" + domain},
		WantEvents: []string{
			`Warning InternalError www.example.org: no ClusterDomainClaim found for domain "www.example.org" (and autocreate-cluster-domain-claims property is not true)`,
			"Warning DomainAlreadyClaimed www.example.org: " + inUse,
		},
		Check: wantStatus("http://"+domain, takenReady, taken, refUnknown, notConfigd, certUnknown),
	}, {
		Name:       "the referenced Service does not exist: ResolveFailed",
		Key:        key,
		Objects:    []client.Object{mapping(), claim(ns)},
		WantWrites: []string{"status DomainMapping ns/" + domain},
		WantEvents: []string{`Warning ResolveFailed www.example.org: failed to get object ns/hello: services.serving.knative.dev "hello" not found`},
		Check: wantStatus("http://"+domain, rt.False(duck.ConditionReady, v1beta1.ReasonResolveFailed, `failed to get object ns/hello: services.serving.knative.dev "hello" not found`),
			claimed, rt.False(v1beta1.DomainMappingConditionReferenceResolved, v1beta1.ReasonResolveFailed, `failed to get object ns/hello: services.serving.knative.dev "hello" not found`), notConfigd, noTLS),
	}, {
		Name:       "the Service has no address yet: ResolveFailed",
		Key:        key,
		Objects:    []client.Object{mapping(), claim(ns), ksvc("")},
		WantWrites: []string{"status DomainMapping ns/" + domain},
		WantEvents: []string{"Warning ResolveFailed www.example.org: address not set for serving.knative.dev/v1 Service ns/hello"},
	}, {
		Name: "a Kubernetes Service: its cluster-local host, TLS from the user's secret",
		Key:  key,
		Objects: []client.Object{mapping(func(dm *v1beta1.DomainMapping) {
			dm.Spec.Ref = v1beta1.KReference{APIVersion: "v1", Kind: "Service", Name: "plain"}
			dm.Spec.TLS = &v1beta1.SecretTLS{SecretName: "cert"}
		}), claim(ns), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"}}},
		WantWrites: []string{"create Ingress ns/" + domain, "status DomainMapping ns/" + domain},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus("https://"+domain, rt.Unknown(duck.ConditionReady, v1.ReasonIngressNotConfigured, v1.MessageIngressNotConfigured), claimed, resolved, notConfigd,
				rt.Cond(v1beta1.DomainMappingConditionCertificateProvisioned, corev1.ConditionTrue, v1beta1.ReasonCertificateExternallyProvided, v1beta1.MessageCertificateExternallyProvided))(t, env)
			ing := env.Written(rt.Create, "Ingress", domain).(*netv1alpha1.Ingress)
			if p := ing.Spec.Rules[0].HTTP.Paths[0]; p.RewriteHost != "plain.ns.svc.cluster.local" || p.Splits[0].ServiceName != "plain" {
				t.Errorf("path %+v", p)
			}
			if len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != "cert" {
				t.Errorf("tls %+v", ing.Spec.TLS)
			}
		},
	}, {
		Name:       "external-domain-tls on: the Certificate is made; pending, the URL is https and the KIngress serves HTTP, redirected",
		Key:        key,
		Objects:    []client.Object{mapping(), addressed, claim(ns)},
		Before:     tlsOn(config.HTTPRedirected),
		WantWrites: []string{"create Certificate ns/" + domain, "create Ingress ns/" + domain, "status DomainMapping ns/" + domain},
		// No Event yet: a working provider issues within the grace; look again then.
		WantResult: reconcile.Result{RequeueAfter: 10 * time.Second},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus("https://"+domain, notConfigdReady, claimed, resolved, notConfigd,
				certProvisioned(corev1.ConditionUnknown, v1.ReasonCertificateNotReady, pending))(t, env)
			cert, want := env.Written(rt.Create, "Certificate", domain).(*netv1alpha1.Certificate), certificate(nil)
			if !equality.Semantic.DeepEqual(cert.Spec, want.Spec) || !equality.Semantic.DeepEqual(cert.Labels, want.Labels) ||
				!equality.Semantic.DeepEqual(cert.Annotations, want.Annotations) || !metav1.IsControlledBy(cert, mapping()) {
				t.Errorf("created Certificate\n got %+v\nwant %+v", cert, want)
			}
			ing := env.Written(rt.Create, "Ingress", domain).(*netv1alpha1.Ingress)
			if ing.Spec.TLS != nil || ing.Spec.HTTPOption != netv1alpha1.HTTPOptionRedirected {
				t.Errorf("KIngress tls %+v, httpOption %q", ing.Spec.TLS, ing.Spec.HTTPOption)
			}
		},
	}, {
		Name:       "external-domain-tls on, http-protocol enabled, the Certificate pending: HTTPDowngrade, an http URL",
		Key:        key,
		Objects:    []client.Object{mapping(), addressed, claim(ns), certificate(nil), ingress(&duck.Condition{Type: duck.ConditionReady, Status: corev1.ConditionTrue})},
		Before:     tlsOn(config.HTTPEnabled),
		WantWrites: []string{"status DomainMapping ns/" + domain},
		WantResult: reconcile.Result{RequeueAfter: 8 * time.Second},
		Check: wantStatus("http://"+domain, ready, claimed, resolved, ingressOK,
			certProvisioned(corev1.ConditionTrue, v1.ReasonHTTPDowngrade, "Certificate www.example.org is not ready downgrade HTTP.")),
	}, {
		Name: "the Certificate pending past the grace: one Warning Event, however often reconciled",
		Key:  key,
		Objects: []client.Object{mapping(), addressed, claim(ns), ingress(&duck.Condition{Type: duck.ConditionReady, Status: corev1.ConditionTrue}),
			func() client.Object {
				c := certificate(nil)
				c.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
				return c
			}()},
		Before:     tlsOn(config.HTTPRedirected),
		WantWrites: []string{"update Ingress ns/" + domain, "status DomainMapping ns/" + domain},
		WantEvents: []string{"Warning CertificateNotReady www.example.org: " + pending},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus("https://"+domain, notConfigdReady, claimed, resolved, notConfigd, certProvisioned(corev1.ConditionUnknown, v1.ReasonCertificateNotReady, pending))(t, env)
			if _, err := env.Reconcile(); err != nil {
				t.Fatal(err)
			}
			if n := len(env.Events.List()); n != 1 {
				t.Errorf("%d Events after reconciling again, want 1: %v", n, env.Events.List())
			}
		},
	}, {
		Name:       "the Certificate is Ready: its Secret goes on the KIngress, the URL is https",
		Key:        key,
		Objects:    []client.Object{mapping(), addressed, claim(ns), certificate(&duck.Condition{Type: netv1alpha1.CertificateConditionReady, Status: corev1.ConditionTrue}), ingress(&duck.Condition{Type: duck.ConditionReady, Status: corev1.ConditionTrue})},
		Before:     tlsOn(config.HTTPEnabled),
		WantWrites: []string{"update Ingress ns/" + domain, "status DomainMapping ns/" + domain},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus("https://"+domain, notConfigdReady, claimed, resolved, notConfigd, certProvisioned(corev1.ConditionTrue, "", ""))(t, env)
			ing := env.Written(rt.Update, "Ingress", domain).(*netv1alpha1.Ingress)
			want := []netv1alpha1.IngressTLS{{Hosts: []string{domain}, SecretName: domain, SecretNamespace: ns}}
			if !equality.Semantic.DeepEqual(ing.Spec.TLS, want) || ing.Spec.HTTPOption != netv1alpha1.HTTPOptionEnabled {
				t.Errorf("KIngress tls %+v, httpOption %q", ing.Spec.TLS, ing.Spec.HTTPOption)
			}
		},
	}, {
		Name: "the Certificate failed: CertificateProvisionFailed with the provider's reason",
		Key:  key,
		Objects: []client.Object{mapping(), addressed, claim(ns), ingress(&duck.Condition{Type: duck.ConditionReady, Status: corev1.ConditionTrue}),
			certificate(&duck.Condition{Type: netv1alpha1.CertificateConditionReady, Status: corev1.ConditionFalse, Reason: "SigningFailed", Message: "no CA"})},
		Before:     tlsOn(config.HTTPRedirected),
		WantWrites: []string{"update Ingress ns/" + domain, "status DomainMapping ns/" + domain},
		WantEvents: []string{"Warning CertificateProvisionFailed www.example.org: Certificate www.example.org failed to be provisioned: SigningFailed: no CA"},
		Check: wantStatus("https://"+domain, rt.False(duck.ConditionReady, v1.ReasonCertificateProvisionFailed, "Certificate www.example.org failed to be provisioned: SigningFailed: no CA"),
			claimed, resolved, notConfigd, certProvisioned(corev1.ConditionFalse, v1.ReasonCertificateProvisionFailed, "Certificate www.example.org failed to be provisioned: SigningFailed: no CA")),
	}, {
		Name: "a Certificate of that name is not the DomainMapping's: CertificateNotOwned, plain HTTP served",
		Key:  key,
		Objects: []client.Object{mapping(), addressed, claim(ns), ingress(&duck.Condition{Type: duck.ConditionReady, Status: corev1.ConditionTrue}),
			func() client.Object { c := certificate(nil); c.OwnerReferences = nil; return c }()},
		Before:     tlsOn(config.HTTPEnabled),
		WantWrites: []string{"status DomainMapping ns/" + domain},
		WantEvents: []string{"Warning CertificateNotOwned www.example.org: There is an existing certificate www.example.org that we don't own."},
		Check: wantStatus("http://"+domain, rt.False(duck.ConditionReady, v1.ReasonCertificateNotOwned, "There is an existing certificate www.example.org that we don't own."),
			claimed, resolved, ingressOK, certProvisioned(corev1.ConditionFalse, v1.ReasonCertificateNotOwned, "There is an existing certificate www.example.org that we don't own.")),
	}, {
		Name:       "the Certificate is refused: CertificateProvisioned False with the API server's message, plain HTTP served",
		Key:        key,
		Objects:    []client.Object{mapping(), addressed, claim(ns), ingress(&duck.Condition{Type: duck.ConditionReady, Status: corev1.ConditionTrue})},
		Before:     tlsOn(config.HTTPEnabled),
		Failures:   []rt.Failure{{Verb: rt.Create, Kind: "Certificate", Err: rt.Forbidden("certificates.networking.internal.knative.dev", domain, "denied by policy")}},
		WantWrites: []string{"status DomainMapping ns/" + domain},
		WantEvents: []string{`Warning CreationFailed www.example.org: failed to create Certificate "www.example.org": certificates.networking.internal.knative.dev "www.example.org" is forbidden: denied by policy`},
		WantResult: reconcile.Result{RequeueAfter: refusal.DefaultInitial},
	}, {
		Name: "external-domain-tls on, the DomainMapping opts out: no Certificate, TLSNotEnabled",
		Key:  key,
		Objects: []client.Object{mapping(func(dm *v1beta1.DomainMapping) {
			dm.Annotations = map[string]string{"networking.knative.dev/disable-external-domain-tls": "true"}
		}), addressed, claim(ns)},
		Before:     tlsOn(config.HTTPEnabled),
		WantWrites: []string{"create Ingress ns/" + domain, "status DomainMapping ns/" + domain},
		Check:      wantStatus("http://"+domain, notConfigdReady, claimed, resolved, notConfigd, noTLS),
	}, {
		Name: "a bad http-protocol annotation: IngressReady False, the KIngress left alone",
		Key:  key,
		Objects: []client.Object{mapping(func(dm *v1beta1.DomainMapping) {
			dm.Annotations = map[string]string{"networking.knative.dev/http-protocol": "sometimes"}
		}), addressed, claim(ns)},
		WantWrites: []string{"status DomainMapping ns/" + domain},
		WantEvents: []string{`Warning InvalidHTTPProtocol www.example.org: annotation networking.knative.dev/http-protocol: "sometimes" is not enabled or redirected`},
	}, {
		Name:       "the KIngress is refused: IngressReady False with the API server's message",
		Key:        key,
		Objects:    []client.Object{mapping(), addressed, claim(ns)},
		Failures:   []rt.Failure{{Verb: rt.Create, Kind: "Ingress", Err: rt.Forbidden("ingresses.networking.internal.knative.dev", domain, "denied by policy")}},
		WantWrites: []string{"status DomainMapping ns/" + domain},
		WantEvents: []string{`Warning CreationFailed www.example.org: failed to create Ingress "www.example.org": ingresses.networking.internal.knative.dev "www.example.org" is forbidden: denied by policy`},
		WantResult: reconcile.Result{RequeueAfter: refusal.DefaultInitial},
	}}, build)
}
