package gateway

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// service is the data plane's view of one Kubernetes Service. Compiled routes point at
// it and read its endpoints atomically per request, so endpoint churn (scaling, pods
// becoming ready) never recompiles an ingress or rebuilds the routing table.
type service struct {
	key       types.NamespacedName
	endpoints atomic.Pointer[serviceEndpoints]
	// changed is closed, and replaced, each time endpoints is: held requests wait on
	// it instead of polling.
	changed atomic.Pointer[chan struct{}]
	// refs counts the compiled splits that point here; guarded by serviceRegistry.mu.
	refs int
	// pods are the in-flight counters of the endpoints, by address, carried from one
	// snapshot to the next, and kept while a removed endpoint still has requests in
	// flight; guarded by serviceRegistry.mu.
	pods map[string]*podSlot
	// load is the demand accounting of the requests routed here.
	load revisionLoad
	// room is where requests wait for a ready endpoint or a free slot.
	room waitRoom
	// metrics are the series children of requests routed here, made once.
	metrics serviceMetrics
}

// serviceEndpoints is an immutable snapshot of a Service's ready endpoints.
type serviceEndpoints struct {
	// revision is the Service's serving.knative.dev/revision label, for error bodies
	// and metrics.
	revision string
	// specPorts are the Service's ports; a split's servicePort names one of them, and
	// its name picks the EndpointSlice port, as kube-proxy does.
	specPorts []specPort
	// byName and byNumber index the EndpointSlice ports, for a servicePort that the
	// Service does not list (or a Service that is gone while its slices linger).
	byName   map[string]*targetSet
	byNumber map[int32]*targetSet
	// concurrency is the revision's containerConcurrency, from the Service's
	// annotation: no endpoint gets more requests at once. 0 is no limit.
	concurrency int64
	// timeout is the revision's timeoutSeconds (for a Service, its annotation); 0
	// means Options.RequestTimeout.
	timeout time.Duration
	// responseStart and idle are the Revision's responseStartTimeoutSeconds and
	// idleTimeoutSeconds; 0: none.
	responseStart, idle time.Duration
	// published is when the registry swapped this snapshot in.
	published time.Time
	// simulation is how the Revision's simulated pods answer.
	simulation simulation
}

// limit is the containerConcurrency of the snapshot, 0 (none) without one.
func (se *serviceEndpoints) limit() int64 {
	if se == nil {
		return 0
	}
	return se.concurrency
}

// limits are the revision's timeouts, def standing in for a timeoutSeconds it
// lacks.
func (se *serviceEndpoints) limits(def time.Duration) timeouts {
	if se == nil {
		return timeouts{total: def}
	}
	l := timeouts{total: se.timeout, responseStart: se.responseStart, idle: se.idle}
	if l.total <= 0 {
		l.total = def
	}
	return l
}

type specPort struct {
	name string
	port int32
}

// targets returns the ready endpoints behind a split's servicePort, or nil.
func (se *serviceEndpoints) targets(port intstr.IntOrString) *targetSet {
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
func (s *service) revisionName(se *serviceEndpoints) string {
	if se != nil && se.revision != "" {
		return se.revision
	}
	return s.key.Name
}

// targetSet is the ready endpoints of one port.
type targetSet struct {
	targets []target
	// next rotates where acquire starts looking, so that ties go round-robin.
	next atomic.Uint32
}

type target struct {
	// addr is host:port to dial.
	addr string
	// ip is the pod address, for messages.
	ip string
	// simulated marks a pod that kwok simulates: nothing listens at addr.
	simulated bool
	// h2c says the pod speaks HTTP/2 without TLS (prior knowledge) at addr.
	h2c bool
	// pod counts the requests in flight to addr, across snapshots.
	pod *podSlot
}

// podSlot is the number of requests in flight to one endpoint address, and their
// load accounting. Every request to the endpoint updates it, from any core: it has a
// cache line of its own.
type podSlot struct {
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
func (p *podSlot) began(t uint64) {
	p.arrivals.Add(1)
	p.load.begin(t)
}

// tryAcquire takes a slot below limit (0: no limit).
func (p *podSlot) tryAcquire(limit int64) bool {
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

func (ts *targetSet) empty() bool { return ts == nil || len(ts.targets) == 0 }

// balanceWindow bounds how many endpoints an unlimited request compares: the least
// loaded of up to this many, starting at a rotating position. A limited request
// (containerConcurrency) looks at all of them before it waits.
const balanceWindow = 16

// acquire picks the endpoint with the fewest requests in flight, ties broken
// round-robin, and counts the request on it; with a limit, only endpoints below this
// replica's share of it (share, by the endpoint's rank in the sorted targets) qualify.
// nil: no endpoint, or none with a free slot.
func (ts *targetSet) acquire(limit int64, m membership) *target {
	if ts == nil {
		return nil
	}
	n := uint32(len(ts.targets))
	switch n {
	case 0:
		return nil
	case 1:
		if l := share(limit, 0, m); (limit <= 0 || l > 0) && ts.targets[0].pod.tryAcquire(l) {
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
		var best *target
		var bestLoad int64
		for i := range scan {
			rank := (start + i) % n
			t := &ts.targets[rank]
			load := t.pod.inflight.Load()
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
			best.pod.inflight.Add(1)
			return best
		case best.pod.inflight.CompareAndSwap(bestLoad, bestLoad+1):
			return best
		}
		// Another request took that slot first: look again.
	}
}

// release gives back, at end (µs), the slot a request took on t.
func (t *target) release(end uint64) {
	t.pod.inflight.Add(-1)
	t.pod.load.end(end)
}

// serviceRegistry hands out one *service per Service name, shared by every split that
// references it, and drops it once nothing references it and the Service is gone.
type serviceRegistry struct {
	mu       sync.Mutex
	services map[types.NamespacedName]*service
	// onForget, if set, is called with each service the registry drops, under mu.
	onForget func(*service)
}

// inFlightTo counts the requests in flight to every endpoint at ip, those of
// endpoints already removed included; ip may be an address with its port, for pods
// that share an IP (ferry up's program node running host processes).
func (sr *serviceRegistry) inFlightTo(ip string) int64 {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	var n int64
	for _, s := range sr.services {
		for addr, p := range s.pods {
			if host, _, _ := net.SplitHostPort(addr); host == ip || addr == ip {
				n += p.inflight.Load()
			}
		}
	}
	return n
}

func newServiceRegistry() *serviceRegistry {
	return &serviceRegistry{services: map[types.NamespacedName]*service{}}
}

// acquire returns the service for key and takes a reference that release gives back.
func (sr *serviceRegistry) acquire(key types.NamespacedName) *service {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	s := sr.getLocked(key)
	s.refs++
	return s
}

func (sr *serviceRegistry) release(s *service) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	s.refs--
	sr.forgetIfUnusedLocked(s)
}

// update stores the endpoints of a Service; nil means the Service and its slices are
// gone. Requests held for the Service wake up and look again.
func (sr *serviceRegistry) update(key types.NamespacedName, se *serviceEndpoints) {
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
		if id := s.load.id.Load(); id == nil || id.revision != se.revision {
			s.load.id.Store(&revisionID{namespace: key.Namespace, revision: se.revision})
		}
	}
	se.published = time.Now()
	s.publish(se)
}

// publish swaps in se, then wakes whoever waits for a change. The order matters: a
// waiter loads changed before endpoints, so it either sees se or is woken.
func (s *service) publish(se *serviceEndpoints) {
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
func (s *service) attachPods(se *serviceEndpoints) {
	next := make(map[string]*podSlot, len(s.pods))
	attach := func(ts *targetSet) {
		for i := range ts.targets {
			t := &ts.targets[i]
			p := next[t.addr]
			if p == nil {
				if p = s.pods[t.addr]; p == nil || p.name != t.pod.name {
					p = t.pod
				}
				next[t.addr] = p
			}
			t.pod = p
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
	slots := make([]*podSlot, 0, len(next))
	for _, p := range next {
		slots = append(slots, p)
	}
	s.load.pods.Store(&slots)
}

func (sr *serviceRegistry) getLocked(key types.NamespacedName) *service {
	s := sr.services[key]
	if s == nil {
		s = newService(key)
		sr.services[key] = s
	}
	return s
}

func newService(key types.NamespacedName) *service {
	s := &service{key: key}
	changed := make(chan struct{})
	s.changed.Store(&changed)
	return s
}

// forgetIfUnusedLocked drops an entry that holds nothing worth keeping. An entry that
// a split still points at stays even when empty: a Service created later must fill
// the very object the live table references.
func (sr *serviceRegistry) forgetIfUnusedLocked(s *service) {
	if s.refs == 0 && s.endpoints.Load() == nil && sr.services[s.key] == s {
		delete(sr.services, s.key)
		if sr.onForget != nil {
			sr.onForget(s)
		}
	}
}
