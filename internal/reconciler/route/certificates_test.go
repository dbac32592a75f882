package route_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	rt "github.com/ferry-serving/ferry/internal/reconciler/kit/reconcilertest"
	"github.com/ferry-serving/ferry/internal/reconciler/route"
	"github.com/ferry-serving/ferry/internal/reconciler/route/resources"
	"github.com/ferry-serving/ferry/internal/tracker"
)

const certName = "route-route-uid"

// cert is the Route's Certificate, created age ago, Ready as given (nil: no provider
// has reported).
func cert(r *v1.Route, age time.Duration, ready *duck.Condition) *netv1alpha1.Certificate {
	c := resources.MakeCertificate(r, resources.DefaultHosts(r, nil), "", "the-class")
	c.UID, c.Generation = "cert-uid", 1
	c.CreationTimestamp = metav1.NewTime(time.Now().Add(-age).Truncate(time.Second))
	if ready != nil {
		c.Status.ObservedGeneration = 1
		c.Status.Conditions = []duck.Condition{*ready}
	}
	return c
}

// wantTLS checks the written URL, the KIngress's TLS and httpOption, and
// CertificateProvisioned.
func wantTLS(url string, tls []netv1alpha1.IngressTLS, option netv1alpha1.HTTPOption, cond duck.Condition) func(*testing.T, *rt.Env) {
	return func(t *testing.T, env *rt.Env) {
		t.Helper()
		r := written(t, env)
		if r.Status.URL != url {
			t.Errorf("url %q, want %q", r.Status.URL, url)
		}
		c := r.Status.GetCondition(v1.RouteConditionCertificateProvisioned)
		rt.CheckConditions(t, "Route", []duck.Condition{*c}, cond)
		ing, _ := env.Written(rt.Update, "Ingress", "hello").(*netv1alpha1.Ingress)
		if ing == nil {
			ing, _ = env.Written(rt.Create, "Ingress", "hello").(*netv1alpha1.Ingress)
		}
		if ing == nil {
			t.Fatal("no KIngress written")
		}
		if !equality.Semantic.DeepEqual(ing.Spec.TLS, tls) || ing.Spec.HTTPOption != option {
			t.Errorf("KIngress tls %+v httpOption %q, want %+v %q", ing.Spec.TLS, ing.Spec.HTTPOption, tls, option)
		}
	}
}

// TestReconcileCertificates: external-domain-tls as Knative's Route reconciler does it.
func TestReconcileCertificates(t *testing.T) {
	network := func(data map[string]string) func() *config.Config {
		n, err := config.NewNetworkFromConfigMap(&corev1.ConfigMap{Data: data})
		if err != nil {
			t.Fatal(err)
		}
		c := config.Default()
		c.Network = n
		return func() *config.Config { return c }
	}
	var cfgFn func() *config.Config
	build := func(env *rt.Env) reconcile.Reconciler {
		b := env.Base()
		b.Config = cfgFn
		return &route.Reconciler{Base: b, Tracker: tracker.New(func(types.NamespacedName) {}, 0).SetScheme(env.Scheme),
			Recorder: env.Events, GatewayHost: gateway, DefaultCertificateClass: "the-class"}
	}
	r := rte()
	objects := func(more ...client.Object) []client.Object {
		return append([]client.Object{rte(), cfg("hello-00001", ready), rev("hello-00001", corev1.ConditionTrue), placeholder(r)}, more...)
	}
	wantSecretTLS := []netv1alpha1.IngressTLS{{Hosts: []string{"hello.ns.example.com"}, SecretName: certName, SecretNamespace: ns}}
	notReadyMsg := "Certificate " + certName + ` is not ready: no provider of class "the-class" has reported on it`
	failedMsg := "Certificate " + certName + " fails to be provisioned: IssuerMissing: no issuer"
	downgrade := rt.Cond(v1.RouteConditionCertificateProvisioned, corev1.ConditionTrue, v1.ReasonHTTPDowngrade, "Certificate "+certName+" is not ready downgrade HTTP.")
	enabled := network(map[string]string{"external-domain-tls": "Enabled"})
	badOption := `annotation networking.knative.dev/http-protocol: "sometimes" is not enabled or redirected`
	redirected := network(map[string]string{"external-domain-tls": "Enabled", "http-protocol": "Redirected"})
	for _, tc := range []struct {
		cfg func() *config.Config
		rt.Case
	}{{enabled, rt.Case{
		Name:       "TLS on, first reconcile: the Certificate is made; not Ready yet, so http-protocol enabled downgrades to http",
		Key:        key,
		Objects:    objects(),
		WantWrites: []string{"create Certificate ns/" + certName, "create Ingress ns/hello", "status Route ns/hello"},
		// Not warned yet: a working provider issues within the grace; look again then.
		WantResult: reconcile.Result{RequeueAfter: 10 * time.Second},
		Check: func(t *testing.T, env *rt.Env) {
			wantTLS("http://hello.ns.example.com", nil, netv1alpha1.HTTPOptionEnabled, downgrade)(t, env)
			c := env.Written(rt.Create, "Certificate", certName).(*netv1alpha1.Certificate)
			if want := cert(r, 0, nil); !equality.Semantic.DeepEqual(c.Spec, want.Spec) || !equality.Semantic.DeepEqual(c.Labels, want.Labels) ||
				c.Annotations[netv1alpha1.CertificateClassAnnotationKey] != "the-class" || !metav1.IsControlledBy(c, r) {
				t.Errorf("created Certificate %+v", c)
			}
		},
	}}, {enabled, rt.Case{
		Name:       "the Certificate is Ready: https URL, the KIngress serves its Secret",
		Key:        key,
		Objects:    objects(cert(r, time.Minute, ingReady)),
		WantWrites: []string{"create Ingress ns/hello", "status Route ns/hello"},
		Check:      wantTLS("https://hello.ns.example.com", wantSecretTLS, netv1alpha1.HTTPOptionEnabled, rt.True(v1.RouteConditionCertificateProvisioned)),
	}}, {redirected, rt.Case{
		Name:       "Redirected: httpOption Redirected, https URL",
		Key:        key,
		Objects:    objects(cert(r, time.Minute, ingReady)),
		WantWrites: []string{"create Ingress ns/hello", "status Route ns/hello"},
		Check:      wantTLS("https://hello.ns.example.com", wantSecretTLS, netv1alpha1.HTTPOptionRedirected, rt.True(v1.RouteConditionCertificateProvisioned)),
	}}, {redirected, rt.Case{
		Name:       "Redirected, pending past the grace: Unknown CertificateNotReady, URL https, no TLS yet, one Event",
		Key:        key,
		Objects:    objects(cert(r, time.Minute, nil)),
		WantWrites: []string{"create Ingress ns/hello", "status Route ns/hello"},
		WantEvents: []string{"Warning CertificateNotReady hello: " + notReadyMsg},
		Check: wantTLS("https://hello.ns.example.com", nil, netv1alpha1.HTTPOptionRedirected,
			rt.Unknown(v1.RouteConditionCertificateProvisioned, v1.ReasonCertificateNotReady, notReadyMsg)),
	}}, {redirected, rt.Case{
		Name: "Redirected, the Certificate failed: False CertificateProvisionFailed, the status writer's Event",
		Key:  key,
		Objects: objects(cert(r, time.Minute, &duck.Condition{Type: duck.ConditionReady, Status: corev1.ConditionFalse,
			Reason: "IssuerMissing", Message: "no issuer"})),
		WantWrites: []string{"create Ingress ns/hello", "status Route ns/hello"},
		WantEvents: []string{"Warning CertificateProvisionFailed hello: " + failedMsg},
		Check: wantTLS("https://hello.ns.example.com", nil, netv1alpha1.HTTPOptionRedirected,
			rt.False(v1.RouteConditionCertificateProvisioned, v1.ReasonCertificateProvisionFailed, failedMsg)),
	}}, {enabled, rt.Case{
		Name:       "the Certificate's name is taken: CertificateNotOwned",
		Key:        key,
		Objects:    objects(notOwned(cert(r, time.Minute, ingReady))),
		WantWrites: []string{"create Ingress ns/hello", "status Route ns/hello"},
		WantEvents: []string{"Warning CertificateNotOwned hello: There is an existing certificate " + certName + " that we don't own."},
		Check: wantTLS("http://hello.ns.example.com", nil, netv1alpha1.HTTPOptionEnabled,
			rt.False(v1.RouteConditionCertificateProvisioned, v1.ReasonCertificateNotOwned, "There is an existing certificate "+certName+" that we don't own.")),
	}}, {enabled, rt.Case{
		Name: "a tag's Certificate whose tag is gone is deleted; another owner's is left alone",
		Key:  key,
		Objects: objects(cert(r, time.Minute, ingReady), func() client.Object {
			c := cert(r, time.Minute, ingReady)
			c.Name, c.UID = certName+"-141886079", "old-tag-uid"
			return c
		}(), func() client.Object {
			c := notOwned(cert(r, time.Minute, ingReady)).(*netv1alpha1.Certificate)
			c.Name, c.UID = certName+"-1", "foreign-uid"
			return c
		}()),
		WantWrites: []string{"delete Certificate ns/" + certName + "-141886079", "create Ingress ns/hello", "status Route ns/hello"},
		Check:      wantTLS("https://hello.ns.example.com", wantSecretTLS, netv1alpha1.HTTPOptionEnabled, rt.True(v1.RouteConditionCertificateProvisioned)),
	}}, {enabled, rt.Case{
		Name: "a tag made cluster-local by its placeholder Service: its Certificate is deleted, its URL http in-cluster",
		Key:  key,
		Objects: func() []client.Object {
			tagged := rte(traffic(v1.TrafficTarget{ConfigurationName: "hello", Percent: ptr(int64(100))},
				v1.TrafficTarget{Tag: "canary", RevisionName: "hello-00001", Percent: ptr(int64(0))}))
			c := resources.MakeCertificate(tagged, resources.DefaultHosts(tagged, tagged.Spec.Traffic), "canary", "the-class")
			c.UID = "canary-cert-uid"
			return []client.Object{tagged, cfg("hello-00001", ready), rev("hello-00001", corev1.ConditionTrue), placeholder(r),
				privately(tagPlaceholder(r, "canary")), cert(r, time.Minute, ingReady), c}
		}(),
		WantWrites: []string{"create Ingress ns/hello", "delete Certificate ns/" + resources.CertificateName(r, "canary"), "status Route ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			wantTLS("https://hello.ns.example.com", wantSecretTLS, netv1alpha1.HTTPOptionEnabled, rt.True(v1.RouteConditionCertificateProvisioned))(t, env)
			if tr := written(t, env).Status.Traffic; len(tr) != 2 || tr[1].URL != "http://canary-hello.ns.svc.cluster.local" {
				t.Errorf("status.traffic %+v, want canary's URL in-cluster", tr)
			}
		},
	}}, {enabled, rt.Case{
		Name: "every name cluster-local by its placeholder Service: no Certificate, TLSNotEnabled",
		Key:  key,
		Objects: []client.Object{rte(), cfg("hello-00001", ready), rev("hello-00001", corev1.ConditionTrue), privately(placeholder(r)),
			cert(r, time.Minute, ingReady)},
		WantWrites: []string{"create Ingress ns/hello", "status Route ns/hello"},
		Check:      wantTLS("http://hello.ns.svc.cluster.local", nil, netv1alpha1.HTTPOptionEnabled, noTLS),
	}}, {enabled, rt.Case{
		Name: "an http-protocol annotation that is neither enabled nor redirected: IngressReady False, nothing made",
		Key:  key,
		Objects: []client.Object{rte(func(r *v1.Route) {
			r.Annotations = map[string]string{netv1alpha1.HTTPProtocolAnnotationKey: "sometimes"}
		}), cfg("hello-00001", ready), rev("hello-00001", corev1.ConditionTrue), placeholder(r)},
		WantWrites: []string{"status Route ns/hello"},
		WantEvents: []string{"Warning InvalidHTTPProtocol hello: " + badOption},
		Check: func(t *testing.T, env *rt.Env) {
			c := written(t, env).Status.GetCondition(v1.RouteConditionIngressReady)
			rt.CheckConditions(t, "Route", []duck.Condition{*c}, rt.False(v1.RouteConditionIngressReady, v1.ReasonInvalidHTTPProtocol, badOption))
		},
	}}, {enabled, rt.Case{
		Name: "opted out by Knative's annotation: no Certificate, TLSNotEnabled",
		Key:  key,
		Objects: []client.Object{rte(func(r *v1.Route) {
			r.Annotations = map[string]string{netv1alpha1.DisableExternalDomainTLSAnnotationKey: "true"}
		}), cfg("hello-00001", ready), rev("hello-00001", corev1.ConditionTrue), placeholder(r)},
		WantWrites: []string{"create Ingress ns/hello", "status Route ns/hello"},
		Check:      wantTLS("http://hello.ns.example.com", nil, netv1alpha1.HTTPOptionEnabled, noTLS),
	}}} {
		cfgFn = tc.cfg
		rt.Run(t, []rt.Case{tc.Case}, build)
	}
}
