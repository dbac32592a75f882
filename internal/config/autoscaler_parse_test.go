package config

import (
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestAutoscalerExample: the _example block of config/configmaps/autoscaler.yaml, used
// as data, documents every key with its default.
func TestAutoscalerExample(t *testing.T) {
	raw, err := os.ReadFile("../../config/configmaps/autoscaler.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c corev1.ConfigMap
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	if c.Name != AutoscalerConfigName || c.Namespace != SystemNamespace {
		t.Errorf("ConfigMap %s/%s", c.Namespace, c.Name)
	}
	var data map[string]string
	if err := yaml.Unmarshal([]byte(c.Data[ExampleKey]), &data); err != nil {
		t.Fatal(err)
	}
	if len(data) != 20 {
		t.Errorf("%d keys in _example, want Knative's 20", len(data))
	}
	got, err := NewAutoscalerFromConfigMap(cm(AutoscalerConfigName, data))
	if err != nil {
		t.Fatal(err)
	}
	if *got != *DefaultAutoscaler() {
		t.Errorf("_example as data = %+v, want the defaults", got)
	}
}

func TestNewAutoscalerFromConfigMap(t *testing.T) {
	isDefault := func(a *Autoscaler) bool { return *a == *DefaultAutoscaler() }
	runParse(t, NewAutoscalerFromConfigMap, AutoscalerConfigName, []parseCase[Autoscaler]{
		{name: "empty is the defaults", check: isDefault},
		{name: "example only", data: map[string]string{ExampleKey: "stable-window: x"}, check: isDefault},
		{name: "Knative's example values are the defaults", data: map[string]string{
			"container-concurrency-target-percentage": "70", "container-concurrency-target-default": "100",
			"requests-per-second-target-default": "200", "target-burst-capacity": "211", "stable-window": "60s",
			"panic-window-percentage": "10.0", "panic-threshold-percentage": "200.0", "max-scale-up-rate": "1000.0",
			"max-scale-down-rate": "2.0", "enable-scale-to-zero": "true", "scale-to-zero-grace-period": "30s",
			"scale-to-zero-pod-retention-period": "0s", "pod-autoscaler-class": "kpa.autoscaling.knative.dev",
			"activator-capacity": "100.0", "initial-scale": "1", "allow-zero-initial-scale": "false", "min-scale": "0",
			"max-scale": "0", "scale-down-delay": "0s", "max-scale-limit": "0"},
			check: isDefault},
		{name: "all set", data: map[string]string{
			"container-concurrency-target-percentage": "80", "container-concurrency-target-default": "10",
			"requests-per-second-target-default": "50", "target-burst-capacity": "-1", "stable-window": "2m",
			"panic-window-percentage": "20", "panic-threshold-percentage": "300", "max-scale-up-rate": "10",
			"max-scale-down-rate": "4", "enable-scale-to-zero": "false", "scale-to-zero-grace-period": "45s",
			"scale-to-zero-pod-retention-period": "1m", "pod-autoscaler-class": " hpa.autoscaling.knative.dev ",
			"activator-capacity": "50", "initial-scale": "0", "allow-zero-initial-scale": "true", "min-scale": "2",
			"max-scale": "10", "scale-down-delay": "15s", "max-scale-limit": "20"},
			check: func(a *Autoscaler) bool {
				return *a == Autoscaler{
					EnableScaleToZero: false, ContainerConcurrencyTargetFraction: 0.8, ContainerConcurrencyTargetDefault: 10,
					RPSTargetDefault: 50, TargetUtilization: 0.7, TargetBurstCapacity: -1, ActivatorCapacity: 50,
					StableWindow: 2 * time.Minute, PanicWindowPercentage: 20, PanicThresholdPercentage: 300,
					MaxScaleUpRate: 10, MaxScaleDownRate: 4, ScaleToZeroGracePeriod: 45 * time.Second,
					ScaleToZeroPodRetentionPeriod: time.Minute, ScaleDownDelay: 15 * time.Second,
					InitialScale: 0, AllowZeroInitialScale: true, MinScale: 2, MaxScale: 10, MaxScaleLimit: 20,
					PodAutoscalerClass: "hpa.autoscaling.knative.dev",
				}
			}},
		{name: "percentage at most 1 is a fraction", data: map[string]string{"container-concurrency-target-percentage": "0.5"},
			check: func(a *Autoscaler) bool { return a.ContainerConcurrencyTargetFraction == 0.5 }},
		{name: "percentage 1 is 100%", data: map[string]string{"container-concurrency-target-percentage": "1"},
			check: func(a *Autoscaler) bool { return a.ContainerConcurrencyTargetFraction == 1 }},
		{name: "percentage 100", data: map[string]string{"container-concurrency-target-percentage": "100"},
			check: func(a *Autoscaler) bool { return a.ContainerConcurrencyTargetFraction == 1 }},
		{name: "percentage 1.5 is 1.5%", data: map[string]string{"container-concurrency-target-percentage": "1.5"},
			check: func(a *Autoscaler) bool { return a.ContainerConcurrencyTargetFraction == 0.015 }},
		{name: "stable-window bounds", data: map[string]string{"stable-window": "6s"},
			check: func(a *Autoscaler) bool { return a.StableWindow == 6*time.Second }},
		{name: "stable-window upper bound", data: map[string]string{"stable-window": "1h"},
			check: func(a *Autoscaler) bool { return a.StableWindow == time.Hour }},
		{name: "max-scale at the limit", data: map[string]string{"max-scale": "5", "max-scale-limit": "5"},
			check: func(a *Autoscaler) bool { return a.MaxScale == 5 && a.MaxScaleLimit == 5 }},
		{name: "min-scale with unlimited max-scale", data: map[string]string{"min-scale": "7"},
			check: func(a *Autoscaler) bool { return a.MinScale == 7 }},
		{name: "panic-threshold-percentage is not range-checked", data: map[string]string{"panic-threshold-percentage": "50"},
			check: func(a *Autoscaler) bool { return a.PanicThresholdPercentage == 50 }},
		{name: "any class string", data: map[string]string{"pod-autoscaler-class": "custom.example.com"},
			check: func(a *Autoscaler) bool { return a.PodAutoscalerClass == "custom.example.com" }},

		// Values that do not parse.
		{name: "bad float", data: map[string]string{"max-scale-up-rate": "fast"}, wantErr: "max-scale-up-rate"},
		{name: "empty float", data: map[string]string{"requests-per-second-target-default": ""}, wantErr: "requests-per-second-target-default"},
		{name: "NaN", data: map[string]string{"max-scale-down-rate": "NaN"}, wantErr: "max-scale-down-rate"},
		{name: "bad percentage", data: map[string]string{"container-concurrency-target-percentage": "70%"}, wantErr: "container-concurrency-target-percentage"},
		{name: "bad concurrency default", data: map[string]string{"container-concurrency-target-default": "x"}, wantErr: "container-concurrency-target-default"},
		{name: "bad burst", data: map[string]string{"target-burst-capacity": "lots"}, wantErr: "target-burst-capacity"},
		{name: "bad panic window", data: map[string]string{"panic-window-percentage": "ten"}, wantErr: "panic-window-percentage"},
		{name: "bad panic threshold", data: map[string]string{"panic-threshold-percentage": "2x"}, wantErr: "panic-threshold-percentage"},
		{name: "bad activator capacity", data: map[string]string{"activator-capacity": "-"}, wantErr: "activator-capacity"},
		{name: "bad bool", data: map[string]string{"enable-scale-to-zero": "yes"}, wantErr: "enable-scale-to-zero"},
		{name: "empty bool", data: map[string]string{"allow-zero-initial-scale": ""}, wantErr: "allow-zero-initial-scale"},
		{name: "bad int", data: map[string]string{"initial-scale": "1.5"}, wantErr: "initial-scale"},
		{name: "int out of range", data: map[string]string{"max-scale": "3000000000"}, wantErr: "max-scale"},
		{name: "bad min-scale", data: map[string]string{"min-scale": "one"}, wantErr: "min-scale"},
		{name: "bad max-scale-limit", data: map[string]string{"max-scale-limit": "none"}, wantErr: "max-scale-limit"},
		{name: "bare number is no duration", data: map[string]string{"stable-window": "60"}, wantErr: "stable-window"},
		{name: "bad scale-down-delay", data: map[string]string{"scale-down-delay": "soon"}, wantErr: "scale-down-delay"},
		{name: "bad grace period", data: map[string]string{"scale-to-zero-grace-period": "30"}, wantErr: "scale-to-zero-grace-period"},
		{name: "bad retention", data: map[string]string{"scale-to-zero-pod-retention-period": "x"}, wantErr: "scale-to-zero-pod-retention-period"},

		// Values out of range.
		{name: "grace period zero", data: map[string]string{"scale-to-zero-grace-period": "0s"}, wantErr: "scale-to-zero-grace-period must be positive"},
		{name: "scale-down-delay negative", data: map[string]string{"scale-down-delay": "-1s"}, wantErr: "scale-down-delay cannot be negative"},
		{name: "scale-down-delay fraction", data: map[string]string{"scale-down-delay": "1500ms"}, wantErr: "scale-down-delay = 1.5s, must be specified with at most second precision"},
		{name: "retention negative", data: map[string]string{"scale-to-zero-pod-retention-period": "-1s"}, wantErr: "scale-to-zero-pod-retention-period cannot be negative"},
		{name: "burst -2", data: map[string]string{"target-burst-capacity": "-2"}, wantErr: "target-burst-capacity must be either non-negative or -1"},
		{name: "percentage zero", data: map[string]string{"container-concurrency-target-percentage": "0"}, wantErr: "container-concurrency-target-percentage = 0 is outside of valid range of (0, 100]"},
		{name: "percentage negative", data: map[string]string{"container-concurrency-target-percentage": "-5"}, wantErr: "container-concurrency-target-percentage"},
		{name: "percentage above 100", data: map[string]string{"container-concurrency-target-percentage": "101"}, wantErr: "container-concurrency-target-percentage"},
		{name: "target concurrency too small", data: map[string]string{"container-concurrency-target-default": "0.01"},
			wantErr: "container-concurrency-target-percentage and container-concurrency-target-default yield target concurrency of"},
		{name: "concurrency default zero", data: map[string]string{"container-concurrency-target-default": "0"}, wantErr: "container-concurrency-target-default"},
		{name: "rps target too small", data: map[string]string{"requests-per-second-target-default": "0.001"}, wantErr: "requests-per-second-target-default must be at least 0.01"},
		{name: "activator capacity below 1", data: map[string]string{"activator-capacity": "0.5"}, wantErr: "activator-capacity = 0.5, must be at least 1"},
		{name: "scale-up rate 1", data: map[string]string{"max-scale-up-rate": "1"}, wantErr: "max-scale-up-rate = 1, must be greater than 1.0"},
		{name: "scale-down rate 1", data: map[string]string{"max-scale-down-rate": "1.0"}, wantErr: "max-scale-down-rate = 1, must be greater than 1.0"},
		{name: "stable-window under 6s", data: map[string]string{"stable-window": "5s"}, wantErr: "stable-window = 5s, must be in [6s; 1h0m0s] range"},
		{name: "stable-window over 1h", data: map[string]string{"stable-window": "61m"}, wantErr: "stable-window"},
		{name: "stable-window fraction", data: map[string]string{"stable-window": "6500ms"}, wantErr: "stable-window = 6.5s, must be specified with at most second precision"},
		{name: "panic window below 1", data: map[string]string{"panic-window-percentage": "0.5"}, wantErr: "panic-window-percentage = 0.5, must be in [1, 100] interval"},
		{name: "panic window above 100", data: map[string]string{"panic-window-percentage": "101"}, wantErr: "panic-window-percentage"},
		{name: "initial-scale zero not allowed", data: map[string]string{"initial-scale": "0"}, wantErr: "initial-scale = 0, must be at least 0 (or at least 1 when allow-zero-initial-scale is false)"},
		{name: "initial-scale negative even when zero is allowed", data: map[string]string{"initial-scale": "-1", "allow-zero-initial-scale": "true"}, wantErr: "initial-scale"},
		{name: "min-scale negative", data: map[string]string{"min-scale": "-1"}, wantErr: "min-scale = -1, must be at least 0"},
		{name: "max-scale negative", data: map[string]string{"max-scale": "-1"}, wantErr: "max-scale = -1, must be in [0, max-scale-limit(0)] range"},
		{name: "unlimited max-scale with a limit", data: map[string]string{"max-scale-limit": "10"}, wantErr: "max-scale = 0, must be in [1, max-scale-limit(10)] range"},
		{name: "max-scale above the limit", data: map[string]string{"max-scale": "11", "max-scale-limit": "10"}, wantErr: "max-scale = 11"},
		{name: "max-scale-limit negative", data: map[string]string{"max-scale-limit": "-1"}, wantErr: "max-scale-limit = -1, must be at least 0"},
		{name: "min-scale above max-scale", data: map[string]string{"min-scale": "4", "max-scale": "3"}, wantErr: "min-scale (4) must be less than max-scale (3)"},
	})
}
