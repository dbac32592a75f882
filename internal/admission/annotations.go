package admission

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
)

// keys are an annotation's keys, the preferred first.
type keys = av1alpha1.Annotation

var (
	classAnn                     = av1alpha1.ClassAnnotation
	minScaleAnn                  = av1alpha1.MinScaleAnnotation
	maxScaleAnn                  = av1alpha1.MaxScaleAnnotation
	initialScaleAnn              = av1alpha1.InitialScaleAnnotation
	activationScaleAnn           = av1alpha1.ActivationScaleAnnotation
	metricAnn                    = av1alpha1.MetricAnnotation
	targetAnn                    = av1alpha1.TargetAnnotation
	windowAnn                    = av1alpha1.WindowAnnotation
	algorithmAnn                 = av1alpha1.AggregationAnnotation
	panicWindowAnn               = av1alpha1.PanicWindowAnnotation
	panicThresholdAnn            = av1alpha1.PanicThresholdAnnotation
	scaleDownDelayAnn            = av1alpha1.ScaleDownDelayAnnotation
	podRetentionAnn              = av1alpha1.PodRetentionAnnotation
	targetUtilizationAnn         = av1alpha1.TargetUtilizationAnnotation
	targetBurstAnn               = av1alpha1.TargetBurstCapacityAnnotation
	rolloutDurationAnn           = servingv1.RolloutDurationAnnotation
	progressDeadlineAnn          = keys{servingv1.ProgressDeadlineAnnotationKey}
	queueSidecarPercent          = servingv1.QueueSidecarResourcePercentageAnnotation
	queueSidecarQuantity         = servingv1.QueueSidecarResourceAnnotations
	allowedNetworkingAnnotations = sets.New(netv1alpha1.UserAnnotations...)
)

const (
	windowMin = config.WindowMin
	windowMax = config.WindowMax
)

// validateNoAutoscalingAnnotations: autoscaling.knative.dev/* annotations work only on
// a Revision (or a template), not on a Service, Configuration or Route.
func validateNoAutoscalingAnnotations(anns map[string]string) *FieldError {
	var errs *FieldError
	for k := range anns {
		if av1alpha1.InAutoscalingGroup(k) {
			errs = errs.Also(ErrInvalidKeyName(k, CurrentField, `autoscaling annotations must be put under "spec.template.metadata.annotations" to work`))
		}
	}
	return errs
}

func intGE0(m map[string]string, k keys) (int32, *FieldError) {
	key, v, ok := k.Get(m)
	if !ok {
		return 0, nil
	}
	i, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, ErrOutOfBoundsValue(v, 0, math.MaxInt32, key)
		}
		return 0, ErrInvalidValue(v, key)
	}
	if i < 0 {
		return 0, ErrOutOfBoundsValue(v, 0, math.MaxInt32, key)
	}
	return int32(i), nil
}

// validateAutoscalingAnnotations checks autoscaling.knative.dev/* values as Knative's
// autoscaling.ValidateAnnotations does, against the cluster's config-autoscaler (as:
// max-scale-limit, allow-zero-initial-scale and the default pod-autoscaler-class; its
// defaults if nil). Paths are the annotation keys.
func validateAutoscalingAnnotations(as *config.Autoscaler, m map[string]string) *FieldError {
	if as == nil {
		as = config.DefaultAutoscaler()
	}
	var errs *FieldError
	// class
	if k, v, ok := classAnn.Get(m); ok && strings.HasSuffix(v, ".knative.dev") && v != av1alpha1.KPA && v != av1alpha1.HPA {
		errs = errs.Also(ErrInvalidValue(v, k))
	}
	// min/max/activation scale
	lo, err := intGE0(m, minScaleAnn)
	errs = errs.Also(err)
	hi, err := intGE0(m, maxScaleAnn)
	errs = errs.Also(err)
	if hi != 0 && hi < lo {
		errs = errs.Also(ErrGeneric(fmt.Sprintf("max-scale=%d is less than min-scale=%d", hi, lo), maxScaleAnn[0], minScaleAnn[0]))
	}
	if k, _, ok := maxScaleAnn.Get(m); ok && as.MaxScaleLimit != 0 {
		limit := as.MaxScaleLimit
		if hi > limit {
			errs = errs.Also(ErrOutOfBoundsValue(hi, 1, limit, k))
		}
		if hi == 0 {
			errs = errs.Also(ErrGeneric(fmt.Sprint("max-scale=0 (unlimited), must be less than ", limit), k))
		}
	}
	if k, v, ok := activationScaleAnn.Get(m); ok {
		if act, err := strconv.ParseInt(v, 10, 32); err != nil {
			errs = errs.Also(ErrInvalidValue(v, k))
		} else if lo > int32(act) {
			errs = errs.Also(ErrGeneric(fmt.Sprintf("min-scale=%d is greater than activation-scale=%d", lo, act), k))
		} else if hi < int32(act) && hi != 0 {
			errs = errs.Also(ErrGeneric(fmt.Sprintf("max-scale=%d is less than activation-scale=%d", hi, act), k))
		} else if act < 2 {
			errs = errs.Also(ErrGeneric(fmt.Sprintf("activation-scale=%d must be greater than 1", act), k))
		}
	}
	// floats
	floatIn := func(k keys, lo, hi float64) {
		if key, v, ok := k.Get(m); ok {
			if fv, err := strconv.ParseFloat(v, 64); err != nil {
				errs = errs.Also(ErrInvalidValue(v, key))
			} else if fv < lo || fv > hi {
				errs = errs.Also(ErrOutOfBoundsValue(v, lo, hi, key))
			}
		}
	}
	floatIn(panicWindowAnn, 1, 100)
	floatIn(panicThresholdAnn, 110, 1000)
	if k, v, ok := targetAnn.Get(m); ok {
		if fv, err := strconv.ParseFloat(v, 64); err != nil {
			errs = errs.Also(ErrInvalidValue(v, k))
		} else if fv < config.TargetMin {
			errs = errs.Also(ErrGeneric(fmt.Sprintf("target %s should be at least %g", v, config.TargetMin), k))
		}
	}
	floatIn(targetUtilizationAnn, 1, 100)
	if k, v, ok := targetBurstAnn.Get(m); ok {
		if fv, err := strconv.ParseFloat(v, 64); err != nil || fv < 0 && fv != -1 {
			errs = errs.Also(ErrInvalidValue(v, k))
		} else if fv != -1 {
			errs = errs.Also(ErrGeneric(noBurstCapacityEffect, k).AsWarning())
		}
	}
	// window
	if _, v, ok := windowAnn.Get(m); ok {
		k := windowAnn[0]
		switch d, err := time.ParseDuration(v); {
		case err != nil:
			errs = errs.Also(ErrInvalidValue(v, k))
		case d < windowMin || d > windowMax:
			errs = errs.Also(ErrOutOfBoundsValue(v, windowMin, windowMax, k))
		case d.Truncate(time.Second) != d:
			errs = errs.Also(ErrGeneric("must be specified with at most second precision", k))
		}
	}
	// scale-to-zero-pod-retention-period
	if k, v, ok := podRetentionAnn.Get(m); ok {
		if d, err := time.ParseDuration(v); err != nil {
			errs = errs.Also(ErrInvalidValue(v, k))
		} else if d < 0 || d > windowMax {
			errs = errs.Also(ErrOutOfBoundsValue(v, time.Duration(0), windowMax, k))
		}
	}
	// scale-down-delay
	if k, v, ok := scaleDownDelayAnn.Get(m); ok {
		if d, err := time.ParseDuration(v); err != nil {
			errs = errs.Also(ErrInvalidValue(v, k))
		} else if d < 0 || d > windowMax {
			errs = errs.Also(ErrOutOfBoundsValue(v, 0*time.Second, windowMax, k))
		} else if d.Round(time.Second) != d {
			errs = errs.Also(ErrGeneric("must be specified with at most second precision", k))
		}
	}
	// metric
	if _, metric, ok := metricAnn.Get(m); ok {
		class := as.PodAutoscalerClass
		if _, c, ok := classAnn.Get(m); ok {
			class = c
		}
		bad := false
		switch class {
		case av1alpha1.KPA:
			bad = metric != "concurrency" && metric != "rps"
		case av1alpha1.HPA:
			bad = metric == ""
		}
		if bad {
			errs = errs.Also(ErrInvalidValue(metric, metricAnn[0]))
		}
	}
	// metric-aggregation-algorithm, for the KPA only
	if _, c, _ := classAnn.Get(m); c == av1alpha1.KPA {
		if k, v, _ := algorithmAnn.Get(m); v != "" && v != "linear" && v != "weighted-exponential" && v != "weightedExponential" {
			errs = errs.Also(ErrInvalidValue(v, k))
		}
	}
	// initial-scale
	if k, v, ok := initialScaleAnn.Get(m); ok {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			errs = errs.Also(ErrInvalidValue(v, k))
		case n < 0:
			errs = errs.Also(ErrInvalidValue(v, k+" must be greater than 0"))
		case !as.AllowZeroInitialScale && n == 0:
			errs = errs.Also(ErrInvalidValue(v, k+"=0 not allowed by cluster"))
		}
	}
	return errs
}

// validateNetworkingAnnotations refuses unknown networking.knative.dev/* annotations.
func validateNetworkingAnnotations(m map[string]string) *FieldError {
	var errs *FieldError
	for k := range m {
		if netv1alpha1.InNetworkingGroup(k) && !allowedNetworkingAnnotations.Has(k) {
			errs = errs.Also(ErrInvalidKeyName(k, CurrentField))
		}
	}
	return errs
}

// validateDurationAnnotation checks rollout-duration or progress-deadline: a Go
// duration, whole seconds, not negative.
func validateDurationAnnotation(m map[string]string, k keys, what string) *FieldError {
	key, v, _ := k.Get(m)
	if v == "" {
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return ErrInvalidValue(v, key)
	}
	if d.Round(time.Second) != d {
		return ErrGeneric(fmt.Sprintf("%s=%s is not at second precision", what, v), key)
	}
	if d < 0 {
		return ErrGeneric(fmt.Sprintf("%s=%s must be positive", what, v), key)
	}
	return nil
}

// validateRolloutDuration checks serving.knative.dev/rollout-duration.
func validateRolloutDuration(m map[string]string) *FieldError {
	return validateDurationAnnotation(m, rolloutDurationAnn, "rollout-duration")
}

// noBurstCapacityEffect is the warning for a target-burst-capacity other than -1. In
// Knative the burst capacity decides when the activator is put in the request path;
// Ferry's gateway is always in it and balances by each pod's free capacity, which is
// Knative's behaviour with -1 (docs/autoscaling.md).
const noBurstCapacityEffect = "has no effect in Ferry: the gateway is always in the request path, as with -1 in Knative"

// validateQueueSidecarAnnotations checks the queue-proxy resource annotations.
func validateQueueSidecarAnnotations(m map[string]string) *FieldError {
	if len(m) == 0 {
		return nil
	}
	var errs *FieldError
	if k, v, ok := queueSidecarPercent.Get(m); ok {
		errs = ErrGeneric("Queue proxy resource percentage annotation is deprecated. Please use the available annotations to explicitly set resource values per service").ViaKey(k).AsWarning()
		if fv, err := strconv.ParseFloat(v, 64); err != nil {
			errs = errs.Also(ErrInvalidValue(v, CurrentField).ViaKey(k))
		} else if fv < 0.1 || fv > 100 {
			errs = errs.Also(ErrOutOfBoundsValue(fv, 0.1, 100.0, CurrentField).ViaKey(k))
		}
	}
	for _, q := range queueSidecarQuantity {
		if k, v, ok := q.Get(m); ok {
			if _, err := resource.ParseQuantity(v); err != nil {
				errs = errs.Also(ErrInvalidValue(v, CurrentField).ViaKey(k))
			}
		}
	}
	return errs
}

// validateFerryAnnotations checks Ferry's serving.ferry.dev/simulated-* values, which
// shape how ferry up's simulated pods answer, and refuses the serving-port annotation,
// which only the program node writes: set on a template it would reach every pod and
// send the gateway to another port than the container's.
func validateFerryAnnotations(m map[string]string) *FieldError {
	var errs *FieldError
	if _, ok := m[servingv1.ServingPortAnnotationKey]; ok {
		errs = errs.Also(ErrDisallowedFields(servingv1.ServingPortAnnotationKey).WithDetails(
			"ferry up's program node writes it on the pods it runs as processes; a Revision serves on its container's ports[0].containerPort"))
	}
	if v, ok := m[servingv1.SimulatedServiceTimeAnnotationKey]; ok {
		if _, err := servingv1.ParseSimulatedServiceTime(v); err != nil {
			errs = errs.Also(ErrInvalidValue(v, servingv1.SimulatedServiceTimeAnnotationKey, "a Go duration of at least 0, such as 200ms"))
		}
	}
	if v, ok := m[servingv1.SimulatedCapacityAnnotationKey]; ok {
		if _, err := servingv1.ParseSimulatedCapacity(v); err != nil {
			errs = errs.Also(ErrInvalidValue(v, servingv1.SimulatedCapacityAnnotationKey, "a whole number of at least 1"))
		}
	}
	return errs
}
