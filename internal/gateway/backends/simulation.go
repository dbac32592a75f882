package backends

import (
	"time"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"

	"golang.org/x/sync/semaphore"
)

// Simulation is how a Revision's simulated pods answer, from its annotations.
type Simulation struct {
	// ServiceTime is the answer's delay for a request without ?sleep=.
	ServiceTime time.Duration
	// Capacity is how many requests a pod serves at once; 0 is no limit.
	Capacity int64
}

// simulationOf reads a Revision's serving.ferry.dev/simulated-* annotations. Admission
// refuses bad values; one that got in before (or past) it counts as unset.
func simulationOf(annotations map[string]string) Simulation {
	var s Simulation
	if v, ok := annotations[servingv1.SimulatedServiceTimeAnnotationKey]; ok {
		s.ServiceTime, _ = servingv1.ParseSimulatedServiceTime(v)
	}
	if v, ok := annotations[servingv1.SimulatedCapacityAnnotationKey]; ok {
		s.Capacity, _ = servingv1.ParseSimulatedCapacity(v)
	}
	return s
}

// simulatedPod is the serving side of one simulated pod: its capacity's semaphore,
// kept on its podSlot so that it outlives endpoint swaps, as the pod does.
type simulatedPod struct {
	capacity int64
	busy     *semaphore.Weighted
}

// Seats returns the pod's semaphore for capacity, replacing it if the Revision's
// capacity changed (requests in flight release the one they took).
func (p *PodSlot) Seats(capacity int64) *semaphore.Weighted {
	for {
		cur := p.sim.Load()
		if cur != nil && cur.capacity == capacity {
			return cur.busy
		}
		next := &simulatedPod{capacity: capacity, busy: semaphore.NewWeighted(capacity)}
		if p.sim.CompareAndSwap(cur, next) {
			return next.busy
		}
	}
}
