package resources

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

func TestMakeCertificate(t *testing.T) {
	r := route(map[string]string{v1.ServiceLabelKey: "hello", "app": "x"})
	r.Annotations = map[string]string{"a": "b", corev1.LastAppliedConfigAnnotation: "{}", netv1alpha1.CertificateClassAnnotationAltKey: "alt"}
	hosts := DefaultHosts(r, []v1.TrafficTarget{{Tag: "canary"}})
	owner := []metav1.OwnerReference{*metav1.NewControllerRef(r, v1.SchemeGroupVersion.WithKind("Route"))}
	for _, tc := range []struct {
		tag, name, host string
	}{
		// Knative's names: route-<UID>, and for a tag route-<UID>-<adler32(tag)>.
		{"", "route-uid-1", "hello.ns.example.com"},
		{"canary", "route-uid-1-141886079", "canary-hello.ns.example.com"},
	} {
		got := MakeCertificate(r, hosts, tc.tag, "the-class")
		want := &netv1alpha1.Certificate{
			ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: "ns", OwnerReferences: owner,
				Labels: map[string]string{v1.RouteLabelKey: "hello", v1.ServiceLabelKey: "hello",
					netv1alpha1.CertificateTypeLabelKey: netv1alpha1.CertificateTypeExternalDomain},
				Annotations: map[string]string{"a": "b", netv1alpha1.CertificateClassAnnotationKey: "the-class"}},
			Spec: netv1alpha1.CertificateSpec{DNSNames: []string{tc.host}, Domain: "example.com", SecretName: tc.name},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("tag %q:\n got %+v\nwant %+v", tc.tag, got, want)
		}
	}
}

func TestCertificateClassAndOptOut(t *testing.T) {
	network := configWith(t, nil, map[string]string{"certificate-class": "configured"}).Network
	unset := configWith(t, nil, nil).Network
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		disabled    bool
		class       string
	}{
		{"nothing", nil, false, "configured"},
		{"disable-external-domain-tls", map[string]string{netv1alpha1.DisableExternalDomainTLSAnnotationKey: "true"}, true, "configured"},
		{"legacy disable-auto-tls", map[string]string{netv1alpha1.DisableAutoTLSAnnotationAltKey: "True"}, true, "configured"},
		// The first key present decides, as in Knative.
		{"disableAutoTLS first", map[string]string{netv1alpha1.DisableAutoTLSAnnotationKey: "false", netv1alpha1.DisableExternalDomainTLSAnnotationKey: "true"}, false, "configured"},
		{"not a bool: not disabled", map[string]string{netv1alpha1.DisableExternalDomainTLSAnnotationKey: "yes please"}, false, "configured"},
		{"class annotation", map[string]string{netv1alpha1.CertificateClassAnnotationKey: "mine"}, false, "mine"},
		{"class alt annotation", map[string]string{netv1alpha1.CertificateClassAnnotationAltKey: "alt"}, false, "alt"},
	} {
		r := route(nil)
		r.Annotations = tc.annotations
		if got := netv1alpha1.ExternalDomainTLSDisabled(r); got != tc.disabled {
			t.Errorf("%s: disabled %v, want %v", tc.name, got, tc.disabled)
		}
		if got := CertificateClass(r, network, "default"); got != tc.class {
			t.Errorf("%s: class %q, want %q", tc.name, got, tc.class)
		}
	}
	if got := CertificateClass(route(nil), unset, "default"); got != "default" {
		t.Errorf("no class anywhere: %q, want the default", got)
	}
}

func TestIngressTLSAndHTTPOption(t *testing.T) {
	cert := &netv1alpha1.Certificate{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "route-uid-1"},
		Spec: netv1alpha1.CertificateSpec{SecretName: "route-uid-1"}}
	want := netv1alpha1.IngressTLS{Hosts: []string{"hello.ns.example.com"}, SecretName: "route-uid-1", SecretNamespace: "ns"}
	if got := MakeIngressTLS(cert, []string{"hello.ns.example.com"}); !reflect.DeepEqual(got, want) {
		t.Errorf("MakeIngressTLS = %+v, want %+v", got, want)
	}
	for protocol, want := range map[string]netv1alpha1.HTTPOption{
		"": netv1alpha1.HTTPOptionEnabled, "Enabled": netv1alpha1.HTTPOptionEnabled,
		"REDIRECTED": netv1alpha1.HTTPOptionRedirected, "disabled": "",
	} {
		if got, err := HTTPOption(route(nil), configWith(t, nil, map[string]string{"http-protocol": protocol}).Network); got != want || err != nil {
			t.Errorf("http-protocol %q: httpOption %q %v, want %q", protocol, got, err, want)
		}
	}
	redirected := configWith(t, nil, map[string]string{"http-protocol": "redirected"}).Network
	for _, tc := range []struct {
		annotations map[string]string
		want        netv1alpha1.HTTPOption
		wantErr     string
	}{
		{map[string]string{netv1alpha1.HTTPProtocolAnnotationKey: "Enabled"}, netv1alpha1.HTTPOptionEnabled, ""},
		// httpOption is looked at first, as in Knative.
		{map[string]string{netv1alpha1.HTTPOptionAnnotationKey: "enabled", netv1alpha1.HTTPProtocolAnnotationKey: "redirected"}, netv1alpha1.HTTPOptionEnabled, ""},
		{map[string]string{netv1alpha1.HTTPProtocolAnnotationKey: "disabled"}, "", `annotation networking.knative.dev/http-protocol: "disabled" is not enabled or redirected`},
	} {
		r := route(nil)
		r.Annotations = tc.annotations
		got, err := HTTPOption(r, redirected)
		if got != tc.want || (err == nil) != (tc.wantErr == "") || err != nil && err.Error() != tc.wantErr {
			t.Errorf("%v: httpOption %q, error %v; want %q, %q", tc.annotations, got, err, tc.want, tc.wantErr)
		}
	}
}
