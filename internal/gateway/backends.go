package gateway

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Service is the data plane's view of one Kubernetes Service. Compiled routes point at
// it and read its endpoints atomically per request, so endpoint churn (scaling, pods
// becoming ready) never recompiles an ingress or rebuilds the routing table.
type Service struct {
	Key       types.NamespacedName
	endpoints atomic.Pointer[Endpoints]
	// changed is closed, and replaced, each time endpoints is: held requests wait on
	// it instead of polling.
	changed atomic.Pointer[chan struct{}]
	// refs counts the compiled splits that point here; guarded by serviceRegistry.mu.
	refs int
	// pods are the in-flight counters of the endpoints, by address, carried from one
	// snapshot to the next, and kept while a removed endpoint still has requests in
	// flight; guarded by serviceRegistry.mu.
	pods map[string]*PodSlot
	// Load is the demand accounting of the requests routed here.
	Load RevisionLoad
	// Room is where requests wait for a ready endpoint or a free slot.
	Room WaitRoom
	// Series are the series children of requests routed here, made once.
	Series Series
}

// Endpoints is an immutable snapshot of a Service's ready endpoints.
type Endpoints struct {
	// revision is the Service's serving.knative.dev/revision label, for error bodies
	// and metrics.
	revision string
	// specPorts are the Service's ports; a split's servicePort names one of them, and
	// its name picks the EndpointSlice port, as kube-proxy does.
	specPorts []specPort
	// byName and byNumber index the EndpointSlice ports, for a servicePort that the
	// Service does not list (or a Service that is gone while its slices linger).
	byName   map[string]*TargetSet
	byNumber map[int32]*TargetSet
	// concurrency is the revision's containerConcurrency, from the Service's
	// annotation: no endpoint gets more requests at once. 0 is no limit.
	concurrency int64
	// timeout is the revision's timeoutSeconds (for a Service, its annotation); 0
	// means Options.RequestTimeout.
	timeout time.Duration
	// responseStart and idle are the Revision's responseStartTimeoutSeconds and
	// idleTimeoutSeconds; 0: none.
	responseStart, idle time.Duration
	// Published is when the registry swapped this snapshot in.
	Published time.Time
	// Simulation is how the Revision's simulated pods answer.
	Simulation Simulation
}

// limit is the containerConcurrency of the snapshot, 0 (none) without one.
func (se *Endpoints) limit() int64 {
	if se == nil {
		return 0
	}
	return se.concurrency
}

// limits are the revision's timeouts, def standing in for a timeoutSeconds it
// lacks.
func (se *Endpoints) limits(def time.Duration) Timeouts {
	if se == nil {
		return Timeouts{Total: def}
	}
	l := Timeouts{Total: se.timeout, ResponseStart: se.responseStart, Idle: se.idle}
	if l.Total <= 0 {
		l.Total = def
	}
	return l
}

type specPort struct {
	name string
	port int32
}

// targets returns the ready endpoints behind a split's servicePort, or nil.
func (se *Endpoints) targets(port intstr.IntOrString) *TargetSet {
	if se == nil {
		return nil
	}
	for _, sp := range se.specPorts {
		if port.Type == intstr.Int && sp.port == port.IntVal || port.Type == intstr.String && sp.name == port.StrVal {
			return se.byName[sp.name]
		}
	}
	if port.Type == intstr.String {
		return se.byName[port.StrVal]
	}
	return se.byNumber[port.IntVal]
}

// revisionName names the revision behind a service for people and metrics: the
// Revision's name, or a Service's revision label, else the Service's name (Knative
// names a revision's Service after the revision). se is the snapshot the caller
// routes by.
func (s *Service) revisionName(se *Endpoints) string {
	if se != nil && se.revision != "" {
		return se.revision
	}
	return s.Key.Name
}

// TargetSet is the ready endpoints of one port.
type TargetSet struct {
	targets []Target
	// next rotates where acquire starts looking, so that ties go round-robin.
	next atomic.Uint32
}

type Target struct {
	// Addr is host:port to dial.
	Addr string
	// ip is the pod address, for messages.
	IP string
	// simulated marks a pod that kwok simulates: nothing listens at addr.
	Simulated bool
	// h2c says the pod speaks HTTP/2 without TLS (prior knowledge) at addr.
	H2C bool
	// pod counts the requests in flight to addr, across snapshots.
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
	// sim is a simulated pod's capacity (simulated.go), made on first use.
	sim atomic.Pointer[simulatedPod]
	// name is the pod's, for the reports: set when the slot is made.
	name string
	// lastArea is load's area at the reporter's previous reading; the reporter's.
	lastArea uint64
	_        [8]byte
}

// began counts, at t (µs), the start of the request that took a slot on p.
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

func (ts *TargetSet) Empty() bool { return ts == nil || len(ts.targets) == 0 }

// balanceWindow bounds how many endpoints an unlimited request compares: the least
// loaded of up to this many, starting at a rotating position. A limited request
// (containerConcurrency) looks at all of them before it waits.
const balanceWindow = 16

// acquire picks the endpoint with the fewest requests in flight, ties broken
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

// release gives back, at end (µs), the slot a request took on t.
func (t *Target) Release(end uint64) {
	t.Pod.inflight.Add(-1)
	t.Pod.load.end(end)
}

// Registry hands out one *service per Service name, shared by every split that
// references it, and drops it once nothing references it and the Service is gone.
type Registry struct {
	mu       sync.Mutex
	services map[types.NamespacedName]*Service
	// onForget, if set, is called with each service the registry drops, under mu.
	OnForget func(*Service)
}

// inFlightTo counts the requests in flight to every endpoint at ip, those of
// endpoints already removed included.
func (sr *Registry) InFlightTo(ip string) int64 {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	var n int64
	for _, s := range sr.services {
		for addr, p := range s.pods {
			if host, _, _ := net.SplitHostPort(addr); host == ip {
				n += p.inflight.Load()
			}
		}
	}
	return n
}

func NewRegistry() *Registry {
	return &Registry{services: map[types.NamespacedName]*Service{}}
}

// acquire returns the service for key and takes a reference that release gives back.
func (sr *Registry) Acquire(key types.NamespacedName) *Service {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	s := sr.getLocked(key)
	s.refs++
	return s
}

func (sr *Registry) Release(s *Service) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	s.refs--
	sr.forgetIfUnusedLocked(s)
}

// update stores the endpoints of a Service; nil means the Service and its slices are
// gone. Requests held for the Service wake up and look again.
func (sr *Registry) Update(key types.NamespacedName, se *Endpoints) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if se == nil {
		if s := sr.services[key]; s != nil {
			s.publish(nil)
			sr.forgetIfUnusedLocked(s)
		}
		return
	}
	s := sr.getLocked(key)
	s.attachPods(se)
	if se.revision != "" {
		if id := s.Load.id.Load(); id == nil || id.revision != se.revision {
			s.Load.id.Store(&revisionID{namespace: key.Namespace, revision: se.revision})
		}
	}
	se.Published = time.Now()
	s.publish(se)
}

// publish swaps in se, then wakes whoever waits for a change. The order matters: a
// waiter loads changed before endpoints, so it either sees se or is woken.
func (s *Service) publish(se *Endpoints) {
	s.endpoints.Store(se)
	next := make(chan struct{})
	close(*s.changed.Swap(&next))
}

// attachPods gives each target of se the in-flight counter of its address, the one
// the previous snapshots used if there was one, so that balancing and
// containerConcurrency carry over a swap. A counter whose address left the ready set
// is kept while requests are still in flight on it, in case the address comes back
// before they finish. An address that another pod took over gets the new pod's slot.
// The reporter gets the slots in load.pods. Called under serviceRegistry.mu.
func (s *Service) attachPods(se *Endpoints) {
	next := make(map[string]*PodSlot, len(s.pods))
	attach := func(ts *TargetSet) {
		for i := range ts.targets {
			t := &ts.targets[i]
			p := next[t.Addr]
			if p == nil {
				if p = s.pods[t.Addr]; p == nil || p.name != t.Pod.name {
					p = t.Pod
				}
				next[t.Addr] = p
			}
			t.Pod = p
		}
	}
	for _, ts := range se.byName {
		attach(ts)
	}
	for _, ts := range se.byNumber {
		attach(ts)
	}
	for addr, p := range s.pods {
		if next[addr] == nil && p.inflight.Load() > 0 {
			next[addr] = p
		}
	}
	s.pods = next
	slots := make([]*PodSlot, 0, len(next))
	for _, p := range next {
		slots = append(slots, p)
	}
	s.Load.pods.Store(&slots)
}

func (sr *Registry) getLocked(key types.NamespacedName) *Service {
	s := sr.services[key]
	if s == nil {
		s = newService(key)
		sr.services[key] = s
	}
	return s
}

func newService(key types.NamespacedName) *Service {
	s := &Service{Key: key}
	changed := make(chan struct{})
	s.changed.Store(&changed)
	return s
}

// forgetIfUnusedLocked drops an entry that holds nothing worth keeping. An entry that
// a split still points at stays even when empty: a Service created later must fill
// the very object the live table references.
func (sr *Registry) forgetIfUnusedLocked(s *Service) {
	if s.refs == 0 && s.endpoints.Load() == nil && sr.services[s.Key] == s {
		delete(sr.services, s.Key)
		if sr.OnForget != nil {
			sr.OnForget(s)
		}
	}
}
