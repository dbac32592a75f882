package clusternet

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	discoveryv1ac "k8s.io/client-go/applyconfigurations/discovery/v1"
	"k8s.io/client-go/kubernetes"
)

// fieldManager owns the Services and EndpointSlices that ferry up publishes.
const fieldManager = "ferry-up"

// HostService is a Service whose endpoint is a listener of ferry up's own process on
// the host's address for pods: cluster DNS, Ferry's gateway.
type HostService struct {
	Namespace, Name string
	// ClusterIP, if valid, is the Service's; otherwise the API server picks one.
	ClusterIP netip.Addr
	Labels    map[string]string
	Ports     []HostPort
}

// HostPort is one port of a HostService: Port on the ClusterIP leads to Target on the
// host's address.
type HostPort struct {
	Name     string
	Protocol corev1.Protocol
	Port     int32
	Target   int32
}

// Publish applies s as a Service without a selector and its EndpointSlice naming the
// host's address of plan p, ready, as a cluster names a Service's endpoints outside
// its pods. kube-proxy then leads the ClusterIP there, and CoreDNS names it.
func Publish(ctx context.Context, cs kubernetes.Interface, p Plan, s HostService) error {
	svc := corev1ac.Service(s.Name, s.Namespace).WithLabels(s.Labels).WithSpec(corev1ac.ServiceSpec().WithType(corev1.ServiceTypeClusterIP))
	if s.ClusterIP.IsValid() {
		svc.Spec.WithClusterIP(s.ClusterIP.String())
	}
	slice := discoveryv1ac.EndpointSlice(s.Name+"-"+fieldManager, s.Namespace).
		WithLabels(map[string]string{discoveryv1.LabelServiceName: s.Name, discoveryv1.LabelManagedBy: fieldManager}).
		WithAddressType(discoveryv1.AddressTypeIPv4).
		WithEndpoints(discoveryv1ac.Endpoint().WithAddresses(p.HostAddr.String()).
			WithConditions(discoveryv1ac.EndpointConditions().WithReady(true).WithServing(true).WithTerminating(false)))
	for _, port := range s.Ports {
		svc.Spec.WithPorts(corev1ac.ServicePort().WithName(port.Name).WithProtocol(port.Protocol).WithPort(port.Port))
		slice.WithPorts(discoveryv1ac.EndpointPort().WithName(port.Name).WithProtocol(port.Protocol).WithPort(port.Target))
	}
	opts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	if _, err := cs.CoreV1().Services(s.Namespace).Apply(ctx, svc, opts); err != nil {
		return fmt.Errorf("Service %s/%s: %w", s.Namespace, s.Name, err)
	}
	if _, err := cs.DiscoveryV1().EndpointSlices(s.Namespace).Apply(ctx, slice, opts); err != nil {
		return fmt.Errorf("EndpointSlice of Service %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// DNSService is the kube-dns Service of kube-system, as kubeadm names it, leading to
// CoreDNS on the host.
func DNSService() HostService {
	return HostService{Namespace: metav1.NamespaceSystem, Name: "kube-dns", ClusterIP: DNSClusterIP,
		Labels: map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"},
		Ports: []HostPort{
			{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, Target: 53},
			{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, Target: 53},
		}}
}
