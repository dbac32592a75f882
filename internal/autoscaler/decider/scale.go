package decider

import (
	"time"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
)

// Activity is the PodAutoscaler's Active condition read as a state: what Scale
// needs to know about the past to decide the next step, and what it reports back.
//
// The zero value "" is a PodAutoscaler with no Active condition yet, a new one.
// Knative initializes that condition to Unknown, so a new PodAutoscaler counts as
// Activating; Scale never returns "".
type Activity string

const (
	// Active (Active=True): at least one pod is ready and the gateway routes to it.
	Active Activity = "Active"
	// Inactive (Active=False, NoTraffic): no traffic for a stable window; the
	// Revision is at zero or its last pods are being retained.
	Inactive Activity = "Inactive"
	// Activating (Active=Unknown, Queued): pods are wanted but none is ready; the
	// gateway holds the Revision's requests meanwhile.
	Activating Activity = "Activating"
	// TimedOut (Active=False, TimedOut): no pod became ready within the activation
	// timeout, so the Revision was scaled to zero. Only new traffic wakes it.
	TimedOut Activity = "TimedOut"
)

// ConditionStatus is the Active condition's status for the Activity: "True",
// "False" or "Unknown".
func (a Activity) ConditionStatus() string {
	switch a {
	case Active:
		return "True"
	case Inactive, TimedOut:
		return "False"
	default:
		return "Unknown"
	}
}

// reason is the Active condition's reason and message for the Activity.
func (a Activity) reason() (string, string) {
	switch a {
	case Inactive:
		return av1alpha1.ReasonNoTraffic, av1alpha1.MessageNoTraffic
	case Activating:
		return av1alpha1.ReasonQueued, av1alpha1.MessageQueued
	case TimedOut:
		return av1alpha1.ReasonTimedOut, av1alpha1.MessageTimedOut
	default:
		return "", ""
	}
}

// ScaleInput is everything Scale looks at: the decision and what the PodAutoscaler
// and its Deployment say now.
type ScaleInput struct {
	Settings Settings
	// Desired is Decision.DesiredPods, or -1 when there is no data yet. The
	// gateway reports only Revisions with load, so a Revision it has not reported
	// is idle, not unknown: -1 is for while the history is missing (less than a
	// stable window after the controller began watching it). A Revision that
	// keeps getting -1 is never scaled to zero.
	Desired int32
	// Current is the Deployment's spec.replicas now.
	Current int32
	// Ready is the number of ready pods now.
	Ready int32
	// Reachable is false only when the Revision is known Unreachable (no Route
	// sends it traffic); min-scale and pod retention are ignored then.
	Reachable bool
	// Initialized: ScaleTargetInitialized is already True.
	Initialized bool
	// Activity is the current Active state and Since when it was entered (the
	// condition's lastTransitionTime). Activity and condition status change
	// together, so that time is the Activity's.
	Activity Activity
	Since    time.Time
	// ActivationTimeout is progress-deadline + 30s; 0 means none.
	ActivationTimeout time.Duration
	Now               time.Time
}

// ScaleResult is what to write after a decision.
type ScaleResult struct {
	// Scale is the replicas to set, or -1 to leave the Deployment alone (also when
	// it already has the replicas: one write at most per decision).
	Scale int32
	// Desired is the scale the PodAutoscaler reports (status.desiredScale): the
	// replicas the Deployment should have, written or not, or -1 while there is no
	// decision to speak of.
	Desired int32
	// Activity is the new state, with the Active condition's Reason and Message
	// (empty for Active).
	Activity        Activity
	Reason, Message string
	// Initialized: ScaleTargetInitialized should be True. It becomes so once
	// Ready ≥ max(InitialScale, min-scale) and stays so.
	Initialized bool
	// RequeueAfter is when a time-based transition is next due (0: none; a new
	// decision or a poke will call Scale again).
	RequeueAfter time.Duration
}

// Scale is the step that follows a decision, Knative's kpa/scaler.go and
// computeActiveCondition adapted to a gateway that is always in the request path:
// it bounds the desired scale, runs the scale-to-zero and activation state
// machine, and says what to write. See the package documentation for how it
// differs from Knative.
//
// The state machine, on the bounded desired count:
//
//	> 0, a pod ready             → Active, scale to it
//	> 0, no pod ready            → Activating (Queued), scale to it; after
//	                               ActivationTimeout → TimedOut, scale 0
//	0,   Active < StableWindow   → stay Active, keep the current scale
//	0,   Activating, pods asked  → keep them starting until ActivationTimeout,
//	                               then TimedOut, scale 0
//	0,   otherwise               → Inactive (NoTraffic), keep the pods for
//	                               PodRetention, then scale 0
//	TimedOut                     → stays at 0 until Desired > 0 at least a
//	                               StableWindow after timing out
func Scale(in ScaleInput) ScaleResult {
	s := in.Settings
	minScale := s.MinScale
	if !in.Reachable {
		minScale = 0
	}
	r := ScaleResult{
		Initialized: in.Initialized || in.Ready >= max(s.InitialScale, minScale),
	}

	act := in.Activity
	if act == "" {
		// A new PodAutoscaler: Knative's Active=Unknown.
		act = Activating
	}
	finish := func(a Activity, scale int32) ScaleResult {
		r.Activity = a
		r.Reason, r.Message = a.reason()
		r.Scale, r.Desired = scale, scale
		if scale < 0 {
			r.Desired = in.Current // the scale is left as it is
		}
		if scale == in.Current {
			r.Scale = -1
		}
		return r
	}
	// since is how long the PodAutoscaler has been in its current Activity;
	// a new one, or one without a transition time, has just entered it.
	since := time.Duration(0)
	if in.Activity != "" && !in.Since.IsZero() {
		since = in.Now.Sub(in.Since)
	}

	// 1. No data yet: leave the Deployment alone unless activating (a new
	// Revision still has to reach its initial scale), but keep the state true.
	if in.Desired < 0 && act != Activating {
		if act == Active && in.Ready == 0 {
			act = Activating
		}
		r := finish(act, -1)
		r.Desired = -1
		return r
	}

	// 2. Bounds.
	lo := minScale
	if !in.Initialized {
		lo = max(lo, s.InitialScale)
	}
	want := max(in.Desired, lo)
	if s.MaxScale > 0 {
		want = min(want, s.MaxScale)
	}
	if want == 0 && !s.EnableScaleToZero {
		want = 1
	}
	// Zero is allowed: scale to zero enabled and no min-scale in force. Initial
	// scale does not count: a new Revision that cannot start gives up (TimedOut).
	zeroAllowed := s.EnableScaleToZero && minScale == 0

	// 3. TimedOut leaves only on traffic: Desired > 0 at least a stable window
	// after timing out, when the load that was waiting then has left the window
	// and what remains arrived since. Min-scale and initial scale do not wake it
	// (unless zero is no longer allowed at all).
	if act == TimedOut && zeroAllowed {
		if in.Desired <= 0 {
			return finish(TimedOut, 0)
		}
		if since < s.StableWindow {
			r.RequeueAfter = s.StableWindow - since
			return finish(TimedOut, 0)
		}
	}
	if act == TimedOut {
		act, since = Activating, 0 // a fresh activation, with a fresh timeout
	}

	// 4. Scale up, or from zero.
	if want > 0 {
		if in.Ready > 0 {
			return finish(Active, want)
		}
		if act != Activating {
			since = 0 // entering Activating now
		}
		if in.ActivationTimeout > 0 && zeroAllowed {
			if since >= in.ActivationTimeout {
				return finish(TimedOut, 0)
			}
			r.RequeueAfter = in.ActivationTimeout - since
		}
		return finish(Activating, want)
	}

	// 5. Scale to zero: want == 0.
	switch {
	case act == Activating && in.Ready > 0:
		// The pods came up after the demand went away: Active from now, then the
		// stable window below, as Knative does.
		act, since = Active, 0
	case act == Activating && in.Activity != "" && in.Current > 0:
		// Pods are starting: let them, until the activation timeout (Knative keeps
		// the scale while activating).
		if in.ActivationTimeout > 0 && since >= in.ActivationTimeout {
			return finish(TimedOut, 0)
		}
		if in.ActivationTimeout > 0 {
			r.RequeueAfter = in.ActivationTimeout - since
		}
		return finish(Activating, -1)
	case act == Activating || act == Active && in.Ready == 0:
		// Nothing is starting or serving and nothing is wanted.
		act, since = Inactive, 0
	}
	if act == Active {
		if since < s.StableWindow {
			r.RequeueAfter = s.StableWindow - since
			return finish(Active, -1)
		}
		act, since = Inactive, 0
	}
	// Inactive: the gateway already holds any new request, so there is no grace
	// period to wait for; only the pod retention keeps the last pods.
	retention := s.PodRetention
	if !in.Reachable {
		retention = 0
	}
	if since < retention {
		r.RequeueAfter = retention - since
		return finish(Inactive, -1)
	}
	return finish(Inactive, 0)
}
