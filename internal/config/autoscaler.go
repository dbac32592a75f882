package config

import (
	"time"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
)

// AutoscalerConfigName is Knative's ConfigMap of autoscaler settings.
const AutoscalerConfigName = "config-autoscaler"

// Autoscaler is config-autoscaler: the cluster-wide autoscaling settings, which a
// Revision's autoscaling.knative.dev/* annotations override. Field names follow
// Knative's keys; the defaults are Knative's (DefaultAutoscaler).
type Autoscaler struct {
	// EnableScaleToZero: if false, a desired scale of 0 becomes 1.
	EnableScaleToZero bool

	// ContainerConcurrencyTargetFraction is container-concurrency-target-percentage
	// as a fraction (70 -> 0.7).
	ContainerConcurrencyTargetFraction float64
	// ContainerConcurrencyTargetDefault is the soft per-pod concurrency target when
	// the Revision sets no containerConcurrency.
	ContainerConcurrencyTargetDefault float64
	// RPSTargetDefault is requests-per-second-target-default.
	RPSTargetDefault float64
	// TargetUtilization is the utilization applied to the RPS target; Knative fixes
	// it at 0.7 with no key.
	TargetUtilization float64
	// TargetBurstCapacity is target-burst-capacity (-1: always through the gateway's
	// queue; Ferry's gateway is always in the path, so it only enters the decision).
	TargetBurstCapacity float64
	// ActivatorCapacity is activator-capacity.
	ActivatorCapacity float64

	StableWindow time.Duration
	// PanicWindowPercentage is panic-window-percentage (of the stable window).
	PanicWindowPercentage float64
	// PanicThresholdPercentage is panic-threshold-percentage.
	PanicThresholdPercentage float64

	MaxScaleUpRate   float64
	MaxScaleDownRate float64

	ScaleToZeroGracePeriod        time.Duration
	ScaleToZeroPodRetentionPeriod time.Duration
	ScaleDownDelay                time.Duration

	InitialScale          int32
	AllowZeroInitialScale bool
	MinScale              int32
	// MaxScale is max-scale (0: unlimited).
	MaxScale int32
	// MaxScaleLimit is max-scale-limit (0: none).
	MaxScaleLimit int32

	// PodAutoscalerClass is pod-autoscaler-class, the default class.
	PodAutoscalerClass string
}

// DefaultAutoscaler is config-autoscaler with no key set: Knative's defaults.
func DefaultAutoscaler() *Autoscaler {
	return &Autoscaler{
		EnableScaleToZero:                  true,
		ContainerConcurrencyTargetFraction: 0.7,
		ContainerConcurrencyTargetDefault:  100,
		RPSTargetDefault:                   200,
		TargetUtilization:                  0.7,
		TargetBurstCapacity:                211,
		ActivatorCapacity:                  100,
		StableWindow:                       60 * time.Second,
		PanicWindowPercentage:              10,
		PanicThresholdPercentage:           200,
		MaxScaleUpRate:                     1000,
		MaxScaleDownRate:                   2,
		ScaleToZeroGracePeriod:             30 * time.Second,
		ScaleToZeroPodRetentionPeriod:      0,
		ScaleDownDelay:                     0,
		InitialScale:                       1,
		AllowZeroInitialScale:              false,
		MinScale:                           0,
		MaxScale:                           0,
		MaxScaleLimit:                      0,
		PodAutoscalerClass:                 av1alpha1.KPA,
	}
}
