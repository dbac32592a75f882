package decider

import (
	"math"
	"time"
)

// State is what the decider remembers about one Revision between decisions: the
// panic mode and the recent decisions that scale-down-delay takes the maximum of.
// The zero value is a fresh decider that is not panicking.
type State struct {
	// panicTime is the last decision that was over the panic threshold; zero when
	// not panicking.
	panicTime time.Time
	// maxPanicPods is the most pods asked for during this panic: the floor while it
	// lasts.
	maxPanicPods int32
	// recent holds the decisions of the last ScaleDownDelay whose pod count no later
	// decision has matched or exceeded: ascending ticks, strictly descending pods, so
	// the first is the maximum.
	recent []decision
}

type decision struct {
	slot int64 // the 2 s tick (Unix seconds / 2) the decision fell in
	pods int32
}

// NewState is the State of a decider that starts for a Revision already running
// readyPods. With more than one ready pod it starts in panic mode with those pods
// as the floor, so that a controller restart, which loses the load history, does
// not scale the Revision down before a window of data has come in (Knative PR
// 4795). With 0 or 1 pod it is the zero State.
func NewState(now time.Time, readyPods int32) State {
	if readyPods > 1 {
		return State{panicTime: now, maxPanicPods: readyPods}
	}
	return State{}
}

// Panicking reports whether the decider is in panic mode, for logs and metrics.
func (s *State) Panicking() bool { return !s.panicTime.IsZero() }

// Decision is the outcome of one Decide.
type Decision struct {
	// DesiredPods is the pod count the load asks for, before min/max/initial bounds
	// (which Scale applies).
	DesiredPods int32
	// ExcessBurstCapacity is the spare capacity beyond the target burst capacity:
	// floor(ready×TotalValue − TBC − PanicValue); 0 when TBC is 0 and -1 when TBC
	// is -1. Negative means a burst of TBC would not fit in the ready pods.
	ExcessBurstCapacity int32
	// Panicking is the panic mode after this decision.
	Panicking bool
	// StableValue and PanicValue are the observed averages the decision used, for
	// logs and status.
	StableValue, PanicValue float64
}

// Decide is one tick of Knative's KPA decider (pkg/autoscaler/scaling
// autoscaler.go Scale) for a Revision with readyPods ready pods whose load averaged
// stableObserved over the stable window and panicObserved over the panic window:
//
//	ready   = max(1, readyPods)
//	maxUp   = ceil(MaxScaleUpRate × ready)
//	maxDown = reachable ? floor(ready / MaxScaleDownRate) : 0
//	dspc    = ceil(stable / Target), dppc = ceil(panic / Target)
//	stable  = clamp(dspc, maxDown, maxUp), panic = clamp(dppc, maxDown, maxUp),
//	          each raised to ActivationScale when its dspc/dppc > 0
//
// It enters or extends panic mode when dppc/ready ≥ PanicThreshold and leaves it
// only when under the threshold and more than StableWindow after the last decision
// that was over it. While panicking the result is max(stable, panic) and never
// below the most pods asked for during the panic. When reachable and
// ScaleDownDelay > 0, the result is the maximum of the decisions made in the last
// ScaleDownDelay. Unreachable Revisions have no lower rate bound, so they can drop
// to 0 in one step.
//
// Settings should come from SettingsFor; a MaxScaleUpRate or MaxScaleDownRate
// that is not positive is read as no limit.
func (s *State) Decide(set Settings, now time.Time, readyPods int32, reachable bool, stableObserved, panicObserved float64) Decision {
	ready := math.Max(1, float64(readyPods))
	target := math.Max(targetMin, set.Target)

	maxUp := math.Inf(1)
	if set.MaxScaleUpRate > 0 {
		maxUp = math.Ceil(set.MaxScaleUpRate * ready)
	}
	maxDown := 0.0
	if reachable && set.MaxScaleDownRate > 0 {
		maxDown = math.Floor(ready / set.MaxScaleDownRate)
	}

	dspc := math.Ceil(stableObserved / target)
	dppc := math.Ceil(panicObserved / target)
	stablePods := pods(math.Min(math.Max(dspc, maxDown), maxUp))
	panicPods := pods(math.Min(math.Max(dppc, maxDown), maxUp))
	if set.ActivationScale > 1 {
		if dspc > 0 {
			stablePods = max(stablePods, set.ActivationScale)
		}
		if dppc > 0 {
			panicPods = max(panicPods, set.ActivationScale)
		}
	}

	switch over := dppc/ready >= set.PanicThreshold; {
	case over: // enter, or extend from this tick
		s.panicTime = now
	case s.Panicking() && s.panicTime.Add(set.StableWindow).Before(now):
		// The surge has been in the stable window for a whole window: its average
		// now speaks for it.
		s.panicTime, s.maxPanicPods = time.Time{}, 0
	}

	desired := stablePods
	if s.Panicking() {
		// The stable window can exceed the panic one at the tail of a burst;
		// provision for the larger (Knative PR 8106). And never scale down while
		// panicking.
		desired = max(desired, panicPods, s.maxPanicPods)
		s.maxPanicPods = desired
	}

	if reachable && set.ScaleDownDelay > 0 {
		desired = s.delayed(now, desired, set.ScaleDownDelay)
	}

	ebc := -1.0
	switch {
	case set.TargetBurstCapacity == 0:
		ebc = 0
	case set.TargetBurstCapacity > 0:
		ebc = math.Floor(float64(readyPods)*set.TotalValue - set.TargetBurstCapacity - panicObserved)
	}

	return Decision{
		DesiredPods:         desired,
		ExcessBurstCapacity: clampInt32(ebc),
		Panicking:           s.Panicking(),
		StableValue:         stableObserved,
		PanicValue:          panicObserved,
	}
}

// delayed records this decision and returns the largest decided in the last d, as
// Knative's max.TimeWindow does: decisions are bucketed by the 2 s tick they fall in
// (ticks and pokes alike), and the delay spans ceil(d / 2s) ticks, the current one
// included.
func (s *State) delayed(now time.Time, desired int32, d time.Duration) int32 {
	slot := now.Unix() / int64(delayTick/time.Second)
	slots := int64((d + delayTick - 1) / delayTick)
	i := 0
	for i < len(s.recent) && slot-s.recent[i].slot >= slots {
		i++
	}
	s.recent = s.recent[i:]
	// A smaller or equal earlier decision can never be the maximum again.
	n := len(s.recent)
	for n > 0 && s.recent[n-1].pods <= desired {
		n--
	}
	if n == 0 || s.recent[n-1].slot != slot {
		s.recent = append(s.recent[:n], decision{slot: slot, pods: desired})
	} else {
		s.recent = s.recent[:n] // a larger decision in the same tick stands for it
	}
	return s.recent[0].pods
}

// delayTick is the granularity of scale-down-delay: Knative's decider tick.
const delayTick = 2 * time.Second

// pods converts a non-negative pod count, possibly +Inf, to int32.
func pods(f float64) int32 {
	return clampInt32(math.Max(0, f))
}

func clampInt32(f float64) int32 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	}
	return int32(f)
}
