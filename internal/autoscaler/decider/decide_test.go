package decider

import (
	"testing"
	"time"
)

// decideBase: target 10 per pod, total 20 (for the burst capacity), Knative's
// rates, threshold and windows, TBC 0.
func decideBase() Settings {
	return Settings{
		Metric:           MetricConcurrency,
		TotalValue:       20,
		Target:           10,
		StableWindow:     60 * time.Second,
		PanicWindow:      6 * time.Second,
		PanicThreshold:   2,
		MaxScaleUpRate:   1000,
		MaxScaleDownRate: 2,
	}
}

func TestDecideOnce(t *testing.T) {
	tests := []struct {
		name           string
		set            func(*Settings)
		ready          int32
		unreachable    bool
		stable, panic_ float64
		want           int32
		panicking      bool
		ebc            int32
	}{{
		name:  "stable: ceil(45/10) = 5, 5/5 under the threshold",
		ready: 5, stable: 45, panic_: 45,
		want: 5,
	}, {
		name:  "scale up in stable mode: ceil(35/10) = 4, 4/3 < 2",
		ready: 3, stable: 35, panic_: 35,
		want: 4,
	}, {
		name:  "panic: dppc 5, 5/2 ≥ 2, max(stable 2, panic 5)",
		ready: 2, stable: 20, panic_: 50,
		want: 5, panicking: true,
	}, {
		name:  "panic threshold is inclusive: dppc ceil(39/10) = 4, 4/2 = 2",
		ready: 2, stable: 20, panic_: 39,
		want: 4, panicking: true,
	}, {
		name:  "just under the threshold: dppc 3, 3/2 = 1.5; desired is stable",
		ready: 2, stable: 20, panic_: 30,
		want: 2,
	}, {
		name:  "panic threshold from settings: 5/2 = 2.5 < 3",
		set:   func(s *Settings) { s.PanicThreshold = 3 },
		ready: 2, stable: 20, panic_: 50,
		want: 2,
	}, {
		name:  "stable above panic while panicking: max(8, 5)",
		ready: 2, stable: 80, panic_: 50,
		want: 8, panicking: true,
	}, {
		name:  "max scale-up rate: dspc 10 capped at ceil(2 × 3) = 6",
		set:   func(s *Settings) { s.MaxScaleUpRate = 2 },
		ready: 3, stable: 100,
		want: 6,
	}, {
		name:  "max scale-up rate rounds up: ceil(1.1 × 3) = 4, so it always grows by one",
		set:   func(s *Settings) { s.MaxScaleUpRate = 1.1 },
		ready: 3, stable: 100,
		want: 4,
	}, {
		name:  "max scale-down rate: dspc 1 floored at floor(10/2) = 5",
		ready: 10, stable: 10,
		want: 5,
	}, {
		name:  "max scale-down rate 3: floor(10/3) = 3",
		set:   func(s *Settings) { s.MaxScaleDownRate = 3 },
		ready: 10, stable: 10,
		want: 3,
	}, {
		name:  "unreachable: no scale-down bound, dspc 1",
		ready: 10, stable: 10, unreachable: true,
		want: 1,
	}, {
		name:  "unreachable with no load: straight to 0",
		ready: 10, unreachable: true,
		want: 0,
	}, {
		name:  "reachable with one pod and no load: floor(1/2) = 0",
		ready: 1,
		want:  0,
	}, {
		name:  "no ready pod counts as one: dspc 3, dppc 3, 3/1 ≥ 2",
		ready: 0, stable: 25, panic_: 25,
		want: 3, panicking: true,
	}, {
		name:  "no ready pod, no load",
		ready: 0,
		want:  0,
	}, {
		name:  "activation-scale raises a stable wake-up: dspc 1 → 3",
		set:   func(s *Settings) { s.ActivationScale = 3 },
		ready: 0, stable: 1, panic_: 1,
		want: 3,
	}, {
		name:  "activation-scale is only a floor: dspc 5",
		set:   func(s *Settings) { s.ActivationScale = 3 },
		ready: 0, stable: 50, panic_: 10, // dppc 1, 1/1 < 2
		want: 5,
	}, {
		name:  "activation-scale does not wake a Revision with no load",
		set:   func(s *Settings) { s.ActivationScale = 3 },
		ready: 0,
		want:  0,
	}, {
		name:  "activation-scale raises the panic count: dppc 3 → 5, panicking, stable 0",
		set:   func(s *Settings) { s.ActivationScale = 5 },
		ready: 1, stable: 0, panic_: 25,
		want: 5, panicking: true,
	}, {
		name:  "target floor: a zero target is read as 0.01, ceil(0.05/0.01) = 5",
		set:   func(s *Settings) { s.Target = 0 },
		ready: 5, stable: 0.05, panic_: 0.05,
		want: 5,
	}, {
		name:  "burst capacity: floor(3 × 20 − 15 − 12.5) = 32",
		set:   func(s *Settings) { s.TargetBurstCapacity = 15 },
		ready: 3, stable: 12.5, panic_: 12.5,
		want: 2, ebc: 32, // floor(3/2) = 1 < ceil(1.25) = 2
	}, {
		name:  "burst capacity short: floor(1 × 100 − 211 − 0.5) = −112",
		set:   func(s *Settings) { s.TargetBurstCapacity, s.TotalValue, s.Target = 211, 100, 70 },
		ready: 1, stable: 0.5, panic_: 0.5,
		want: 1, ebc: -112,
	}, {
		name:  "burst capacity uses the real ready count: 0 × 20 − 10 − 0 = −10",
		set:   func(s *Settings) { s.TargetBurstCapacity = 10 },
		ready: 0,
		want:  0, ebc: -10,
	}, {
		name:  "TBC -1: EBC -1",
		set:   func(s *Settings) { s.TargetBurstCapacity = -1 },
		ready: 5, stable: 10, panic_: 10,
		want: 2, ebc: -1, // dspc 1 floored at floor(5/2) = 2
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := decideBase()
			if tt.set != nil {
				tt.set(&set)
			}
			var s State
			got := s.Decide(set, t0, tt.ready, !tt.unreachable, tt.stable, tt.panic_)
			want := Decision{DesiredPods: tt.want, ExcessBurstCapacity: tt.ebc, Panicking: tt.panicking, StableValue: tt.stable, PanicValue: tt.panic_}
			if got != want {
				t.Errorf("Decide = %+v, want %+v", got, want)
			}
		})
	}
}

// tick is one Decide in a sequence.
type tick struct {
	at             float64
	ready          int32
	stable, panic_ float64
	want           int32
	panicking      bool
}

func runTicks(t *testing.T, s *State, set Settings, reachable bool, ticks []tick) {
	t.Helper()
	for _, tk := range ticks {
		got := s.Decide(set, at(tk.at), tk.ready, reachable, tk.stable, tk.panic_)
		if got.DesiredPods != tk.want || got.Panicking != tk.panicking {
			t.Errorf("t=%vs: desired %d panicking %v, want %d %v", tk.at, got.DesiredPods, got.Panicking, tk.want, tk.panicking)
		}
	}
}

func TestDecidePanicMode(t *testing.T) {
	var s State
	runTicks(t, &s, decideBase(), true, []tick{
		// Enter: dppc 5, 5/2 ≥ 2.
		{at: 0, ready: 2, stable: 20, panic_: 50, want: 5, panicking: true},
		// The load falls: dspc 3, dppc 3, 3/5 < 2; still panicking (0+60 > 10),
		// and no scale-down while panicking: 5.
		{at: 10, ready: 5, stable: 30, panic_: 30, want: 5, panicking: true},
		// Extend: dppc 10, 10/5 = 2: panic from t=20, 10 pods.
		{at: 20, ready: 5, stable: 30, panic_: 100, want: 10, panicking: true},
		// t=61 would have ended a panic that started at 0; this one was last over
		// the threshold at 20.
		{at: 61, ready: 10, stable: 30, panic_: 30, want: 10, panicking: true},
		// 20+60 = 80 is not before 80.
		{at: 80, ready: 10, stable: 30, panic_: 30, want: 10, panicking: true},
		// 80 < 81: leave; stable dspc 3 floored at floor(10/2) = 5.
		{at: 81, ready: 10, stable: 30, panic_: 30, want: 5},
	})
}

func TestDecidePanicRatchetRestartsAfterLeaving(t *testing.T) {
	var s State
	runTicks(t, &s, decideBase(), true, []tick{
		{at: 0, ready: 1, stable: 10, panic_: 80, want: 8, panicking: true}, // 8/1 ≥ 2
		{at: 61, ready: 8, stable: 10, panic_: 10, want: 4},                 // left: max(1, floor(8/2))
		// A new panic starts from its own floor, not 8: dppc 10, 10/4 ≥ 2.
		{at: 62, ready: 4, stable: 10, panic_: 100, want: 10, panicking: true},
		{at: 63, ready: 10, stable: 10, panic_: 10, want: 10, panicking: true},
	})
}

func TestNewState(t *testing.T) {
	t.Run("more than one ready pod: panicking with them as the floor", func(t *testing.T) {
		s := NewState(t0, 5)
		if !s.Panicking() {
			t.Fatal("NewState(5) is not panicking")
		}
		runTicks(t, &s, decideBase(), true, []tick{
			// No history yet: averages 0, but the floor is the 5 running pods.
			{at: 2, ready: 5, want: 5, panicking: true},
			{at: 60, ready: 5, want: 5, panicking: true},
			// 0+60 < 61: leave; floor(5/2) = 2.
			{at: 61, ready: 5, want: 2},
		})
	})
	t.Run("one ready pod: a fresh State", func(t *testing.T) {
		s := NewState(t0, 1)
		if s.Panicking() {
			t.Fatal("NewState(1) is panicking")
		}
		runTicks(t, &s, decideBase(), true, []tick{{at: 2, ready: 1, want: 0}})
	})
}

func TestDecideScaleDownDelay(t *testing.T) {
	set := decideBase()
	set.ScaleDownDelay = 10 * time.Second
	t.Run("reachable: the max of the last 10s", func(t *testing.T) {
		var s State
		runTicks(t, &s, set, true, []tick{
			{at: 0, ready: 5, stable: 50, panic_: 50, want: 5},
			{at: 4, ready: 5, stable: 30, panic_: 30, want: 5},  // 3, held at 5
			{at: 8, ready: 5, stable: 20, panic_: 20, want: 5},  // 2, held at 5
			{at: 10, ready: 5, stable: 20, panic_: 20, want: 3}, // t=0 left (0, 10]: max(3, 2, 2)
			{at: 14, ready: 5, stable: 10, panic_: 10, want: 2}, // t=4 left: 2s only (1 floored at floor(5/2) = 2)
			{at: 15, ready: 5, stable: 70, panic_: 70, want: 7}, // increases are immediate
			{at: 16, ready: 7, stable: 40, panic_: 40, want: 7}, // 4, held
		})
		if got := len(s.recent); got != 2 {
			t.Errorf("remembers %d decisions, want 2 (7@15, 4@16)", got)
		}
	})
	t.Run("unreachable: no delay", func(t *testing.T) {
		var s State
		runTicks(t, &s, set, false, []tick{
			{at: 0, ready: 5, stable: 50, panic_: 50, want: 5},
			{at: 4, ready: 5, stable: 30, panic_: 30, want: 3},
		})
	})
	t.Run("no delay configured", func(t *testing.T) {
		var s State
		runTicks(t, &s, decideBase(), true, []tick{
			{at: 0, ready: 5, stable: 50, panic_: 50, want: 5},
			{at: 4, ready: 5, stable: 30, panic_: 30, want: 3},
		})
	})
}

func TestDecideRatesNotSet(t *testing.T) {
	// Zero rates are read as no limit: dspc 1000 with one pod, no floor at 10 pods.
	var s State
	set := Settings{Target: 1, PanicThreshold: 1e9, StableWindow: time.Minute}
	if got := s.Decide(set, t0, 1, true, 1000, 0).DesiredPods; got != 1000 {
		t.Errorf("desired %d, want 1000", got)
	}
	if got := s.Decide(set, t0, 10, true, 1, 0).DesiredPods; got != 1 {
		t.Errorf("desired %d, want 1", got)
	}
}
