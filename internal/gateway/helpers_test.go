package gateway

import (
	"math/rand/v2"
	"time"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// epoch is a fixed creation time; tests add seconds to order ingresses.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func newIngress(name string, age int, rules ...v1alpha1.IngressRule) *v1alpha1.Ingress {
	return &v1alpha1.Ingress{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         "ns",
			Name:              name,
			UID:               types.UID("uid-" + name),
			Generation:        1,
			CreationTimestamp: metav1.NewTime(epoch.Add(-time.Duration(age) * time.Second)),
		},
		Spec: v1alpha1.IngressSpec{Rules: rules},
	}
}

func externalRule(hosts []string, paths ...v1alpha1.HTTPIngressPath) v1alpha1.IngressRule {
	return v1alpha1.IngressRule{Hosts: hosts, Visibility: v1alpha1.IngressVisibilityExternalIP, HTTP: &v1alpha1.HTTPIngressRuleValue{Paths: paths}}
}

func localRule(hosts []string, paths ...v1alpha1.HTTPIngressPath) v1alpha1.IngressRule {
	r := externalRule(hosts, paths...)
	r.Visibility = v1alpha1.IngressVisibilityClusterLocal
	return r
}

func path(prefix string, splits ...v1alpha1.IngressBackendSplit) v1alpha1.HTTPIngressPath {
	return v1alpha1.HTTPIngressPath{Path: prefix, Splits: splits}
}

func splitTo(serviceName string, percent int) v1alpha1.IngressBackendSplit {
	return v1alpha1.IngressBackendSplit{
		IngressBackend: v1alpha1.IngressBackend{ServiceNamespace: "ns", ServiceName: serviceName, ServicePort: intstr.FromInt32(80)},
		Percent:        percent,
	}
}

// serviceWithPort is a revision Service as Knative makes it: port 80 named http,
// labelled with its revision.
func serviceWithPort(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"serving.knative.dev/revision": name}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
}

// sliceFor returns an EndpointSlice of service whose port http maps to port on each
// of the given ready addresses.
func sliceFor(service string, port int32, addrs ...string) discoveryv1.EndpointSlice {
	s := discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: service + "-abc", Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(port)}},
	}
	for _, a := range addrs {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return s
}

func notSimulated(string) bool { return false }

func key(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

// newSeededRoll is a deterministic replacement for rand.IntN.
func newSeededRoll(seed uint64) func(int) int {
	return rand.New(rand.NewPCG(seed, seed)).IntN
}
