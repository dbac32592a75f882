package backends

import "sync/atomic"

// TargetSet is the ready endpoints of one port.
type TargetSet struct {
	targets []Target
	// next rotates where acquire starts looking, so that ties go round-robin.
	next atomic.Uint32
}

type Target struct {
	// Addr is host:port to dial.
	Addr string
	// IP is the pod address, for messages.
	IP string
	// Simulated marks a pod that kwok simulates: nothing listens at addr.
	Simulated bool
	// H2C says the pod speaks HTTP/2 without TLS (prior knowledge) at addr.
	H2C bool
	// Pod counts the requests in flight to addr, across snapshots.
	Pod *PodSlot
}

// PodSlot is the number of requests in flight to one endpoint address, and their
// load accounting. Every request to the endpoint updates it, from any core: it has a
// cache line of its own.
type PodSlot struct {
	// inflight is what balancing and containerConcurrency read: load's N, kept apart
	// because taking a slot compares and swaps it before the request's time is taken.
	inflight atomic.Int64
	// load and arrivals account the requests on the pod, as revisionLoad does the
	// Service's, for the reporter.
	load     loadArea
	arrivals atomic.Uint64
	// sim is a simulated pod's capacity (simulation.go), made on first use.
	sim atomic.Pointer[simulatedPod]
	// name is the pod's, for the reports: set when the slot is made.
	name string
	// lastArea is load's area at the reporter's previous reading; the reporter's.
	lastArea uint64
	_        [8]byte
}

// Began counts, at t (µs), the start of the request that took a slot on p.
func (p *PodSlot) Began(t uint64) {
	p.arrivals.Add(1)
	p.load.begin(t)
}

// tryAcquire takes a slot below limit (0: no limit).
func (p *PodSlot) tryAcquire(limit int64) bool {
	if limit <= 0 {
		p.inflight.Add(1)
		return true
	}
	for {
		n := p.inflight.Load()
		if n >= limit {
			return false
		}
		if p.inflight.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// All are the endpoints, sorted by address.
func (ts *TargetSet) All() []Target { return ts.targets }

// InFlight is the number of requests in flight to the endpoint.
func (p *PodSlot) InFlight() int64 { return p.inflight.Load() }

// Name is the pod's name, or the endpoint's address when it is no pod's.
func (p *PodSlot) Name() string { return p.name }

func (ts *TargetSet) Empty() bool { return ts == nil || len(ts.targets) == 0 }

// balanceWindow bounds how many endpoints an unlimited request compares: the least
// loaded of up to this many, starting at a rotating position. A limited request
// (containerConcurrency) looks at all of them before it waits.
const balanceWindow = 16

// Acquire picks the endpoint with the fewest requests in flight, ties broken
// round-robin, and counts the request on it; with a limit, only endpoints below this
// replica's share of it (share, by the endpoint's rank in the sorted targets) qualify.
// nil: no endpoint, or none with a free slot.
func (ts *TargetSet) Acquire(limit int64, m Membership) *Target {
	if ts == nil {
		return nil
	}
	n := uint32(len(ts.targets))
	switch n {
	case 0:
		return nil
	case 1:
		if l := share(limit, 0, m); (limit <= 0 || l > 0) && ts.targets[0].Pod.tryAcquire(l) {
			return &ts.targets[0]
		}
		return nil
	}
	scan := n
	if limit <= 0 && scan > balanceWindow {
		scan = balanceWindow
	}
	for {
		start := ts.next.Add(1) - 1
		var best *Target
		var bestLoad int64
		for i := range scan {
			rank := (start + i) % n
			t := &ts.targets[rank]
			load := t.Pod.inflight.Load()
			if limit > 0 && load >= share(limit, int(rank), m) || best != nil && load >= bestLoad {
				continue
			}
			best, bestLoad = t, load
			if load == 0 {
				break
			}
		}
		switch {
		case best == nil:
			return nil
		case limit <= 0:
			best.Pod.inflight.Add(1)
			return best
		case best.Pod.inflight.CompareAndSwap(bestLoad, bestLoad+1):
			return best
		}
		// Another request took that slot first: look again.
	}
}

// Release gives back, at end (µs), the slot a request took on t.
func (t *Target) Release(end uint64) {
	t.Pod.inflight.Add(-1)
	t.Pod.load.end(end)
}
