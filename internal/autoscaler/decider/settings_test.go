package decider

import (
	"testing"
	"time"

	"github.com/ferry-serving/ferry/internal/config"
)

// defaults is SettingsFor(DefaultAutoscaler, no annotations, CC 0), by hand.
func defaults() Settings {
	return Settings{
		Metric:                 MetricConcurrency,
		Aggregation:            AggregationLinear,
		TotalValue:             100, // cc-target-default
		Target:                 70,  // 100 × 0.7
		TargetBurstCapacity:    211,
		StableWindow:           60 * time.Second,
		PanicWindow:            6 * time.Second, // 60s × 10 %
		PanicThreshold:         2,               // 200 %
		MaxScaleUpRate:         1000,
		MaxScaleDownRate:       2,
		ActivationScale:        0,
		ScaleDownDelay:         0,
		MinScale:               0,
		MaxScale:               0,
		InitialScale:           1,
		EnableScaleToZero:      true,
		ScaleToZeroGracePeriod: 30 * time.Second,
		PodRetention:           0,
	}
}

func TestSettingsFor(t *testing.T) {
	const g = "autoscaling.knative.dev/"
	tests := []struct {
		name string
		cfg  func(*config.Autoscaler)
		ann  map[string]string
		cc   int64
		want func(*Settings)
	}{{
		name: "defaults",
		want: func(*Settings) {},
	}, {
		name: "containerConcurrency is the total",
		cc:   10,
		want: func(s *Settings) { s.TotalValue, s.Target = 10, 7 }, // 10 × 0.7
	}, {
		name: "target annotation replaces the default total",
		ann:  map[string]string{g + "target": "50"},
		want: func(s *Settings) { s.TotalValue, s.Target = 50, 35 }, // 50 × 0.7
	}, {
		name: "target annotation is capped at containerConcurrency",
		ann:  map[string]string{g + "target": "50"},
		cc:   10,
		want: func(s *Settings) { s.TotalValue, s.Target = 10, 7 }, // min(50, 10) × 0.7
	}, {
		name: "target annotation below containerConcurrency wins",
		ann:  map[string]string{g + "target": "5"},
		cc:   10,
		want: func(s *Settings) { s.TotalValue, s.Target = 5, 3.5 }, // min(5, 10) × 0.7
	}, {
		name: "rps: 200 × 0.7 = 140, containerConcurrency does not matter",
		ann:  map[string]string{g + "metric": "rps"},
		cc:   10,
		want: func(s *Settings) { s.Metric, s.TotalValue, s.Target = MetricRPS, 200, 140 },
	}, {
		name: "rps target is not capped by containerConcurrency",
		ann:  map[string]string{g + "metric": "rps", g + "target": "50"},
		cc:   10,
		want: func(s *Settings) { s.Metric, s.TotalValue, s.Target = MetricRPS, 50, 35 },
	}, {
		name: "rps uses TargetUtilization, not the concurrency fraction",
		cfg:  func(c *config.Autoscaler) { c.TargetUtilization, c.ContainerConcurrencyTargetFraction = 0.5, 0.9 },
		ann:  map[string]string{g + "metric": "rps"},
		want: func(s *Settings) { s.Metric, s.TotalValue, s.Target = MetricRPS, 200, 100 }, // 200 × 0.5
	}, {
		name: "an unknown metric is concurrency",
		ann:  map[string]string{g + "metric": "cpu"},
		want: func(*Settings) {},
	}, {
		name: "target-utilization-percentage, concurrency",
		ann:  map[string]string{g + "target-utilization-percentage": "50"},
		want: func(s *Settings) { s.Target = 50 }, // 100 × 0.5
	}, {
		name: "target-utilization-percentage, rps",
		ann:  map[string]string{g + "metric": "rps", g + "target-utilization-percentage": "50"},
		want: func(s *Settings) { s.Metric, s.TotalValue, s.Target = MetricRPS, 200, 100 }, // 200 × 0.5
	}, {
		name: "legacy targetUtilizationPercentage",
		ann:  map[string]string{g + "targetUtilizationPercentage": "80"},
		want: func(s *Settings) { s.Target = 80 },
	}, {
		name: "kebab key wins over legacy",
		ann:  map[string]string{g + "target-utilization-percentage": "50", g + "targetUtilizationPercentage": "80"},
		want: func(s *Settings) { s.Target = 50 },
	}, {
		name: "an unparsable kebab value falls back to config, not to the legacy key",
		ann:  map[string]string{g + "target-utilization-percentage": "half", g + "targetUtilizationPercentage": "80"},
		want: func(*Settings) {},
	}, {
		name: "target is at least 0.01",
		ann:  map[string]string{g + "target": "0.01", g + "target-utilization-percentage": "1"},
		want: func(s *Settings) { s.TotalValue, s.Target = 0.01, 0.01 }, // 0.0001 → 0.01
	}, {
		name: "config fraction and default",
		cfg: func(c *config.Autoscaler) {
			c.ContainerConcurrencyTargetFraction, c.ContainerConcurrencyTargetDefault = 0.5, 40
		},
		want: func(s *Settings) { s.TotalValue, s.Target = 40, 20 },
	}, {
		name: "window annotation, panic window 10 %",
		ann:  map[string]string{g + "window": "30s"},
		want: func(s *Settings) { s.StableWindow, s.PanicWindow = 30*time.Second, 3*time.Second },
	}, {
		name: "panic window rounds to the second: 15s × 10 % = 1.5s → 2s",
		ann:  map[string]string{g + "window": "15s"},
		want: func(s *Settings) { s.StableWindow, s.PanicWindow = 15*time.Second, 2*time.Second },
	}, {
		name: "panic window is at least 1s: 6s × 1 % = 0.06s → 1s",
		ann:  map[string]string{g + "window": "6s", g + "panic-window-percentage": "1"},
		want: func(s *Settings) { s.StableWindow, s.PanicWindow = 6*time.Second, time.Second },
	}, {
		name: "legacy panicWindowPercentage and panicThresholdPercentage",
		ann:  map[string]string{g + "panicWindowPercentage": "25", g + "panicThresholdPercentage": "300"},
		want: func(s *Settings) { s.PanicWindow, s.PanicThreshold = 15*time.Second, 3 }, // 60s × 25 %
	}, {
		name: "panic-threshold-percentage",
		ann:  map[string]string{g + "panic-threshold-percentage": "150"},
		want: func(s *Settings) { s.PanicThreshold = 1.5 },
	}, {
		name: "config windows",
		cfg: func(c *config.Autoscaler) {
			c.StableWindow, c.PanicWindowPercentage, c.PanicThresholdPercentage = 120*time.Second, 5, 400
		},
		want: func(s *Settings) { s.StableWindow, s.PanicWindow, s.PanicThreshold = 120*time.Second, 6*time.Second, 4 },
	}, {
		name: "scale bounds, kebab",
		ann:  map[string]string{g + "min-scale": "2", g + "max-scale": "5", g + "initial-scale": "3"},
		want: func(s *Settings) { s.MinScale, s.MaxScale, s.InitialScale = 2, 5, 3 },
	}, {
		name: "scale bounds, legacy",
		ann:  map[string]string{g + "minScale": "2", g + "maxScale": "5", g + "initialScale": "3"},
		want: func(s *Settings) { s.MinScale, s.MaxScale, s.InitialScale = 2, 5, 3 },
	}, {
		name: "scale bounds, kebab wins",
		ann:  map[string]string{g + "min-scale": "1", g + "minScale": "2", g + "max-scale": "4", g + "maxScale": "5"},
		want: func(s *Settings) { s.MinScale, s.MaxScale = 1, 4 },
	}, {
		name: "config bounds",
		cfg:  func(c *config.Autoscaler) { c.MinScale, c.MaxScale, c.InitialScale = 1, 9, 2 },
		want: func(s *Settings) { s.MinScale, s.MaxScale, s.InitialScale = 1, 9, 2 },
	}, {
		name: "initial-scale 0 refused unless allowed",
		ann:  map[string]string{g + "initial-scale": "0"},
		want: func(*Settings) {}, // config's 1
	}, {
		name: "initial-scale 0 allowed",
		cfg:  func(c *config.Autoscaler) { c.AllowZeroInitialScale = true },
		ann:  map[string]string{g + "initial-scale": "0"},
		want: func(s *Settings) { s.InitialScale = 0 },
	}, {
		name: "unparsable min-scale falls back to config",
		cfg:  func(c *config.Autoscaler) { c.MinScale = 1 },
		ann:  map[string]string{g + "min-scale": "two"},
		want: func(s *Settings) { s.MinScale = 1 },
	}, {
		name: "activation-scale",
		ann:  map[string]string{g + "activation-scale": "3"},
		want: func(s *Settings) { s.ActivationScale = 3 },
	}, {
		name: "activation-scale 1 is none",
		ann:  map[string]string{g + "activation-scale": "1"},
		want: func(*Settings) {},
	}, {
		name: "scale-down-delay and pod retention, kebab",
		ann:  map[string]string{g + "scale-down-delay": "10s", g + "scale-to-zero-pod-retention-period": "1m"},
		want: func(s *Settings) { s.ScaleDownDelay, s.PodRetention = 10*time.Second, time.Minute },
	}, {
		name: "scale-down-delay and pod retention, legacy",
		ann:  map[string]string{g + "scaleDownDelay": "20s", g + "scaleToZeroPodRetentionPeriod": "2m"},
		want: func(s *Settings) { s.ScaleDownDelay, s.PodRetention = 20*time.Second, 2*time.Minute },
	}, {
		name: "config delay, retention, grace, scale to zero",
		cfg: func(c *config.Autoscaler) {
			c.ScaleDownDelay, c.ScaleToZeroPodRetentionPeriod, c.ScaleToZeroGracePeriod, c.EnableScaleToZero = 5*time.Second, 7*time.Second, 9*time.Second, false
		},
		want: func(s *Settings) {
			s.ScaleDownDelay, s.PodRetention, s.ScaleToZeroGracePeriod, s.EnableScaleToZero = 5*time.Second, 7*time.Second, 9*time.Second, false
		},
	}, {
		name: "target-burst-capacity -1",
		ann:  map[string]string{g + "target-burst-capacity": "-1"},
		want: func(s *Settings) { s.TargetBurstCapacity = -1 },
	}, {
		name: "legacy targetBurstCapacity",
		ann:  map[string]string{g + "targetBurstCapacity": "0"},
		want: func(s *Settings) { s.TargetBurstCapacity = 0 },
	}, {
		name: "weighted-exponential aggregation",
		ann:  map[string]string{g + "metric-aggregation-algorithm": "weighted-exponential"},
		want: func(s *Settings) { s.Aggregation = AggregationWeighted },
	}, {
		name: "legacy key and camelCase value",
		ann:  map[string]string{g + "metricAggregationAlgorithm": "weightedExponential"},
		want: func(s *Settings) { s.Aggregation = AggregationWeighted },
	}, {
		name: "config rates and burst capacity",
		cfg:  func(c *config.Autoscaler) { c.MaxScaleUpRate, c.MaxScaleDownRate, c.TargetBurstCapacity = 10, 4, 50 },
		want: func(s *Settings) { s.MaxScaleUpRate, s.MaxScaleDownRate, s.TargetBurstCapacity = 10, 4, 50 },
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.DefaultAutoscaler()
			if tt.cfg != nil {
				tt.cfg(cfg)
			}
			want := defaults()
			tt.want(&want)
			if got := SettingsFor(cfg, tt.ann, tt.cc); got != want {
				t.Errorf("SettingsFor =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestSettingsForNilConfig(t *testing.T) {
	if got, want := SettingsFor(nil, nil, 0), defaults(); got != want {
		t.Errorf("SettingsFor(nil) =\n%+v\nwant\n%+v", got, want)
	}
}
