package resources

import (
	"maps"
	"math"
	"strconv"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	"github.com/ferry-serving/ferry/internal/config"
)

// The metrics that name a resource rather than a custom per-pod metric.
const (
	metricCPU    = "cpu"
	metricMemory = "memory"
)

// MakeHPA builds the autoscaling/v2 HorizontalPodAutoscaler of a PodAutoscaler of the
// HPA class, as Knative's HPA class does (pkg/reconciler/autoscaling/hpa/resources):
//
//   - its name, namespace, labels and annotations are the PodAutoscaler's, which is its
//     controller owner; it scales the PodAutoscaler's scaleTargetRef;
//   - minReplicas is min-scale (the annotation, else cfg's; 0 while the PodAutoscaler is
//     Unreachable), at least 1: Knative leaves it unset below 1, which the API server
//     defaults to 1, so the result is the same and an update never fights the default;
//   - maxReplicas is max-scale (the annotation, else cfg's), math.MaxInt32 when 0;
//     minReplicas is capped by it (Knative would build an HPA the API server refuses
//     when cfg's min-scale exceeds a Revision's max-scale annotation, a pair admission
//     does not compare);
//   - metrics are set only with an autoscaling.knative.dev/target annotation, for the
//     autoscaling.knative.dev/metric annotation (cpu when absent): cpu is a Resource
//     Utilization target of ceil(target) percent, memory a Resource AverageValue of
//     target MiB, anything else a Pods metric of that name with AverageValue target.
//     Without a target the list is empty and Kubernetes scales on 80% average CPU.
//     Unlike Knative, which truncates the target to an integer first, a fractional
//     memory or custom target keeps its fraction (a custom target of 0.5 is 500m, not 0);
//   - the autoscaling.knative.dev/window annotation sets the stabilization window of
//     both scale up and scale down.
//
// An annotation that does not parse, or a negative scale, counts as absent (admission
// refuses them).
func MakeHPA(pa *av1alpha1.PodAutoscaler, cfg *config.Autoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	if cfg == nil {
		cfg = config.DefaultAutoscaler()
	}
	lo, hi := scaleBounds(pa, cfg)
	if hi == 0 {
		hi = math.MaxInt32
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{
			Name:            pa.Name,
			Namespace:       pa.Namespace,
			Labels:          maps.Clone(pa.Labels),
			Annotations:     maps.Clone(pa.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pa, av1alpha1.SchemeGroupVersion.WithKind("PodAutoscaler"))},
		},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{
				APIVersion: pa.Spec.ScaleTargetRef.APIVersion,
				Kind:       pa.Spec.ScaleTargetRef.Kind,
				Name:       pa.Spec.ScaleTargetRef.Name,
			},
			MinReplicas: ptr(min(max(lo, 1), hi)),
			MaxReplicas: hi,
		},
	}
	if target, ok := annotationFloat(pa.Annotations, av1alpha1.TargetAnnotation); ok {
		hpa.Spec.Metrics = []autoscalingv2.MetricSpec{metric(Metric(pa), target)}
	}
	if window, ok := annotationDuration(pa.Annotations, av1alpha1.WindowAnnotation); ok {
		seconds := int32(window / time.Second)
		hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(seconds)},
			ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(seconds)},
		}
	}
	return hpa
}

// Metric is the PodAutoscaler's autoscaling.knative.dev/metric annotation, else its
// class's default: concurrency for the KPA, cpu for the HPA, none for another class.
func Metric(pa *av1alpha1.PodAutoscaler) string {
	if m, ok := pa.Annotations[av1alpha1.MetricAnnotationKey]; ok {
		return m
	}
	switch pa.Class() {
	case av1alpha1.KPA:
		return "concurrency"
	case av1alpha1.HPA:
		return metricCPU
	}
	return ""
}

func metric(name string, target float64) autoscalingv2.MetricSpec {
	switch name {
	case metricCPU:
		return autoscalingv2.MetricSpec{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{
					Type:               autoscalingv2.UtilizationMetricType,
					AverageUtilization: ptr(int32(math.Ceil(target))),
				},
			},
		}
	case metricMemory:
		return autoscalingv2.MetricSpec{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceMemory,
				Target: autoscalingv2.MetricTarget{
					Type:         autoscalingv2.AverageValueMetricType,
					AverageValue: resource.NewQuantity(int64(target*1024*1024), resource.BinarySI),
				},
			},
		}
	}
	return autoscalingv2.MetricSpec{
		Type: autoscalingv2.PodsMetricSourceType,
		Pods: &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: name},
			Target: autoscalingv2.MetricTarget{
				Type:         autoscalingv2.AverageValueMetricType,
				AverageValue: resource.NewMilliQuantity(int64(math.Round(target*1000)), resource.DecimalSI),
			},
		},
	}
}

// scaleBounds is Knative's PodAutoscaler.ScaleBounds: min-scale and max-scale from the
// annotations, else from config-autoscaler; min-scale is 0 while the PodAutoscaler is
// Unreachable (no Route sends it traffic).
func scaleBounds(pa *av1alpha1.PodAutoscaler, cfg *config.Autoscaler) (lo, hi int32) {
	if pa.Spec.Reachability != av1alpha1.ReachabilityUnreachable {
		lo = cfg.MinScale
		if v, ok := annotationInt32(pa.Annotations, av1alpha1.MinScaleAnnotation); ok {
			lo = v
		}
	}
	hi = cfg.MaxScale
	if v, ok := annotationInt32(pa.Annotations, av1alpha1.MaxScaleAnnotation); ok {
		hi = v
	}
	return lo, hi
}

// lookup returns the value of the first of keys present in m.
func lookup(m map[string]string, keys []string) (string, bool) {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v, true
		}
	}
	return "", false
}

// annotationInt32 reads a scale: an int32 ≥ 0.
func annotationInt32(m map[string]string, keys []string) (int32, bool) {
	if s, ok := lookup(m, keys); ok {
		if v, err := strconv.ParseInt(s, 10, 32); err == nil && v >= 0 {
			return int32(v), true
		}
	}
	return 0, false
}

func annotationFloat(m map[string]string, keys []string) (float64, bool) {
	if s, ok := lookup(m, keys); ok {
		if v, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
			return v, true
		}
	}
	return 0, false
}

func annotationDuration(m map[string]string, keys []string) (time.Duration, bool) {
	if s, ok := lookup(m, keys); ok {
		if d, err := time.ParseDuration(s); err == nil {
			return d, true
		}
	}
	return 0, false
}

func ptr[T any](v T) *T { return &v }
