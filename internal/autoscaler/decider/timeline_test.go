package decider

import (
	"testing"
	"time"
)

// revision plays the KPA reconciler for one Revision over a timeline: a Window,
// a State, the PodAutoscaler's Activity, and a Deployment whose pods are ready the
// moment they are asked for.
type revision struct {
	set     Settings
	w       Window
	st      State
	act     Activity
	since   time.Time
	current int32
	scaled  []scaleEvent
}

type scaleEvent struct {
	at    float64
	scale int32
	act   Activity
}

func (r *revision) tick(sec float64) {
	now := at(sec)
	d := r.st.Decide(r.set, now, r.current, true, r.w.Average(now, r.set.StableWindow), r.w.Average(now, r.set.PanicWindow))
	res := Scale(ScaleInput{
		Settings: r.set, Desired: d.DesiredPods, Current: r.current, Ready: r.current,
		Reachable: true, Initialized: true, Activity: r.act, Since: r.since,
		ActivationTimeout: activationTimeout, Now: now,
	})
	if res.Activity != r.act {
		r.act, r.since = res.Activity, now
	}
	if res.Scale >= 0 {
		r.current = res.Scale
		r.scaled = append(r.scaled, scaleEvent{sec, res.Scale, res.Activity})
		if res.Scale == 0 {
			r.w.Reset() // at zero: the next request starts a fresh partial window
		}
	}
}

func TestTimelineToZeroAndBack(t *testing.T) {
	for _, tt := range []struct {
		name      string
		retention time.Duration
		want      []scaleEvent
	}{{
		// Load in seconds 0..9. The stable window (s−60, s] last holds second 9 at
		// s=68; at s=70 the average is 0, desired 0, and the Revision has been
		// Active for 70s ≥ 60s: Inactive and zero at once. The request at 150 is
		// averaged alone after the Reset: 35/1 → ceil(35/70) = 1, no pod ready:
		// Activating. The pod is ready by the next tick: Active, no write.
		name: "no retention",
		want: []scaleEvent{{70, 0, Inactive}, {150, 1, Activating}},
	}, {
		name:      "30s retention",
		retention: 30 * time.Second,
		want:      []scaleEvent{{100, 0, Inactive}, {150, 1, Activating}},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			r := &revision{set: defaults(), act: Active, since: t0, current: 1}
			r.set.PodRetention = tt.retention
			for s := 0.0; s <= 200; s += 2 {
				if s < 10 {
					r.w.Record(at(s), 1)
					r.w.Record(at(s+1), 1)
				}
				if s == 150 {
					r.w.Record(at(s), 35)
				}
				r.tick(s)
			}
			if len(r.scaled) != len(tt.want) {
				t.Fatalf("scale writes %+v, want %+v", r.scaled, tt.want)
			}
			for i := range tt.want {
				if r.scaled[i] != tt.want[i] {
					t.Errorf("scale write %d = %+v, want %+v", i, r.scaled[i], tt.want[i])
				}
			}
			// At 200 the window holds 35 over the 51 seconds since 150: 1 pod.
			if r.act != Active || r.since != at(152) || r.current != 1 {
				t.Errorf("at 200s: %s since %v with %d pods, want Active since 152s with 1", r.act, r.since.Sub(t0), r.current)
			}
		})
	}
}

func TestTimelineBurstFromOnePod(t *testing.T) {
	// One pod, target 70, first Record at 0. A burst of 700 in flight from second
	// 10 on. At s=10 the panic window (4, 10] averages 700/6 = 116.7: dppc 2,
	// 2/1 ≥ 2, panic. The stable window, since the first Record, averages
	// (1+700)/11 = 63.7: dspc 1. Desired max(1, 2) = 2.
	r := &revision{set: defaults(), act: Active, since: t0, current: 1}
	r.w.Record(at(0), 1)
	for s := 10.0; s <= 12; s++ {
		r.w.Record(at(s), 700)
	}
	r.tick(10)
	if r.current != 2 || !r.st.Panicking() {
		t.Fatalf("at 10s: %d pods, panicking %v; want 2, true", r.current, r.st.Panicking())
	}
	// s=12: panic (6, 12] = 2100/6 = 350, dppc 5, 5/2 ≥ 2: 5 pods.
	r.tick(12)
	if r.current != 5 {
		t.Fatalf("at 12s: %d pods, want 5", r.current)
	}
}
