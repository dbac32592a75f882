package decider

import (
	"testing"
	"time"
)

// BenchmarkDecide is what one decider tick costs per Revision: the stable and
// panic averages, Decide and Scale. The controller ticks every Revision every 2s;
// these numbers say what 1000 of them cost.
func BenchmarkDecide(b *testing.B) {
	set := SettingsFor(nil, nil, 0)
	tick := func(w *Window, st *State, now time.Time, ready int32) ScaleResult {
		d := st.Decide(set, now, ready, true, w.Average(now, set.StableWindow), w.Average(now, set.PanicWindow))
		return Scale(ScaleInput{
			Settings: set, Desired: d.DesiredPods, Current: ready, Ready: ready, Reachable: true,
			Initialized: true, Activity: Active, Since: t0, ActivationTimeout: activationTimeout, Now: now,
		})
	}

	b.Run("busy", func(b *testing.B) {
		// A Revision with load every second: a full 60-second window, one new
		// second recorded per tick.
		var w Window
		var st State
		for s := 0; s < 60; s++ {
			w.Record(at(float64(s)), 100)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			now := at(float64(60 + i))
			w.Record(now, 100)
			tick(&w, &st, now, 2)
		}
	})

	b.Run("idle", func(b *testing.B) {
		// A Revision the gateway has not reported for a while: an empty window.
		var w Window
		var st State
		w.Record(at(0), 1)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			tick(&w, &st, at(float64(3600+i)), 0)
		}
	})

	b.Run("1000-idle-revisions", func(b *testing.B) {
		ws := make([]Window, 1000)
		sts := make([]State, 1000)
		for i := range ws {
			ws[i].Record(at(0), 1)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			now := at(float64(3600 + 2*i))
			for j := range ws {
				tick(&ws[j], &sts[j], now, 0)
			}
		}
	})
}
