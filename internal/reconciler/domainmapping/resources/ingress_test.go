package resources

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/api/serving/v1beta1"
)

func mapping(name string, annotations map[string]string, tls *v1beta1.SecretTLS) *v1beta1.DomainMapping {
	return &v1beta1.DomainMapping{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: "uid-1", Labels: map[string]string{"app": "web"}, Annotations: annotations},
		Spec:       v1beta1.DomainMappingSpec{Ref: v1beta1.KReference{APIVersion: "serving.knative.dev/v1", Kind: "Service", Name: "hello", Namespace: "ns"}, TLS: tls},
	}
}

// The KIngress as Knative's resources.MakeIngress builds it for a DomainMapping of
// www.example.org to the Service hello.
func TestMakeIngress(t *testing.T) {
	dm := mapping("www.example.org", map[string]string{"team": "a", corev1.LastAppliedConfigAnnotation: "{}"}, nil)
	got := MakeIngress(dm, Target{ServiceName: "hello", Host: "hello.ns.svc.cluster.local"}, nil, netv1alpha1.HTTPOptionEnabled)
	want := netv1alpha1.IngressSpec{
		HTTPOption: netv1alpha1.HTTPOptionEnabled,
		Rules: []netv1alpha1.IngressRule{{
			Hosts:      []string{"www.example.org"},
			Visibility: netv1alpha1.IngressVisibilityExternalIP,
			HTTP: &netv1alpha1.HTTPIngressRuleValue{Paths: []netv1alpha1.HTTPIngressPath{{
				RewriteHost: "hello.ns.svc.cluster.local",
				Splits: []netv1alpha1.IngressBackendSplit{{
					IngressBackend: netv1alpha1.IngressBackend{ServiceNamespace: "ns", ServiceName: "hello", ServicePort: intstr.FromInt32(80)},
					Percent:        100,
					AppendHeaders:  map[string]string{"K-Original-Host": "www.example.org"},
				}},
			}}},
		}},
	}
	if !equality.Semantic.DeepEqual(got.Spec, want) {
		t.Errorf("spec:\n got %+v\nwant %+v", got.Spec, want)
	}
	if got.Name != "www.example.org" || got.Namespace != "ns" {
		t.Errorf("name %s/%s", got.Namespace, got.Name)
	}
	wantLabels := map[string]string{"app": "web", "serving.knative.dev/domainMappingUID": "uid-1", "serving.knative.dev/domainMappingNamespace": "ns"}
	if !equality.Semantic.DeepEqual(got.Labels, wantLabels) {
		t.Errorf("labels %v", got.Labels)
	}
	wantAnnotations := map[string]string{"team": "a", netv1alpha1.IngressClassAnnotationKey: netv1alpha1.IngressClass}
	if !equality.Semantic.DeepEqual(got.Annotations, wantAnnotations) {
		t.Errorf("annotations %v", got.Annotations)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].Kind != "DomainMapping" || got.OwnerReferences[0].Controller == nil || !*got.OwnerReferences[0].Controller {
		t.Errorf("ownerReferences %+v", got.OwnerReferences)
	}
}

func TestMakeIngressClassAndTLS(t *testing.T) {
	dm := mapping("www.example.org", map[string]string{netv1alpha1.IngressClassAnnotationKey: "kourier.ingress.networking.knative.dev"}, &v1beta1.SecretTLS{SecretName: "cert"})
	got := MakeIngress(dm, Target{ServiceName: "hello", Host: "hello.ns.svc.cluster.local"}, MakeTLS(dm), netv1alpha1.HTTPOptionEnabled)
	if c := got.Annotations[netv1alpha1.IngressClassAnnotationKey]; c != "kourier.ingress.networking.knative.dev" {
		t.Errorf("class %q: the DomainMapping's annotation picks it", c)
	}
	want := []netv1alpha1.IngressTLS{{Hosts: []string{"www.example.org"}, SecretName: "cert", SecretNamespace: "ns"}}
	if !equality.Semantic.DeepEqual(got.Spec.TLS, want) {
		t.Errorf("tls %+v", got.Spec.TLS)
	}
	if MakeTLS(mapping("a.example.org", nil, nil)) != nil {
		t.Error("TLS without spec.tls")
	}
}

// A domain longer than 63 characters gets Knative's hashed child name.
func TestIngressNameOfLongDomain(t *testing.T) {
	long := strings.Repeat("a", 60) + ".example.org"
	name := IngressName(mapping(long, nil, nil))
	if len(name) != 63 || !strings.HasPrefix(name, strings.Repeat("a", 31)) {
		t.Errorf("IngressName = %q (%d)", name, len(name))
	}
	if IngressName(mapping("www.example.org", nil, nil)) != "www.example.org" {
		t.Error("a short domain is its own KIngress's name")
	}
}

func TestMakeDomainClaim(t *testing.T) {
	c := MakeDomainClaim(mapping("www.example.org", nil, nil))
	if c.Name != "www.example.org" || c.Namespace != "" || c.Spec.Namespace != "ns" || len(c.OwnerReferences) != 0 {
		t.Errorf("claim %+v", c)
	}
}

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		url, wantService, wantErr string
	}{
		{url: "http://hello.ns.svc.cluster.local", wantService: "hello"},
		{url: "http://hello.ns.svc.cluster.local/", wantService: "hello"},
		{url: "http://hello.ns.svc.cluster.local/path", wantErr: `resolved URI "http://hello.ns.svc.cluster.local/path" contains a path`},
		{url: "http://hello.ns.example.com", wantErr: `resolved URI "http://hello.ns.example.com" must be of the form {name}.{namespace}.svc.cluster.local`},
		{url: "http://a.hello.ns.svc.cluster.local", wantErr: "must be of the form {name}.{namespace}.svc.cluster.local"},
		{url: "http://hello.other.svc.cluster.local", wantErr: `resolved URI "http://hello.other.svc.cluster.local" must be in same namespace as DomainMapping`},
	} {
		got, err := ParseTarget(tc.url, "ns", "cluster.local")
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want %q", tc.url, err, tc.wantErr)
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.url, err)
		case tc.wantErr == "" && (got.ServiceName != tc.wantService || got.Host != "hello.ns.svc.cluster.local"):
			t.Errorf("%s: %+v", tc.url, got)
		}
	}
}
