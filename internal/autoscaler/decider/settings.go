package decider

import (
	"math"
	"strconv"
	"time"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	"github.com/ferry-serving/ferry/internal/config"
)

// Aggregations a KPA Revision may name in autoscaling.knative.dev/metric-aggregation-algorithm.
const (
	// AggregationLinear averages the window's seconds with equal weights (the default).
	AggregationLinear = "linear"
	// AggregationWeighted weighs the newest seconds most (Knative's weighted-exponential).
	AggregationWeighted = "weighted-exponential"
)

// Scaling metrics a KPA Revision may name in autoscaling.knative.dev/metric.
const (
	// MetricConcurrency scales on the mean number of requests in flight (the default).
	MetricConcurrency = "concurrency"
	// MetricRPS scales on requests per second.
	MetricRPS = "rps"
)

const (
	// targetMin is Knative's floor on a per-pod target (autoscaling.TargetMin), so a
	// tiny utilization cannot divide by (almost) zero.
	targetMin = 0.01
	// bucket is the granularity of every window: Knative's BucketSize.
	bucket = time.Second
)

// annotation is one autoscaling.knative.dev setting: its key first, then the legacy
// camelCase spelling Knative still accepts. The first key present wins, even if its
// value does not parse (as kmap.KeyPriority does in Knative).
type annotation []string

func (a annotation) lookup(m map[string]string) (string, bool) {
	_, v, ok := av1alpha1.Annotation(a).Get(m)
	return v, ok
}

func (a annotation) float(m map[string]string) (float64, bool) {
	s, ok := a.lookup(m)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func (a annotation) int32(m map[string]string) (int32, bool) {
	s, ok := a.lookup(m)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(i), true
}

func (a annotation) duration(m map[string]string) (time.Duration, bool) {
	s, ok := a.lookup(m)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, false
	}
	return d, true
}

// The annotations SettingsFor reads.
var (
	metricAnn            = annotation(av1alpha1.MetricAnnotation)
	targetAnn            = annotation(av1alpha1.TargetAnnotation)
	targetUtilizationAnn = annotation(av1alpha1.TargetUtilizationAnnotation)
	targetBurstAnn       = annotation(av1alpha1.TargetBurstCapacityAnnotation)
	windowAnn            = annotation(av1alpha1.WindowAnnotation)
	aggregationAnn       = annotation(av1alpha1.AggregationAnnotation)
	panicWindowAnn       = annotation(av1alpha1.PanicWindowAnnotation)
	panicThresholdAnn    = annotation(av1alpha1.PanicThresholdAnnotation)
	minScaleAnn          = annotation(av1alpha1.MinScaleAnnotation)
	maxScaleAnn          = annotation(av1alpha1.MaxScaleAnnotation)
	initialScaleAnn      = annotation(av1alpha1.InitialScaleAnnotation)
	activationScaleAnn   = annotation(av1alpha1.ActivationScaleAnnotation)
	scaleDownDelayAnn    = annotation(av1alpha1.ScaleDownDelayAnnotation)
	podRetentionAnn      = annotation(av1alpha1.PodRetentionAnnotation)
)

// Settings is one Revision's autoscaling parameters, resolved once from
// config-autoscaler, the Revision's annotations and its containerConcurrency, so
// that Decide and Scale read plain numbers and never a map.
type Settings struct {
	// Metric is MetricConcurrency or MetricRPS: what the Windows passed to Decide hold.
	Metric string
	// Aggregation is AggregationLinear or AggregationWeighted: how a window's seconds
	// are averaged.
	Aggregation string
	// TotalValue is what one pod may take before utilization is applied: the
	// containerConcurrency, else the config default, or the target annotation
	// (capped at containerConcurrency for concurrency). The burst capacity is
	// measured against it.
	TotalValue float64
	// Target is the per-pod value the decider aims for: TotalValue × utilization,
	// at least 0.01.
	Target float64
	// TargetBurstCapacity is the spare capacity to keep (-1: always behind the
	// gateway's queue, 0: never).
	TargetBurstCapacity float64
	// StableWindow is the averaging window for ordinary decisions, and how long a
	// Revision stays Active with no traffic before it may go to zero.
	StableWindow time.Duration
	// PanicWindow is the short window that detects bursts: round(stable × pct/100),
	// at least 1s.
	PanicWindow time.Duration
	// PanicThreshold is the fraction (2.0 for 200 %) of the ready pods that the
	// panic window's desired pods must reach to start panicking.
	PanicThreshold float64
	// MaxScaleUpRate and MaxScaleDownRate bound one decision to ×rate and ÷rate of
	// the ready pods.
	MaxScaleUpRate, MaxScaleDownRate float64
	// ActivationScale is the least number of pods to wake a Revision to (0 or 1:
	// no minimum beyond what the load asks).
	ActivationScale int32
	// ScaleDownDelay holds a scale-down until the lower count has been asked for
	// this long.
	ScaleDownDelay time.Duration
	// MinScale and MaxScale bound the replicas (MaxScale 0: unlimited); InitialScale
	// is the minimum until the Revision has once reached it.
	MinScale, MaxScale, InitialScale int32
	// EnableScaleToZero: when false a desired 0 becomes 1.
	EnableScaleToZero bool
	// ScaleToZeroGracePeriod is Knative's wait for the activator to be in the path
	// before removing the last pod. Ferry's gateway is always in the path, so Scale
	// never waits for it; it is kept for status and explanation only (see doc.go).
	ScaleToZeroGracePeriod time.Duration
	// PodRetention is how long the last pods linger after the Revision went
	// Inactive (scale-to-zero-pod-retention-period).
	PodRetention time.Duration
}

// SettingsFor resolves a Revision's Settings as Knative's MakeDecider, MakeMetric,
// ResolveMetricTarget and PA accessors do together. The annotations were validated
// at admission; a value that does not parse here is ignored and the config value
// is used. A nil cfg means Knative's defaults.
func SettingsFor(cfg *config.Autoscaler, annotations map[string]string, containerConcurrency int64) Settings {
	if cfg == nil {
		cfg = config.DefaultAutoscaler()
	}
	s := Settings{
		Metric:                 MetricConcurrency,
		Aggregation:            AggregationLinear,
		TargetBurstCapacity:    cfg.TargetBurstCapacity,
		StableWindow:           cfg.StableWindow,
		PanicThreshold:         cfg.PanicThresholdPercentage / 100,
		MaxScaleUpRate:         cfg.MaxScaleUpRate,
		MaxScaleDownRate:       cfg.MaxScaleDownRate,
		ScaleDownDelay:         cfg.ScaleDownDelay,
		MinScale:               cfg.MinScale,
		MaxScale:               cfg.MaxScale,
		InitialScale:           cfg.InitialScale,
		EnableScaleToZero:      cfg.EnableScaleToZero,
		ScaleToZeroGracePeriod: cfg.ScaleToZeroGracePeriod,
		PodRetention:           cfg.ScaleToZeroPodRetentionPeriod,
	}
	if m, ok := metricAnn.lookup(annotations); ok && m == MetricRPS {
		s.Metric = MetricRPS
	}
	if a, ok := aggregationAnn.lookup(annotations); ok && (a == AggregationWeighted || a == "weightedExponential") {
		s.Aggregation = AggregationWeighted
	}

	// Target and total (Knative's resources/target.go).
	var utilization float64
	if s.Metric == MetricRPS {
		s.TotalValue = cfg.RPSTargetDefault
		utilization = cfg.TargetUtilization
	} else {
		s.TotalValue = cfg.ContainerConcurrencyTargetDefault
		if containerConcurrency > 0 {
			s.TotalValue = float64(containerConcurrency)
		}
		utilization = cfg.ContainerConcurrencyTargetFraction
	}
	if t, ok := targetAnn.float(annotations); ok && t > 0 {
		s.TotalValue = t
		if s.Metric == MetricConcurrency && containerConcurrency > 0 {
			s.TotalValue = math.Min(t, float64(containerConcurrency))
		}
	}
	if pct, ok := targetUtilizationAnn.float(annotations); ok && pct > 0 {
		utilization = pct / 100
	}
	s.Target = math.Max(targetMin, s.TotalValue*utilization)

	if tbc, ok := targetBurstAnn.float(annotations); ok {
		s.TargetBurstCapacity = tbc
	}

	// Windows (Knative's resources/metric.go).
	if w, ok := windowAnn.duration(annotations); ok && w > 0 {
		s.StableWindow = w
	}
	pwPct := cfg.PanicWindowPercentage
	if pct, ok := panicWindowAnn.float(annotations); ok && pct > 0 {
		pwPct = pct
	}
	s.PanicWindow = time.Duration(float64(s.StableWindow) * pwPct / 100).Round(bucket)
	if s.PanicWindow < bucket {
		s.PanicWindow = bucket
	}
	if pct, ok := panicThresholdAnn.float(annotations); ok && pct > 0 {
		s.PanicThreshold = pct / 100
	}

	// Bounds.
	if v, ok := minScaleAnn.int32(annotations); ok && v >= 0 {
		s.MinScale = v
	}
	if v, ok := maxScaleAnn.int32(annotations); ok && v >= 0 {
		s.MaxScale = v
	}
	if v, ok := initialScaleAnn.int32(annotations); ok && (v > 0 || v == 0 && cfg.AllowZeroInitialScale) {
		s.InitialScale = v
	}
	if v, ok := activationScaleAnn.int32(annotations); ok && v > 1 {
		s.ActivationScale = v
	}

	if d, ok := scaleDownDelayAnn.duration(annotations); ok {
		s.ScaleDownDelay = d
	}
	if d, ok := podRetentionAnn.duration(annotations); ok {
		s.PodRetention = d
	}
	return s
}
