// Package resources builds the Configuration and Route a Service owns.
package resources

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// MakeConfiguration builds the Service's Configuration: its template, as the user
// wrote it, under the Service's name. While the Service's Route follows its latest
// Revision, the Configuration is annotated serving.knative.dev/routes with the Route's
// name, as Knative's labeler annotates it, so that its next Revision is created
// routingState active rather than labelled so by one more write (package routingstate).
func MakeConfiguration(s *v1.Service) *v1.Configuration {
	meta := childMeta(s)
	if followsLatest(s) {
		if meta.Annotations == nil {
			meta.Annotations = map[string]string{}
		}
		meta.Annotations[v1.RoutesAnnotationKey] = s.Name
	}
	return &v1.Configuration{
		ObjectMeta: meta,
		Spec:       v1.ConfigurationSpec{Template: *s.Spec.Template.DeepCopy()},
	}
}

// followsLatest reports whether a traffic target of the Service follows its latest
// Revision (the defaulted traffic of a Service that names none does).
func followsLatest(s *v1.Service) bool {
	for _, t := range s.Spec.Traffic {
		if t.RevisionName == "" {
			return true
		}
	}
	return false
}

// MakeRoute builds the Service's Route from its defaulted traffic: targets that follow
// the latest Revision name the Service's Configuration.
func MakeRoute(s *v1.Service) *v1.Route {
	traffic := make([]v1.TrafficTarget, len(s.Spec.Traffic))
	for i, t := range s.Spec.Traffic {
		t = *t.DeepCopy()
		if t.RevisionName == "" {
			t.ConfigurationName = s.Name
		}
		traffic[i] = t
	}
	return &v1.Route{
		ObjectMeta: childMeta(s),
		Spec:       v1.RouteSpec{Traffic: traffic},
	}
}

// childMeta is the metadata of both children: the Service's labels and annotations,
// the Service labels Knative tools select by, and the Service as controller.
func childMeta(s *v1.Service) metav1.ObjectMeta {
	labels := make(map[string]string, len(s.Labels)+2)
	for k, v := range s.Labels {
		labels[k] = v
	}
	labels[v1.ServiceLabelKey] = s.Name
	labels[v1.ServiceUIDLabelKey] = string(s.UID)
	var annotations map[string]string
	for k, v := range s.Annotations {
		if k == corev1.LastAppliedConfigAnnotation {
			continue
		}
		if annotations == nil {
			annotations = make(map[string]string, len(s.Annotations))
		}
		annotations[k] = v
	}
	return metav1.ObjectMeta{
		Name:            s.Name,
		Namespace:       s.Namespace,
		Labels:          labels,
		Annotations:     annotations,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(s, v1.SchemeGroupVersion.WithKind("Service"))},
	}
}
