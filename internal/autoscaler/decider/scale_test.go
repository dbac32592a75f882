package decider

import (
	"testing"
	"time"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
)

const activationTimeout = 630 * time.Second // progress-deadline 600s + 30s

// scaleBase: a 60s stable window, initial-scale 1, scale to zero enabled, no
// retention, no min or max.
func scaleBase() Settings {
	s := defaults()
	return s
}

func TestScale(t *testing.T) {
	ago := func(sec float64) time.Time { return at(-sec) }
	tests := []struct {
		name string
		set  func(*Settings)
		in   ScaleInput // Settings, Now, ActivationTimeout and Reachable filled in unless set
		// unreachable flips in.Reachable
		unreachable bool
		want        ScaleResult
	}{
		// Rule 1: no data.
		{
			name: "no data, Active: leave alone",
			in:   ScaleInput{Desired: -1, Current: 2, Ready: 2, Initialized: true, Activity: Active, Since: ago(300)},
			want: ScaleResult{Scale: -1, Activity: Active, Initialized: true},
		}, {
			name: "no data, Inactive at zero: leave alone",
			in:   ScaleInput{Desired: -1, Current: 0, Ready: 0, Initialized: true, Activity: Inactive, Since: ago(300)},
			want: ScaleResult{Scale: -1, Activity: Inactive, Reason: av1alpha1.ReasonNoTraffic, Message: av1alpha1.MessageNoTraffic, Initialized: true},
		}, {
			name: "no data, Inactive with a retained pod stays Inactive",
			in:   ScaleInput{Desired: -1, Current: 1, Ready: 1, Initialized: true, Activity: Inactive, Since: ago(10)},
			want: ScaleResult{Scale: -1, Activity: Inactive, Reason: av1alpha1.ReasonNoTraffic, Message: av1alpha1.MessageNoTraffic, Initialized: true},
		}, {
			name: "no data, Active but no pod ready: Activating",
			in:   ScaleInput{Desired: -1, Current: 1, Ready: 0, Initialized: true, Activity: Active, Since: ago(300)},
			want: ScaleResult{Scale: -1, Activity: Activating, Reason: av1alpha1.ReasonQueued, Message: av1alpha1.MessageQueued, Initialized: true},
		}, {
			name: "no data, TimedOut stays",
			in:   ScaleInput{Desired: -1, Current: 0, Ready: 0, Activity: TimedOut, Since: ago(10)},
			want: ScaleResult{Scale: -1, Activity: TimedOut, Reason: av1alpha1.ReasonTimedOut, Message: av1alpha1.MessageTimedOut},
		}, {
			name: "no data, new PodAutoscaler: up to the initial scale",
			in:   ScaleInput{Desired: -1, Current: 0, Ready: 0},
			want: ScaleResult{Scale: 1, Activity: Activating, Reason: av1alpha1.ReasonQueued, Message: av1alpha1.MessageQueued, RequeueAfter: activationTimeout},
		}, {
			name: "no data, new PodAutoscaler with initial-scale 3",
			set:  func(s *Settings) { s.InitialScale = 3 },
			in:   ScaleInput{Desired: -1, Current: 1, Ready: 0},
			want: ScaleResult{Scale: 3, Activity: Activating, Reason: av1alpha1.ReasonQueued, Message: av1alpha1.MessageQueued, RequeueAfter: activationTimeout},
		}, {
			name: "no data, new PodAutoscaler with initial-scale 0: Inactive, nothing to do",
			set:  func(s *Settings) { s.InitialScale = 0 },
			in:   ScaleInput{Desired: -1, Current: 0, Ready: 0},
			want: ScaleResult{Scale: -1, Activity: Inactive, Reason: av1alpha1.ReasonNoTraffic, Message: av1alpha1.MessageNoTraffic, Initialized: true},
		}, {
			name: "no data while activating with pods starting: keep them until the timeout",
			in:   ScaleInput{Desired: -1, Current: 1, Ready: 0, Initialized: true, Activity: Activating, Since: ago(100)},
			want: ScaleResult{Scale: -1, Activity: Activating, Reason: av1alpha1.ReasonQueued, Message: av1alpha1.MessageQueued, Initialized: true, RequeueAfter: 530 * time.Second},
		},

		// Rule 2: bounds.
		{
			name: "max-scale caps: 7 → 5",
			set:  func(s *Settings) { s.MaxScale = 5 },
			in:   ScaleInput{Desired: 7, Current: 3, Ready: 3, Initialized: true, Activity: Active, Since: ago(300)},
			want: ScaleResult{Scale: 5, Activity: Active, Initialized: true},
		}, {
			name: "min-scale floors: 1 → 3",
			set:  func(s *Settings) { s.MinScale = 3 },
			in:   ScaleInput{Desired: 1, Current: 2, Ready: 2, Initialized: true, Activity: Active, Since: ago(300)},
			want: ScaleResult{Scale: 3, Activity: Active, Initialized: true},
		}, {
			name:        "min-scale is ignored when Unreachable",
			set:         func(s *Settings) { s.MinScale = 3 },
			unreachable: true,
			in:          ScaleInput{Desired: 1, Current: 3, Ready: 3, Initialized: true, Activity: Active, Since: ago(300)},
			want:        ScaleResult{Scale: 1, Activity: Active, Initialized: true},
		}, {
			name: "initial-scale floors until Initialized: 1 → 4 = Current, no write",
			set:  func(s *Settings) { s.InitialScale = 4 },
			in:   ScaleInput{Desired: 1, Current: 4, Ready: 2, Activity: Active, Since: ago(30)},
			want: ScaleResult{Scale: -1, Activity: Active}, // 2 < 4: not Initialized
		}, {
			name: "initial-scale reached: Initialized, the floor goes with the next decision",
			set:  func(s *Settings) { s.InitialScale = 4 },
			in:   ScaleInput{Desired: 1, Current: 4, Ready: 4, Activity: Active, Since: ago(30)},
			want: ScaleResult{Scale: -1, Activity: Active, Initialized: true},
		}, {
			name: "initial-scale no longer applies once Initialized",
			set:  func(s *Settings) { s.InitialScale = 4 },
			in:   ScaleInput{Desired: 1, Current: 4, Ready: 4, Initialized: true, Activity: Active, Since: ago(30)},
			want: ScaleResult{Scale: 1, Activity: Active, Initialized: true},
		}, {
			name: "Initialized waits for min-scale too: max(1, 3) = 3 > 2 ready",
			set:  func(s *Settings) { s.MinScale = 3 },
			in:   ScaleInput{Desired: 3, Current: 3, Ready: 2, Activity: Active, Since: ago(30)},
			want: ScaleResult{Scale: -1, Activity: Active},
		}, {
			name: "Initialized with min-scale reached",
			set:  func(s *Settings) { s.MinScale = 3 },
			in:   ScaleInput{Desired: 3, Current: 3, Ready: 3, Activity: Active, Since: ago(30)},
			want: ScaleResult{Scale: -1, Activity: Active, Initialized: true},
		}, {
			name: "enable-scale-to-zero false: 0 becomes 1",
			set:  func(s *Settings) { s.EnableScaleToZero = false },
			in:   ScaleInput{Desired: 0, Current: 3, Ready: 3, Initialized: true, Activity: Active, Since: ago(300)},
			want: ScaleResult{Scale: 1, Activity: Active, Initialized: true},
		}, {
			name: "enable-scale-to-zero false: already at 1, no write, stays Active",
			set:  func(s *Settings) { s.EnableScaleToZero = false },
			in:   ScaleInput{Desired: 0, Current: 1, Ready: 1, Initialized: true, Activity: Active, Since: ago(300)},
			want: ScaleResult{Scale: -1, Activity: Active, Initialized: true},
		},

		// Rule 3: scale to zero.
		{
			name: "0 while Active for 30s of a 60s window: hold, requeue after 30s",
			in:   ScaleInput{Desired: 0, Current: 1, Ready: 1, Initialized: true, Activity: Active, Since: ago(30)},
			want: ScaleResult{Scale: -1, Activity: Active, Initialized: true, RequeueAfter: 30 * time.Second},
		}, {
			name:        "the hold keeps the current scale, not 1",
			unreachable: true,
			in:          ScaleInput{Desired: 0, Current: 3, Ready: 3, Initialized: true, Activity: Active, Since: ago(10)},
			want:        ScaleResult{Scale: -1, Activity: Active, Initialized: true, RequeueAfter: 50 * time.Second},
		}, {
			name: "0 after a whole window Active: Inactive and zero at once (no grace period)",
			in:   ScaleInput{Desired: 0, Current: 1, Ready: 1, Initialized: true, Activity: Active, Since: ago(60)},
			want: ScaleResult{Scale: 0, Activity: Inactive, Reason: av1alpha1.ReasonNoTraffic, Message: av1alpha1.MessageNoTraffic, Initialized: true},
		}, {
			name: "with pod retention 40s: Inactive, keep the pod, requeue after 40s",
			set:  func(s *Settings) { s.PodRetention = 40 * time.Second },
			in:   ScaleInput{Desired: 0, Current: 1, Ready: 1, Initialized: true, Activity: Active, Since: ago(60)},
			want: ScaleResult{Scale: -1, Activity: Inactive, Reason: av1alpha1.ReasonNoTraffic, Message: av1alpha1.MessageNoTraffic, Initialized: true, RequeueAfter: 40 * time.Second},
		}, {
			name: "Inactive for 39s of a 40s retention: 1s to go",
			set:  func(s *Settings) { s.PodRetention = 40 * time.Second },
			in:   ScaleInput{Desired: 0, Current: 1, Ready: 1, Initialized: true, Activity: Inactive, Since: ago(39)},
			want: ScaleResult{Scale: -1, Activity: Inactive, Reason: av1alpha1.ReasonNoTraffic, Message: av1alpha1.MessageNoTraffic, Initialized: true, RequeueAfter: time.Second},
		}, {
			name: "Inactive for the whole retention: zero",
			set:  func(s *Settings) { s.PodRetention = 40 * time.Second },
			in:   ScaleInput{Desired: 0, Current: 1, Ready: 1, Initialized: true, Activity: Inactive, Since: ago(40)},
			want: ScaleResult{Scale: 0, Activity: Inactive, Reason: av1alpha1.ReasonNoTraffic, Message: av1alpha1.MessageNoTraffic, Initialized: true},
		}, {
			name:        "retention is ignored when Unreachable",
			set:         func(s *Settings) { s.PodRetention = 40 * time.Second },
			unreachable: true,
			in:          ScaleInput{Desired: 0, Current: 3, Ready: 3, Initialized: true, Activity: Active, Since: ago(600)},
			want:        ScaleResult{Scale: 0, Activity: Inactive, Reason: av1alpha1.ReasonNoTraffic, Message: av1alpha1.MessageNoTraffic, Initialized: true},
		}, {
			name: "Inactive at zero: nothing to write",
			in:   ScaleInput{Desired: 0, Current: 0, Ready: 0, Initialized: true, Activity: Inactive, Since: ago(600)},
			want: ScaleResult{Scale: -1, Activity: Inactive, Reason: av1alpha1.ReasonNoTraffic, Message: av1alpha1.MessageNoTraffic, Initialized: true},
		}, {
			name: "Active with no pod ready and no demand: Inactive at once",
			in:   ScaleInput{Desired: 0, Current: 1, Ready: 0, Initialized: true, Activity: Active, Since: ago(5)},
			want: ScaleResult{Scale: 0, Activity: Inactive, Reason: av1alpha1.ReasonNoTraffic, Message: av1alpha1.MessageNoTraffic, Initialized: true},
		}, {
			name: "pods came up after the demand left: Active, then a window",
			in:   ScaleInput{Desired: 0, Current: 1, Ready: 1, Initialized: true, Activity: Activating, Since: ago(20)},
			want: ScaleResult{Scale: -1, Activity: Active, Initialized: true, RequeueAfter: 60 * time.Second},
		}, {
			name: "Activating with nothing starting and no demand: Inactive",
			in:   ScaleInput{Desired: 0, Current: 0, Ready: 0, Initialized: true, Activity: Activating, Since: ago(20)},
			want: ScaleResult{Scale: -1, Activity: Inactive, Reason: av1alpha1.ReasonNoTraffic, Message: av1alpha1.MessageNoTraffic, Initialized: true},
		},

		// Rules 4 and 5: scale from zero, activation timeout, Active.
		{
			name: "a request for an Inactive Revision: Activating, scale 1",
			in:   ScaleInput{Desired: 1, Current: 0, Ready: 0, Initialized: true, Activity: Inactive, Since: ago(600)},
			want: ScaleResult{Scale: 1, Activity: Activating, Reason: av1alpha1.ReasonQueued, Message: av1alpha1.MessageQueued, Initialized: true, RequeueAfter: activationTimeout},
		}, {
			name: "still Activating after 100s: scale to the new desire, requeue at the timeout",
			in:   ScaleInput{Desired: 2, Current: 1, Ready: 0, Initialized: true, Activity: Activating, Since: ago(100)},
			want: ScaleResult{Scale: 2, Activity: Activating, Reason: av1alpha1.ReasonQueued, Message: av1alpha1.MessageQueued, Initialized: true, RequeueAfter: 530 * time.Second},
		}, {
			name: "Activating for the whole timeout: TimedOut, zero",
			in:   ScaleInput{Desired: 1, Current: 1, Ready: 0, Initialized: true, Activity: Activating, Since: ago(630)},
			want: ScaleResult{Scale: 0, Activity: TimedOut, Reason: av1alpha1.ReasonTimedOut, Message: av1alpha1.MessageTimedOut, Initialized: true},
		}, {
			name: "Activating, demand gone, pods starting for the whole timeout: TimedOut",
			in:   ScaleInput{Desired: 0, Current: 1, Ready: 0, Initialized: true, Activity: Activating, Since: ago(630)},
			want: ScaleResult{Scale: 0, Activity: TimedOut, Reason: av1alpha1.ReasonTimedOut, Message: av1alpha1.MessageTimedOut, Initialized: true},
		}, {
			name: "a new Revision that never starts times out despite initial-scale",
			in:   ScaleInput{Desired: 0, Current: 1, Ready: 0, Activity: Activating, Since: ago(700)},
			want: ScaleResult{Scale: 0, Activity: TimedOut, Reason: av1alpha1.ReasonTimedOut, Message: av1alpha1.MessageTimedOut},
		}, {
			name: "min-scale is never dropped by the timeout",
			set:  func(s *Settings) { s.MinScale = 2 },
			in:   ScaleInput{Desired: 0, Current: 2, Ready: 0, Initialized: true, Activity: Activating, Since: ago(700)},
			want: ScaleResult{Scale: -1, Activity: Activating, Reason: av1alpha1.ReasonQueued, Message: av1alpha1.MessageQueued, Initialized: true},
		}, {
			name: "no timeout when scale to zero is disabled",
			set:  func(s *Settings) { s.EnableScaleToZero = false },
			in:   ScaleInput{Desired: 1, Current: 1, Ready: 0, Initialized: true, Activity: Activating, Since: ago(700)},
			want: ScaleResult{Scale: -1, Activity: Activating, Reason: av1alpha1.ReasonQueued, Message: av1alpha1.MessageQueued, Initialized: true},
		}, {
			name: "no timeout when none is given",
			in:   ScaleInput{Desired: 1, Current: 1, Ready: 0, Initialized: true, Activity: Activating, Since: ago(10000), ActivationTimeout: -1},
			want: ScaleResult{Scale: -1, Activity: Activating, Reason: av1alpha1.ReasonQueued, Message: av1alpha1.MessageQueued, Initialized: true},
		}, {
			name: "a pod is ready: Active",
			in:   ScaleInput{Desired: 3, Current: 1, Ready: 1, Initialized: true, Activity: Activating, Since: ago(10)},
			want: ScaleResult{Scale: 3, Activity: Active, Initialized: true},
		}, {
			name: "traffic back during retention: Active with the retained pod",
			set:  func(s *Settings) { s.PodRetention = 40 * time.Second },
			in:   ScaleInput{Desired: 2, Current: 1, Ready: 1, Initialized: true, Activity: Inactive, Since: ago(10)},
			want: ScaleResult{Scale: 2, Activity: Active, Initialized: true},
		}, {
			name: "Active, pods lost, demand stays: Activating with a fresh timeout",
			in:   ScaleInput{Desired: 2, Current: 1, Ready: 0, Initialized: true, Activity: Active, Since: ago(1000)},
			want: ScaleResult{Scale: 2, Activity: Activating, Reason: av1alpha1.ReasonQueued, Message: av1alpha1.MessageQueued, Initialized: true, RequeueAfter: activationTimeout},
		}, {
			name: "Active at the desired scale: no write",
			in:   ScaleInput{Desired: 3, Current: 3, Ready: 3, Initialized: true, Activity: Active, Since: ago(10)},
			want: ScaleResult{Scale: -1, Activity: Active, Initialized: true},
		},

		// TimedOut.
		{
			name: "TimedOut, no demand: stays at zero, no requeue",
			in:   ScaleInput{Desired: 0, Current: 0, Ready: 0, Initialized: true, Activity: TimedOut, Since: ago(1000)},
			want: ScaleResult{Scale: -1, Activity: TimedOut, Reason: av1alpha1.ReasonTimedOut, Message: av1alpha1.MessageTimedOut, Initialized: true},
		}, {
			name: "TimedOut, demand 30s after: the old load may still be in the window, wait 30s more",
			in:   ScaleInput{Desired: 1, Current: 0, Ready: 0, Initialized: true, Activity: TimedOut, Since: ago(30)},
			want: ScaleResult{Scale: -1, Activity: TimedOut, Reason: av1alpha1.ReasonTimedOut, Message: av1alpha1.MessageTimedOut, Initialized: true, RequeueAfter: 30 * time.Second},
		}, {
			name: "TimedOut, pods not yet gone: scale them to zero",
			in:   ScaleInput{Desired: 1, Current: 1, Ready: 0, Initialized: true, Activity: TimedOut, Since: ago(2)},
			want: ScaleResult{Scale: 0, Activity: TimedOut, Reason: av1alpha1.ReasonTimedOut, Message: av1alpha1.MessageTimedOut, Initialized: true, RequeueAfter: 58 * time.Second},
		}, {
			name: "TimedOut, demand a window later: a new activation",
			in:   ScaleInput{Desired: 1, Current: 0, Ready: 0, Initialized: true, Activity: TimedOut, Since: ago(60)},
			want: ScaleResult{Scale: 1, Activity: Activating, Reason: av1alpha1.ReasonQueued, Message: av1alpha1.MessageQueued, Initialized: true, RequeueAfter: activationTimeout},
		}, {
			name: "TimedOut is not woken by initial-scale",
			set:  func(s *Settings) { s.InitialScale = 3 },
			in:   ScaleInput{Desired: 0, Current: 0, Ready: 0, Activity: TimedOut, Since: ago(1000)},
			want: ScaleResult{Scale: -1, Activity: TimedOut, Reason: av1alpha1.ReasonTimedOut, Message: av1alpha1.MessageTimedOut},
		}, {
			name: "a woken TimedOut Revision goes back to its initial scale",
			set:  func(s *Settings) { s.InitialScale = 3 },
			in:   ScaleInput{Desired: 1, Current: 0, Ready: 0, Activity: TimedOut, Since: ago(1000)},
			want: ScaleResult{Scale: 3, Activity: Activating, Reason: av1alpha1.ReasonQueued, Message: av1alpha1.MessageQueued, RequeueAfter: activationTimeout},
		}, {
			name: "TimedOut, then min-scale applies (reachable again): wake",
			set:  func(s *Settings) { s.MinScale = 2 },
			in:   ScaleInput{Desired: 0, Current: 0, Ready: 0, Initialized: true, Activity: TimedOut, Since: ago(5)},
			want: ScaleResult{Scale: 2, Activity: Activating, Reason: av1alpha1.ReasonQueued, Message: av1alpha1.MessageQueued, Initialized: true},
		}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Settings = scaleBase()
			if tt.set != nil {
				tt.set(&in.Settings)
			}
			in.Reachable = !tt.unreachable
			in.Now = t0
			if in.ActivationTimeout == 0 {
				in.ActivationTimeout = activationTimeout
			} else if in.ActivationTimeout < 0 {
				in.ActivationTimeout = 0
			}
			// Desired, the scale reported in status, is the replicas the Deployment
			// will have: the scale written, or the current one; -1 only where there is
			// no decision and nothing to activate (rule 1).
			want := tt.want
			switch {
			case want.Scale >= 0:
				want.Desired = want.Scale
			case tt.in.Desired < 0 && tt.in.Activity != "" && tt.in.Activity != Activating:
				want.Desired = -1
			default:
				want.Desired = in.Current
			}
			if got := Scale(in); got != want {
				t.Errorf("Scale =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestActivityConditionStatus(t *testing.T) {
	for a, want := range map[Activity]string{Active: "True", Inactive: "False", TimedOut: "False", Activating: "Unknown", "": "Unknown"} {
		if got := a.ConditionStatus(); got != want {
			t.Errorf("%q.ConditionStatus() = %q, want %q", a, got, want)
		}
	}
}
