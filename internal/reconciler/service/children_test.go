package service

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler/service/resources"
)

func p(i int64) *int64 { return &i }

func TestMakeChildren(t *testing.T) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", UID: "svc-uid",
		Labels:      map[string]string{v1.VisibilityLabelKey: v1.VisibilityClusterLocal},
		Annotations: map[string]string{"a": "b", corev1.LastAppliedConfigAnnotation: "{}"}}}
	svc.Spec.Traffic = []v1.TrafficTarget{{Percent: p(90), Tag: "latest"}, {RevisionName: "s-00001", Percent: p(10)}}
	svc.SetDefaults(context.Background())

	rt := resources.MakeRoute(svc)
	if rt.Spec.Traffic[0].ConfigurationName != "s" || !*rt.Spec.Traffic[0].LatestRevision || rt.Spec.Traffic[0].Tag != "latest" {
		t.Errorf("latest target = %+v", rt.Spec.Traffic[0])
	}
	if rt.Spec.Traffic[1].ConfigurationName != "" || rt.Spec.Traffic[1].RevisionName != "s-00001" {
		t.Errorf("pinned target = %+v", rt.Spec.Traffic[1])
	}
	cfg := resources.MakeConfiguration(svc)
	for _, o := range []metav1.Object{rt, cfg} {
		if o.GetName() != "s" || o.GetLabels()[v1.ServiceLabelKey] != "s" || o.GetLabels()[v1.ServiceUIDLabelKey] != "svc-uid" ||
			o.GetLabels()[v1.VisibilityLabelKey] != v1.VisibilityClusterLocal || !metav1.IsControlledBy(o, svc) {
			t.Errorf("metadata = %+v", o)
		}
		if a := o.GetAnnotations(); a["a"] != "b" || a[corev1.LastAppliedConfigAnnotation] != "" {
			t.Errorf("annotations = %v", a)
		}
	}
	if svc.Spec.Traffic[0].ConfigurationName != "" {
		t.Error("MakeRoute changed the Service")
	}
}
