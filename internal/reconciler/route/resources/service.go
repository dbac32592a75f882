package resources

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// MakePlaceholderService builds the placeholder Service name of the Route: the one
// named after the Route, or one per traffic tag named by tag-template
// (Hosts.ServiceName, <tag>-<route> by default), as Knative's
// MakeK8sPlaceholderService does. It is an ExternalName Service pointing at the
// gateway's in-cluster address: it reserves <name>.<ns>.svc.cluster.local in cluster
// DNS and sends clients to the gateway, which routes by Host. ExternalName needs no
// Endpoints, so the Route writes it once and never again, whatever the traffic does.
//
// The visibility label is not among its labels: it is the user's, to make that name
// cluster-local (ClusterLocalTags), and updates keep it.
func MakePlaceholderService(r *v1.Route, name, gatewayHost string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
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

// ClusterLocalTags are the tags ("" for the Route itself) whose placeholder Service
// (services, by tag; nil for one the Route does not have) carries the visibility label,
// as Knative's visibility resolver reads them: any value of
// networking.knative.dev/visibility on a placeholder Service makes its name
// cluster-local (labels.IsObjectLocalVisibility), where on the Route only
// cluster-local does.
func ClusterLocalTags(services map[string]*corev1.Service) map[string]bool {
	local := map[string]bool{}
	for tag, s := range services {
		if s != nil && s.Labels[v1.VisibilityLabelKey] != "" {
			local[tag] = true
		}
	}
	return local
}
