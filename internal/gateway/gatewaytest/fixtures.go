// Package gatewaytest builds the objects that the tests of the gateway's packages
// program and serve: KIngresses, Services, EndpointSlices. It is for tests only.
package gatewaytest

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
)

// Epoch is a fixed creation time; tests add seconds to order ingresses.
var Epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// NewIngress is a KIngress in namespace ns, created age seconds before Epoch.
func NewIngress(name string, age int, rules ...v1alpha1.IngressRule) *v1alpha1.Ingress {
	return &v1alpha1.Ingress{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         "ns",
			Name:              name,
			UID:               types.UID("uid-" + name),
			Generation:        1,
			CreationTimestamp: metav1.NewTime(Epoch.Add(-time.Duration(age) * time.Second)),
		},
		Spec: v1alpha1.IngressSpec{Rules: rules},
	}
}

// SimpleIngress routes every path of hosts, externally, to service.
func SimpleIngress(name string, age int, service string, hosts ...string) *v1alpha1.Ingress {
	return NewIngress(name, age, ExternalRule(hosts, Path("", SplitTo(service, 100))))
}

func ExternalRule(hosts []string, paths ...v1alpha1.HTTPIngressPath) v1alpha1.IngressRule {
	return v1alpha1.IngressRule{Hosts: hosts, Visibility: v1alpha1.IngressVisibilityExternalIP, HTTP: &v1alpha1.HTTPIngressRuleValue{Paths: paths}}
}

func LocalRule(hosts []string, paths ...v1alpha1.HTTPIngressPath) v1alpha1.IngressRule {
	r := ExternalRule(hosts, paths...)
	r.Visibility = v1alpha1.IngressVisibilityClusterLocal
	return r
}

func Path(prefix string, splits ...v1alpha1.IngressBackendSplit) v1alpha1.HTTPIngressPath {
	return v1alpha1.HTTPIngressPath{Path: prefix, Splits: splits}
}

func SplitTo(serviceName string, percent int) v1alpha1.IngressBackendSplit {
	return v1alpha1.IngressBackendSplit{
		IngressBackend: v1alpha1.IngressBackend{ServiceNamespace: "ns", ServiceName: serviceName, ServicePort: intstr.FromInt32(80)},
		Percent:        percent,
	}
}

// ServiceWithPort is a revision Service as Knative makes it: port 80 named http,
// labelled with its revision.
func ServiceWithPort(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{servingv1.RevisionLabelKey: name}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
}

// SliceFor returns an EndpointSlice of service whose port http maps to port on each
// of the given ready addresses.
func SliceFor(service string, port int32, addrs ...string) discoveryv1.EndpointSlice {
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

// NotSimulated says no node is kwok's.
func NotSimulated(string) bool { return false }

// Key names an object of namespace ns.
func Key(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

// NewScheme knows client-go's kinds and KIngresses.
func NewScheme(t *testing.T) *runtime.Scheme {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// SeededRoll is a deterministic replacement for rand.IntN.
func SeededRoll(seed uint64) func(int) int {
	return rand.New(rand.NewPCG(seed, seed)).IntN
}
