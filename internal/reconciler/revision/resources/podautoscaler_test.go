package resources

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
)

func paRevision(labels, annotations map[string]string, cc *int64, containers ...corev1.Container) *v1.Revision {
	if len(containers) == 0 {
		containers = []corev1.Container{{Image: "img"}}
	}
	l := map[string]string{v1.ConfigurationLabelKey: "hello"}
	maps.Copy(l, labels)
	return &v1.Revision{
		ObjectMeta: metav1.ObjectMeta{Name: "hello-00001", Namespace: "ns", UID: "uid-1", Labels: l, Annotations: annotations},
		Spec:       v1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: containers}, ContainerConcurrency: cc},
	}
}

func TestMakePodAutoscaler(t *testing.T) {
	ten := int64(10)
	rev := paRevision(
		map[string]string{v1.RoutingStateLabelKey: "active", v1.RouteLabelKey: "hello", "team": "a"},
		map[string]string{"autoscaling.knative.dev/min-scale": "1", corev1.LastAppliedConfigAnnotation: "{}",
			v1.RoutesAnnotationKey: "hello", v1.RoutingStateModifiedAnnotation: "2026-01-01T00:00:00Z", "note": "x"},
		&ten)
	before := rev.DeepCopy()
	pa := MakePodAutoscaler(rev, config.DefaultAutoscaler())

	if pa.Name != "hello-00001" || pa.Namespace != "ns" || !metav1.IsControlledBy(pa, rev) {
		t.Errorf("metadata = %+v", pa.ObjectMeta)
	}
	if ref := pa.OwnerReferences[0]; ref.Kind != "Revision" || ref.APIVersion != "serving.knative.dev/v1" || ref.Name != rev.Name {
		t.Errorf("owner = %+v", ref)
	}
	wantLabels := map[string]string{v1.ConfigurationLabelKey: "hello", "team": "a", v1.RevisionLabelKey: "hello-00001", v1.RevisionUIDLabelKey: "uid-1"}
	if !maps.Equal(pa.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", pa.Labels, wantLabels)
	}
	wantAnns := map[string]string{"autoscaling.knative.dev/min-scale": "1", "note": "x", av1alpha1.ClassAnnotationKey: av1alpha1.KPA}
	if !maps.Equal(pa.Annotations, wantAnns) {
		t.Errorf("annotations = %v, want %v", pa.Annotations, wantAnns)
	}
	wantRef := corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "hello-00001-deployment"}
	if pa.Spec.ScaleTargetRef != wantRef || pa.Spec.ContainerConcurrency != 10 ||
		pa.Spec.Reachability != av1alpha1.ReachabilityReachable || pa.Spec.ProtocolType != "http1" {
		t.Errorf("spec = %+v", pa.Spec)
	}
	pa.Labels["x"], pa.Annotations["x"] = "y", "y"
	if !maps.Equal(rev.Labels, before.Labels) || !maps.Equal(rev.Annotations, before.Annotations) {
		t.Error("MakePodAutoscaler shares or changed the Revision's maps")
	}
}

func TestMakePodAutoscalerVariants(t *testing.T) {
	hpa := config.DefaultAutoscaler()
	hpa.PodAutoscalerClass = av1alpha1.HPA
	tests := []struct {
		name  string
		rev   *v1.Revision
		cfg   *config.Autoscaler
		check func(*av1alpha1.PodAutoscaler) bool
	}{
		{"no annotations: the default class", paRevision(nil, nil, nil), nil, func(pa *av1alpha1.PodAutoscaler) bool {
			return maps.Equal(pa.Annotations, map[string]string{av1alpha1.ClassAnnotationKey: av1alpha1.KPA})
		}},
		{"the cluster's class", paRevision(nil, nil, nil), hpa, func(pa *av1alpha1.PodAutoscaler) bool {
			return pa.Annotations[av1alpha1.ClassAnnotationKey] == av1alpha1.HPA && pa.Class() == av1alpha1.HPA
		}},
		{"the Revision's class wins", paRevision(nil, map[string]string{av1alpha1.ClassAnnotationKey: "custom.example.com"}, nil), hpa,
			func(pa *av1alpha1.PodAutoscaler) bool { return pa.Class() == "custom.example.com" }},
		{"no containerConcurrency is 0", paRevision(nil, nil, nil), nil,
			func(pa *av1alpha1.PodAutoscaler) bool { return pa.Spec.ContainerConcurrency == 0 }},
		{"reserve is Unreachable", paRevision(map[string]string{v1.RoutingStateLabelKey: "reserve"}, nil, nil), nil,
			func(pa *av1alpha1.PodAutoscaler) bool {
				return pa.Spec.Reachability == av1alpha1.ReachabilityUnreachable
			}},
		{"pending is unknown", paRevision(map[string]string{v1.RoutingStateLabelKey: "pending"}, nil, nil), nil,
			func(pa *av1alpha1.PodAutoscaler) bool { return pa.Spec.Reachability == av1alpha1.ReachabilityUnknown }},
		{"no routing state is unknown", paRevision(nil, nil, nil), nil,
			func(pa *av1alpha1.PodAutoscaler) bool { return pa.Spec.Reachability == av1alpha1.ReachabilityUnknown }},
		{"h2c port", paRevision(nil, nil, nil, corev1.Container{Image: "img", Ports: []corev1.ContainerPort{{Name: "h2c", ContainerPort: 8080}}}), nil,
			func(pa *av1alpha1.PodAutoscaler) bool { return pa.Spec.ProtocolType == "h2c" }},
		{"http1 port", paRevision(nil, nil, nil, corev1.Container{Image: "img", Ports: []corev1.ContainerPort{{Name: "http1", ContainerPort: 8080}}}), nil,
			func(pa *av1alpha1.PodAutoscaler) bool { return pa.Spec.ProtocolType == "http1" }},
		{"h2c on the serving container of several", paRevision(nil, nil, nil, corev1.Container{Image: "sidecar"},
			corev1.Container{Image: "img", Ports: []corev1.ContainerPort{{Name: "h2c", ContainerPort: 8080}}}), nil,
			func(pa *av1alpha1.PodAutoscaler) bool { return pa.Spec.ProtocolType == "h2c" }},
		{"no containers", &v1.Revision{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"}}, nil,
			func(pa *av1alpha1.PodAutoscaler) bool {
				return pa.Spec.ProtocolType == "http1" && pa.Labels[v1.RevisionLabelKey] == "r"
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if pa := MakePodAutoscaler(tc.rev, tc.cfg); !tc.check(pa) {
				t.Errorf("got %+v", pa)
			}
		})
	}
}

func TestInitialReplicas(t *testing.T) {
	def := config.DefaultAutoscaler()
	zero := config.DefaultAutoscaler()
	zero.AllowZeroInitialScale, zero.InitialScale = true, 0
	bounded := config.DefaultAutoscaler()
	bounded.MinScale, bounded.MaxScale, bounded.InitialScale = 2, 5, 3
	tests := []struct {
		name string
		anns map[string]string
		cfg  *config.Autoscaler
		want int32
	}{
		{"defaults", nil, def, 1},
		{"nil config", nil, nil, 1},
		{"initial-scale", map[string]string{"autoscaling.knative.dev/initial-scale": "4"}, def, 4},
		{"legacy initialScale", map[string]string{"autoscaling.knative.dev/initialScale": "4"}, def, 4},
		{"kebab wins", map[string]string{"autoscaling.knative.dev/initialScale": "4", "autoscaling.knative.dev/initial-scale": "6"}, def, 6},
		{"initial-scale 0 not allowed: cluster's", map[string]string{"autoscaling.knative.dev/initial-scale": "0"}, def, 1},
		{"initial-scale 0 allowed", map[string]string{"autoscaling.knative.dev/initial-scale": "0"}, zero, 0},
		{"cluster initial-scale 0", nil, zero, 0},
		{"min-scale raises it", map[string]string{"autoscaling.knative.dev/min-scale": "3"}, def, 3},
		{"legacy minScale raises it", map[string]string{"autoscaling.knative.dev/minScale": "3", "autoscaling.knative.dev/initial-scale": "2"}, def, 3},
		{"initial above min", map[string]string{"autoscaling.knative.dev/min-scale": "2", "autoscaling.knative.dev/initial-scale": "5"}, def, 5},
		{"min-scale raises a zero initial scale", map[string]string{"autoscaling.knative.dev/min-scale": "2"}, zero, 2},
		{"max-scale caps it", map[string]string{"autoscaling.knative.dev/initial-scale": "10", "autoscaling.knative.dev/maxScale": "4"}, def, 4},
		{"max-scale 0 is no cap", map[string]string{"autoscaling.knative.dev/initial-scale": "10", "autoscaling.knative.dev/max-scale": "0"}, bounded, 10},
		{"cluster bounds", nil, bounded, 3},
		{"cluster max caps an annotation", map[string]string{"autoscaling.knative.dev/initial-scale": "9"}, bounded, 5},
		{"cluster min raises an annotation", map[string]string{"autoscaling.knative.dev/initial-scale": "1"}, bounded, 2},
		{"annotated min below the cluster's", map[string]string{"autoscaling.knative.dev/min-scale": "0", "autoscaling.knative.dev/initial-scale": "1"}, bounded, 1},
		{"bad values are ignored", map[string]string{"autoscaling.knative.dev/initial-scale": "x", "autoscaling.knative.dev/min-scale": "-2",
			"autoscaling.knative.dev/max-scale": "1.5"}, bounded, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := InitialReplicas(paRevision(nil, tc.anns, nil), tc.cfg); got != tc.want {
				t.Errorf("InitialReplicas = %d, want %d", got, tc.want)
			}
		})
	}
}
