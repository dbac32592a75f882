package v1alpha1

import "strings"

// Annotation is a Knative annotation's keys: the preferred one, then the older
// camelCase spelling Knative still reads. Admission, the decider and the Revision's
// builders read Knative's autoscaling annotations through these, so that the lists
// exist once.
//
// +kubebuilder:object:generate=false
type Annotation []string

// Get returns the first of the keys present in m with its value; the preferred key
// and false if none is.
func (a Annotation) Get(m map[string]string) (key, value string, ok bool) {
	for _, k := range a {
		if v, ok := m[k]; ok {
			return k, v, true
		}
	}
	return a[0], "", false
}

const annotationGroup = "autoscaling.knative.dev/"

// InAutoscalingGroup says whether key is one of autoscaling.knative.dev.
func InAutoscalingGroup(key string) bool {
	return strings.HasPrefix(key, strings.TrimSuffix(annotationGroup, "/"))
}

// Knative's autoscaling.knative.dev annotations (its pkg/apis/autoscaling/register.go).
var (
	ClassAnnotation               = Annotation{ClassAnnotationKey}
	MetricAnnotation              = Annotation{MetricAnnotationKey}
	TargetAnnotation              = Annotation{annotationGroup + "target"}
	TargetUtilizationAnnotation   = Annotation{annotationGroup + "target-utilization-percentage", annotationGroup + "targetUtilizationPercentage"}
	TargetBurstCapacityAnnotation = Annotation{annotationGroup + "target-burst-capacity", annotationGroup + "targetBurstCapacity"}
	WindowAnnotation              = Annotation{annotationGroup + "window"}
	PanicWindowAnnotation         = Annotation{annotationGroup + "panic-window-percentage", annotationGroup + "panicWindowPercentage"}
	PanicThresholdAnnotation      = Annotation{annotationGroup + "panic-threshold-percentage", annotationGroup + "panicThresholdPercentage"}
	MinScaleAnnotation            = Annotation{annotationGroup + "min-scale", annotationGroup + "minScale"}
	MaxScaleAnnotation            = Annotation{annotationGroup + "max-scale", annotationGroup + "maxScale"}
	InitialScaleAnnotation        = Annotation{annotationGroup + "initial-scale", annotationGroup + "initialScale"}
	ActivationScaleAnnotation     = Annotation{annotationGroup + "activation-scale"}
	ScaleDownDelayAnnotation      = Annotation{annotationGroup + "scale-down-delay", annotationGroup + "scaleDownDelay"}
	PodRetentionAnnotation        = Annotation{annotationGroup + "scale-to-zero-pod-retention-period", annotationGroup + "scaleToZeroPodRetentionPeriod"}
	AggregationAnnotation         = Annotation{annotationGroup + "metric-aggregation-algorithm", annotationGroup + "metricAggregationAlgorithm"}
)
