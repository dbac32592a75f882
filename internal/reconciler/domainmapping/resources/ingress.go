// Package resources builds the objects a DomainMapping owns or claims, as Knative
// builds them (knative/serving pkg/reconciler/domainmapping/resources). Every function
// is pure: the reconciler decides what to do with the result.
package resources

import (
	"fmt"
	"net/url"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/api/serving/v1beta1"
	"github.com/ferry-serving/ferry/internal/kmeta"
)

// OriginalHostHeader tells the backend which mapped domain a request came to, since
// the Host it sees is the target's cluster-local host (knative.dev/networking
// pkg/http/header OriginalHostKey).
const OriginalHostHeader = "K-Original-Host"

// IngressName is the name of the DomainMapping's KIngress: Knative's
// kmeta.ChildName of the domain with no suffix, hashed when the domain is longer
// than 63 characters.
func IngressName(dm *v1beta1.DomainMapping) string { return kmeta.ChildName(dm.Name, "") }

// Target is what the DomainMapping's reference resolved to: the Kubernetes Service
// behind it and its cluster-local host (`<service>.<namespace>.svc.cluster.local`).
type Target struct {
	ServiceName string
	Host        string
}

// MakeIngress builds the KIngress that serves the domain: one ExternalIP rule for the
// domain that rewrites the Host to the target's cluster-local host and sends
// everything to the target's Service on port 80, appending K-Original-Host. The
// gateway routes the rewritten host again, to the Route's Revisions. tls, if set,
// terminates TLS for the domain with the DomainMapping's own secret (spec.tls) or its
// Certificate's; httpOption says whether plain HTTP is served or redirected.
func MakeIngress(dm *v1beta1.DomainMapping, target Target, tls []netv1alpha1.IngressTLS, httpOption netv1alpha1.HTTPOption) *netv1alpha1.Ingress {
	class := dm.Annotations[netv1alpha1.IngressClassAnnotationKey]
	if class == "" {
		class = netv1alpha1.IngressClass
	}
	return &netv1alpha1.Ingress{
		ObjectMeta: metav1.ObjectMeta{
			Name:      IngressName(dm),
			Namespace: dm.Namespace,
			// The DomainMapping's annotations, and its ingress class or Ferry's.
			Annotations: kmeta.Union(kmeta.WithoutLastApplied(dm.Annotations), map[string]string{netv1alpha1.IngressClassAnnotationKey: class}),
			Labels: kmeta.Union(dm.Labels, map[string]string{
				v1beta1.DomainMappingUIDLabelKey:       string(dm.UID),
				v1beta1.DomainMappingNamespaceLabelKey: dm.Namespace,
			}),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(dm, v1beta1.SchemeGroupVersion.WithKind("DomainMapping"))},
		},
		Spec: netv1alpha1.IngressSpec{
			TLS:        tls,
			HTTPOption: httpOption,
			Rules: []netv1alpha1.IngressRule{{
				Hosts:      []string{dm.Name},
				Visibility: netv1alpha1.IngressVisibilityExternalIP,
				HTTP: &netv1alpha1.HTTPIngressRuleValue{Paths: []netv1alpha1.HTTPIngressPath{{
					RewriteHost: target.Host,
					Splits: []netv1alpha1.IngressBackendSplit{{
						IngressBackend: netv1alpha1.IngressBackend{
							ServiceNamespace: dm.Namespace,
							ServiceName:      target.ServiceName,
							ServicePort:      intstr.FromInt32(netv1alpha1.ServiceHTTPPort),
						},
						Percent:       100,
						AppendHeaders: map[string]string{OriginalHostHeader: dm.Name},
					}},
				}}},
			}},
		},
	}
}

// MakeTLS is the KIngress TLS of a DomainMapping that brings its own secret, in its
// namespace; nil without spec.tls.
func MakeTLS(dm *v1beta1.DomainMapping) []netv1alpha1.IngressTLS {
	if dm.Spec.TLS == nil {
		return nil
	}
	return []netv1alpha1.IngressTLS{{Hosts: []string{dm.Name}, SecretName: dm.Spec.TLS.SecretName, SecretNamespace: dm.Namespace}}
}

// MakeDomainClaim is the ClusterDomainClaim that gives the DomainMapping's namespace
// its domain. It has no owner: a cluster-scoped object cannot be owned by a
// namespaced one.
func MakeDomainClaim(dm *v1beta1.DomainMapping) *netv1alpha1.ClusterDomainClaim {
	return &netv1alpha1.ClusterDomainClaim{
		ObjectMeta: metav1.ObjectMeta{Name: dm.Name},
		Spec:       netv1alpha1.ClusterDomainClaimSpec{Namespace: dm.Namespace},
	}
}

// ParseTarget checks that the resolved URL of a DomainMapping's reference is served
// by a Kubernetes Service in the DomainMapping's namespace, as a KIngress needs it:
// no path, a host `{name}.{namespace}.svc.{cluster domain}`. Its errors are Knative's
// ReferenceResolved messages.
func ParseTarget(resolved, namespace, clusterDomain string) (Target, error) {
	u, err := url.Parse(resolved)
	if err != nil {
		return Target{}, fmt.Errorf("resolved URI %q: %w", resolved, err)
	}
	if strings.TrimSuffix(u.Path, "/") != "" {
		return Target{}, fmt.Errorf("resolved URI %q contains a path", resolved)
	}
	suffix := ".svc." + clusterDomain
	parts := strings.Split(strings.TrimSuffix(u.Host, suffix), ".")
	if !strings.HasSuffix(u.Host, suffix) || len(parts) != 2 {
		return Target{}, fmt.Errorf("resolved URI %q must be of the form {name}.{namespace}%s", resolved, suffix)
	}
	if parts[1] != namespace {
		return Target{}, fmt.Errorf("resolved URI %q must be in same namespace as DomainMapping", resolved)
	}
	return Target{ServiceName: parts[0], Host: u.Host}, nil
}
