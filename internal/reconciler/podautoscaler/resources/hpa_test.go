package resources

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	"github.com/ferry-serving/ferry/internal/config"
)

func pa(anns map[string]string, reach av1alpha1.ReachabilityType) *av1alpha1.PodAutoscaler {
	all := map[string]string{av1alpha1.ClassAnnotationKey: av1alpha1.HPA}
	for k, v := range anns {
		all[k] = v
	}
	return &av1alpha1.PodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "hello-00001", Namespace: "ns", UID: "pa-uid",
			Labels: map[string]string{"serving.knative.dev/revision": "hello-00001"}, Annotations: all},
		Spec: av1alpha1.PodAutoscalerSpec{
			ScaleTargetRef: corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "hello-00001-deployment"},
			Reachability:   reach,
		},
	}
}

func cpu(pct int32) []autoscalingv2.MetricSpec {
	return []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &pct}}}}
}

func memory(q string) []autoscalingv2.MetricSpec {
	v := resource.MustParse(q)
	return []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &v}}}}
}

func pods(name, q string) []autoscalingv2.MetricSpec {
	v := resource.MustParse(q)
	return []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &v}}}}
}

func window(s int32) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &s},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &s},
	}
}

func TestMakeHPA(t *testing.T) {
	def := config.DefaultAutoscaler()
	bounded := config.DefaultAutoscaler()
	bounded.MinScale, bounded.MaxScale = 2, 8
	tests := []struct {
		name     string
		anns     map[string]string
		reach    av1alpha1.ReachabilityType
		cfg      *config.Autoscaler
		min, max int32
		metrics  []autoscalingv2.MetricSpec
		behavior *autoscalingv2.HorizontalPodAutoscalerBehavior
	}{
		{name: "no annotations: Kubernetes' default metric, no bounds", cfg: def, min: 1, max: math.MaxInt32},
		{name: "nil config is the defaults", min: 1, max: math.MaxInt32},
		{name: "metric without a target: no metrics", anns: map[string]string{"autoscaling.knative.dev/metric": "memory"}, cfg: def, min: 1, max: math.MaxInt32},
		{name: "cpu by default", anns: map[string]string{"autoscaling.knative.dev/target": "60"}, cfg: def, min: 1, max: math.MaxInt32, metrics: cpu(60)},
		{name: "cpu rounds up", anns: map[string]string{"autoscaling.knative.dev/metric": "cpu", "autoscaling.knative.dev/target": "60.2"},
			cfg: def, min: 1, max: math.MaxInt32, metrics: cpu(61)},
		{name: "memory in MiB", anns: map[string]string{"autoscaling.knative.dev/metric": "memory", "autoscaling.knative.dev/target": "128"},
			cfg: def, min: 1, max: math.MaxInt32, metrics: memory("128Mi")},
		{name: "custom metric", anns: map[string]string{"autoscaling.knative.dev/metric": "http_requests", "autoscaling.knative.dev/target": "25"},
			cfg: def, min: 1, max: math.MaxInt32, metrics: pods("http_requests", "25")},
		{name: "custom metric keeps a fraction", anns: map[string]string{"autoscaling.knative.dev/metric": "queue", "autoscaling.knative.dev/target": "0.5"},
			cfg: def, min: 1, max: math.MaxInt32, metrics: pods("queue", "500m")},
		{name: "bad target: no metrics", anns: map[string]string{"autoscaling.knative.dev/target": "lots"}, cfg: def, min: 1, max: math.MaxInt32},
		{name: "scale annotations", anns: map[string]string{"autoscaling.knative.dev/min-scale": "3", "autoscaling.knative.dev/max-scale": "10"},
			cfg: def, min: 3, max: 10},
		{name: "legacy scale annotations", anns: map[string]string{"autoscaling.knative.dev/minScale": "2", "autoscaling.knative.dev/maxScale": "4"},
			cfg: def, min: 2, max: 4},
		{name: "kebab-case wins", anns: map[string]string{"autoscaling.knative.dev/minScale": "2", "autoscaling.knative.dev/min-scale": "5"},
			cfg: def, min: 5, max: math.MaxInt32},
		{name: "min-scale 0 is 1", anns: map[string]string{"autoscaling.knative.dev/min-scale": "0"}, cfg: def, min: 1, max: math.MaxInt32},
		{name: "config bounds", cfg: bounded, reach: av1alpha1.ReachabilityReachable, min: 2, max: 8},
		{name: "annotations win over config", anns: map[string]string{"autoscaling.knative.dev/min-scale": "1", "autoscaling.knative.dev/max-scale": "0"},
			cfg: bounded, min: 1, max: math.MaxInt32},
		{name: "unreachable ignores min-scale", anns: map[string]string{"autoscaling.knative.dev/min-scale": "3"}, reach: av1alpha1.ReachabilityUnreachable,
			cfg: bounded, min: 1, max: 8},
		{name: "config min-scale above annotated max-scale", anns: map[string]string{"autoscaling.knative.dev/max-scale": "1"}, cfg: bounded, min: 1, max: 1},
		{name: "negative or bad scales are ignored", anns: map[string]string{"autoscaling.knative.dev/min-scale": "-1", "autoscaling.knative.dev/max-scale": "x"},
			cfg: bounded, min: 2, max: 8},
		{name: "window", anns: map[string]string{"autoscaling.knative.dev/window": "2m"}, cfg: def, min: 1, max: math.MaxInt32, behavior: window(120)},
		{name: "bad window", anns: map[string]string{"autoscaling.knative.dev/window": "60"}, cfg: def, min: 1, max: math.MaxInt32},
		{name: "everything", anns: map[string]string{"autoscaling.knative.dev/metric": "cpu", "autoscaling.knative.dev/target": "80",
			"autoscaling.knative.dev/min-scale": "2", "autoscaling.knative.dev/max-scale": "20", "autoscaling.knative.dev/window": "30s"},
			cfg: def, min: 2, max: 20, metrics: cpu(80), behavior: window(30)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := pa(tc.anns, tc.reach)
			before := p.DeepCopy()
			hpa := MakeHPA(p, tc.cfg)
			if hpa.Name != p.Name || hpa.Namespace != p.Namespace || !metav1.IsControlledBy(hpa, p) {
				t.Errorf("metadata = %+v", hpa.ObjectMeta)
			}
			if ref := hpa.OwnerReferences[0]; ref.APIVersion != "autoscaling.internal.knative.dev/v1alpha1" || ref.Kind != "PodAutoscaler" || ref.Name != p.Name {
				t.Errorf("owner = %+v", ref)
			}
			if !equality.Semantic.DeepEqual(hpa.Labels, p.Labels) || !equality.Semantic.DeepEqual(hpa.Annotations, p.Annotations) {
				t.Errorf("labels, annotations = %v, %v", hpa.Labels, hpa.Annotations)
			}
			want := autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "hello-00001-deployment"}
			if hpa.Spec.ScaleTargetRef != want {
				t.Errorf("scaleTargetRef = %+v", hpa.Spec.ScaleTargetRef)
			}
			if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas != tc.min || hpa.Spec.MaxReplicas != tc.max {
				t.Errorf("replicas = %v..%d, want %d..%d", hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas, tc.min, tc.max)
			}
			if !equality.Semantic.DeepEqual(hpa.Spec.Metrics, tc.metrics) {
				t.Errorf("metrics (-want +got):\n%s", cmp.Diff(tc.metrics, hpa.Spec.Metrics))
			}
			if !equality.Semantic.DeepEqual(hpa.Spec.Behavior, tc.behavior) {
				t.Errorf("behavior (-want +got):\n%s", cmp.Diff(tc.behavior, hpa.Spec.Behavior))
			}
			hpa.Labels["x"], hpa.Annotations["x"] = "y", "y"
			if !equality.Semantic.DeepEqual(p, before) {
				t.Error("MakeHPA shares or changed the PodAutoscaler's maps")
			}
		})
	}
}

func TestMetric(t *testing.T) {
	for _, tc := range []struct {
		anns map[string]string
		want string
	}{
		{nil, "concurrency"},
		{map[string]string{av1alpha1.ClassAnnotationKey: av1alpha1.KPA}, "concurrency"},
		{map[string]string{av1alpha1.ClassAnnotationKey: av1alpha1.HPA}, "cpu"},
		{map[string]string{av1alpha1.ClassAnnotationKey: "custom.example.com"}, ""},
		{map[string]string{av1alpha1.ClassAnnotationKey: av1alpha1.HPA, av1alpha1.MetricAnnotationKey: "memory"}, "memory"},
		{map[string]string{av1alpha1.MetricAnnotationKey: "rps"}, "rps"},
	} {
		p := &av1alpha1.PodAutoscaler{ObjectMeta: metav1.ObjectMeta{Annotations: tc.anns}}
		if got := Metric(p); got != tc.want {
			t.Errorf("Metric(%v) = %q, want %q", tc.anns, got, tc.want)
		}
	}
}
