package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Bounds Knative puts on autoscaling settings (knative.dev/serving/pkg/apis/autoscaling),
// shared by config-autoscaler and the autoscaling.knative.dev/* annotations.
const (
	// WindowMin and WindowMax bound the stable window (and the window annotation).
	WindowMin = 6 * time.Second
	WindowMax = time.Hour
	// TargetMin is the smallest target, in requests (or requests per second) per pod.
	TargetMin = 0.01
	// PanicWindowPercentageMin and PanicWindowPercentageMax bound panic-window-percentage.
	PanicWindowPercentageMin = 1.0
	PanicWindowPercentageMax = 100.0
)

// NewAutoscalerFromConfigMap parses config-autoscaler with Knative's keys, parse rules
// and checks (knative.dev/serving/pkg/autoscaler/config): every error names its key.
//
// container-concurrency-target-percentage above 1 is a percentage, at most 1 a fraction
// (Knative's legacy reading), and it must end up in (0, 1] with at least TargetMin
// requests per pod at container-concurrency-target-default. requests-per-second-target-
// default ≥ TargetMin; target-burst-capacity ≥ 0 or -1; stable-window in [6s, 1h] in
// whole seconds; panic-window-percentage in [1, 100]; max-scale-up-rate and
// max-scale-down-rate > 1; activator-capacity ≥ 1; scale-to-zero-grace-period > 0;
// scale-to-zero-pod-retention-period ≥ 0; scale-down-delay ≥ 0 in whole seconds;
// initial-scale ≥ 1, or ≥ 0 with allow-zero-initial-scale; min-scale ≥ 0;
// max-scale-limit ≥ 0 and, when set, max-scale in [1, max-scale-limit]; min-scale ≤
// max-scale unless max-scale is 0. panic-threshold-percentage is not range-checked
// (only its annotation is), as in Knative. Unlike Knative, NaN is refused for every
// number.
func NewAutoscalerFromConfigMap(cm *corev1.ConfigMap) (*Autoscaler, error) {
	data := dataOf(cm.Data)
	a := DefaultAutoscaler()
	if err := parse(data,
		asString("pod-autoscaler-class", &a.PodAutoscalerClass),

		asBool("enable-scale-to-zero", &a.EnableScaleToZero),
		asBool("allow-zero-initial-scale", &a.AllowZeroInitialScale),

		asFloat64("max-scale-up-rate", &a.MaxScaleUpRate),
		asFloat64("max-scale-down-rate", &a.MaxScaleDownRate),
		asFloat64("container-concurrency-target-percentage", &a.ContainerConcurrencyTargetFraction),
		asFloat64("container-concurrency-target-default", &a.ContainerConcurrencyTargetDefault),
		asFloat64("requests-per-second-target-default", &a.RPSTargetDefault),
		asFloat64("target-burst-capacity", &a.TargetBurstCapacity),
		asFloat64("panic-window-percentage", &a.PanicWindowPercentage),
		asFloat64("activator-capacity", &a.ActivatorCapacity),
		asFloat64("panic-threshold-percentage", &a.PanicThresholdPercentage),

		asInt32("initial-scale", &a.InitialScale),
		asInt32("min-scale", &a.MinScale),
		asInt32("max-scale", &a.MaxScale),
		asInt32("max-scale-limit", &a.MaxScaleLimit),

		asDuration("stable-window", &a.StableWindow),
		asDuration("scale-down-delay", &a.ScaleDownDelay),
		asDuration("scale-to-zero-grace-period", &a.ScaleToZeroGracePeriod),
		asDuration("scale-to-zero-pod-retention-period", &a.ScaleToZeroPodRetentionPeriod),
	); err != nil {
		return nil, err
	}
	// A percentage, except that (0, 1] is read as a fraction (legacy).
	if a.ContainerConcurrencyTargetFraction > 1 {
		a.ContainerConcurrencyTargetFraction /= 100
	}
	if err := a.validate(); err != nil {
		return nil, err
	}
	return a, nil
}

// validate is Knative's check of a parsed config-autoscaler, in Knative's order.
func (a *Autoscaler) validate() error {
	switch {
	case a.ScaleToZeroGracePeriod <= 0:
		return fmt.Errorf("scale-to-zero-grace-period must be positive, was: %v", a.ScaleToZeroGracePeriod)
	case a.ScaleDownDelay < 0:
		return fmt.Errorf("scale-down-delay cannot be negative, was: %v", a.ScaleDownDelay)
	case a.ScaleDownDelay.Round(time.Second) != a.ScaleDownDelay:
		return fmt.Errorf("scale-down-delay = %v, must be specified with at most second precision", a.ScaleDownDelay)
	case a.ScaleToZeroPodRetentionPeriod < 0:
		return fmt.Errorf("scale-to-zero-pod-retention-period cannot be negative, was: %v", a.ScaleToZeroPodRetentionPeriod)
	case a.TargetBurstCapacity < 0 && a.TargetBurstCapacity != -1:
		return fmt.Errorf("target-burst-capacity must be either non-negative or -1 (for unlimited), was: %v", a.TargetBurstCapacity)
	case a.ContainerConcurrencyTargetFraction <= 0 || a.ContainerConcurrencyTargetFraction > 1:
		return fmt.Errorf("container-concurrency-target-percentage = %v is outside of valid range of (0, 100]",
			a.ContainerConcurrencyTargetFraction*100)
	case a.ContainerConcurrencyTargetFraction*a.ContainerConcurrencyTargetDefault < TargetMin:
		return fmt.Errorf("container-concurrency-target-percentage and container-concurrency-target-default yield target concurrency of %v, can't be less than %v",
			a.ContainerConcurrencyTargetFraction*a.ContainerConcurrencyTargetDefault, TargetMin)
	case a.RPSTargetDefault < TargetMin:
		return fmt.Errorf("requests-per-second-target-default must be at least %v, was: %v", TargetMin, a.RPSTargetDefault)
	case a.ActivatorCapacity < 1:
		return fmt.Errorf("activator-capacity = %v, must be at least 1", a.ActivatorCapacity)
	case a.MaxScaleUpRate <= 1:
		return fmt.Errorf("max-scale-up-rate = %v, must be greater than 1.0", a.MaxScaleUpRate)
	case a.MaxScaleDownRate <= 1:
		return fmt.Errorf("max-scale-down-rate = %v, must be greater than 1.0", a.MaxScaleDownRate)
	case a.StableWindow < WindowMin || a.StableWindow > WindowMax:
		return fmt.Errorf("stable-window = %v, must be in [%v; %v] range", a.StableWindow, WindowMin, WindowMax)
	case a.StableWindow.Round(time.Second) != a.StableWindow:
		return fmt.Errorf("stable-window = %v, must be specified with at most second precision", a.StableWindow)
	case a.PanicWindowPercentage < PanicWindowPercentageMin || a.PanicWindowPercentage > PanicWindowPercentageMax:
		return fmt.Errorf("panic-window-percentage = %v, must be in [%v, %v] interval",
			a.PanicWindowPercentage, PanicWindowPercentageMin, PanicWindowPercentageMax)
	case a.InitialScale < 0 || (a.InitialScale == 0 && !a.AllowZeroInitialScale):
		return fmt.Errorf("initial-scale = %v, must be at least 0 (or at least 1 when allow-zero-initial-scale is false)", a.InitialScale)
	case a.MinScale < 0:
		return fmt.Errorf("min-scale = %v, must be at least 0", a.MinScale)
	}
	// With a limit, max-scale must be set (0 would be unlimited) and within it.
	var lowestMax int32
	if a.MaxScaleLimit > 0 {
		lowestMax = 1
	}
	if a.MaxScale < lowestMax || (a.MaxScaleLimit > 0 && a.MaxScale > a.MaxScaleLimit) {
		return fmt.Errorf("max-scale = %d, must be in [%d, max-scale-limit(%d)] range", a.MaxScale, lowestMax, a.MaxScaleLimit)
	}
	if a.MaxScaleLimit < 0 {
		return fmt.Errorf("max-scale-limit = %v, must be at least 0", a.MaxScaleLimit)
	}
	if a.MaxScale > 0 && a.MinScale > a.MaxScale {
		return fmt.Errorf("min-scale (%d) must be less than max-scale (%d)", a.MinScale, a.MaxScale)
	}
	return nil
}

// asFloat64 parses a float as Knative does, except that NaN, which every range check
// would let through, is an error.
func asFloat64(key string, target *float64) parseFunc {
	return func(data map[string]string) error {
		if v, ok := lookup(data, key); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil && math.IsNaN(f) {
				err = errors.New("not a number")
			}
			if err != nil {
				return keyError(key, err)
			}
			*target = f
		}
		return nil
	}
}

func asInt32(key string, target *int32) parseFunc {
	return func(data map[string]string) error {
		if v, ok := lookup(data, key); ok {
			i, err := strconv.ParseInt(v, 10, 32)
			if err != nil {
				return keyError(key, err)
			}
			*target = int32(i)
		}
		return nil
	}
}
