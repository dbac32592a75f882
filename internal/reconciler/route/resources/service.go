package resources

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// MakePlaceholderService builds the Service named after the Route. It is an
// ExternalName Service pointing at the gateway's in-cluster address, as Knative does:
// it reserves <route>.<ns>.svc.cluster.local in cluster DNS and sends clients to the
// gateway, which routes by Host. ExternalName needs no Endpoints, so the Route writes it
// once and never again, whatever the traffic does.
func MakePlaceholderService(r *v1.Route, gatewayHost string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            r.Name,
			Namespace:       r.Namespace,
			Labels:          routeLabels(r),
			OwnerReferences: []metav1.OwnerReference{ownerRef(r)},
		},
		Spec: corev1.ServiceSpec{
			Type:            corev1.ServiceTypeExternalName,
			ExternalName:    gatewayHost,
			SessionAffinity: corev1.ServiceAffinityNone,
			Ports: []corev1.ServicePort{{
				Name:       netv1alpha1.ServicePortNameHTTP1,
				Protocol:   corev1.ProtocolTCP,
				Port:       netv1alpha1.ServiceHTTPPort,
				TargetPort: intstr.FromInt32(netv1alpha1.ServiceHTTPPort),
			}},
		},
	}
}
