package podautoscaler

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
)

// ScaleToZeroRate is how many Revisions per second may scale to zero, across the
// controller. Every scale to zero costs about ten writes across the control plane (the
// scale, the ReplicaSet, the pod's deletion and statuses, the EndpointSlice, the
// PodAutoscaler's and the Revision's status): 2,000 Services deployed together go idle
// together, and unpaced their scale-downs take most of the API server for a minute,
// and a user's new Service waits behind them (docs/scale.md, the starvation guard).
// At 10 a second they take about a tenth of what a 2-core API server writes, and a
// thousand idle Revisions keep their pods up to 100 s longer than their window says.
// Scale-ups are never paced: a request may be waiting for them.
const ScaleToZeroRate = 10

// pace spreads scale-to-zero over time. Each Revision due to go to zero reserves a
// turn, once; until its turn it keeps its pods and its PodAutoscaler stays as it is.
// Times come from the reconciler's clock, so the convergence simulation stays a
// function of its seed.
type pace struct {
	mu      sync.Mutex
	limiter *rate.Limiter
	turns   map[types.NamespacedName]time.Time
}

func newPace(perSecond float64) *pace {
	// A burst of one: the turns are a trickle from the first, never a wave of a
	// second's worth after a quiet spell.
	return &pace{limiter: rate.NewLimiter(rate.Limit(perSecond), 1), turns: map[types.NamespacedName]time.Time{}}
}

// wait is how long key must still wait, at now, before it scales to zero: 0 when its
// turn has come, which is then spent.
func (p *pace) wait(key types.NamespacedName, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	turn, ok := p.turns[key]
	if !ok {
		turn = now.Add(p.limiter.ReserveN(now, 1).DelayFrom(now))
	}
	if d := turn.Sub(now); d > 0 {
		p.turns[key] = turn
		return d
	}
	delete(p.turns, key)
	return 0
}

// forget drops key's turn: it no longer goes to zero (load came back), or it is gone.
// The turn's token is not given back; the next Revision waits at most one turn more.
func (p *pace) forget(key types.NamespacedName) {
	p.mu.Lock()
	delete(p.turns, key)
	p.mu.Unlock()
}
