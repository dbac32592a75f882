package backends

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
	// and metrics; service and configuration are its Knative Service and
	// Configuration, for request logs.
	revision, service, configuration string
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

// Owners are the Knative Service and Configuration of the revision, "" if unknown.
func (se *Endpoints) Owners() (service, configuration string) {
	if se == nil {
		return "", ""
	}
	return se.service, se.configuration
}

// Limit is the containerConcurrency of the snapshot, 0 (none) without one.
func (se *Endpoints) Limit() int64 {
	if se == nil {
		return 0
	}
	return se.concurrency
}

// Limits are the revision's timeouts, def standing in for a timeoutSeconds it
// lacks.
func (se *Endpoints) Limits(def time.Duration) Timeouts {
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

// Targets returns the ready endpoints behind a split's servicePort, or nil.
func (se *Endpoints) Targets(port intstr.IntOrString) *TargetSet {
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

// Endpoints is the current snapshot of the Service's ready endpoints; nil while it
// has none (no Service, no slices).
func (s *Service) Endpoints() *Endpoints { return s.endpoints.Load() }

// Changed is closed when the snapshot is next replaced. A waiter takes it before
// Endpoints, so that it either sees the new snapshot or is woken.
func (s *Service) Changed() <-chan struct{} { return *s.changed.Load() }

// RevisionName names the revision behind a service for people and metrics: the
// Revision's name, or a Service's revision label, else the Service's name (Knative
// names a revision's Service after the revision). se is the snapshot the caller
// routes by.
func (s *Service) RevisionName(se *Endpoints) string {
	if se != nil && se.revision != "" {
		return se.revision
	}
	return s.Key.Name
}

// Registry hands out one *service per Service name, shared by every split that
// references it, and drops it once nothing references it and the Service is gone.
type Registry struct {
	mu       sync.Mutex
	services map[types.NamespacedName]*Service
	// OnForget, if set, is called with each service the registry drops, under mu.
	OnForget func(*Service)
}

// InFlightTo counts the requests in flight to every endpoint at ip, those of
// endpoints already removed included; ip may be an address with its port, for pods
// that share an IP (ferry up's program node running host processes).
func (sr *Registry) InFlightTo(ip string) int64 {
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

// Lookup returns the entry for key, or nil.
func (sr *Registry) Lookup(key types.NamespacedName) *Service {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	return sr.services[key]
}

// Len is the number of Services held.
func (sr *Registry) Len() int {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	return len(sr.services)
}

// Slot returns the in-flight counter that s keeps for the endpoint address addr, a
// removed one's while it has requests in flight; nil if none.
func (sr *Registry) Slot(s *Service, addr string) *PodSlot {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	return s.pods[addr]
}

func NewRegistry() *Registry {
	return &Registry{services: map[types.NamespacedName]*Service{}}
}

// Acquire returns the service for key and takes a reference that release gives back.
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

// Update stores the endpoints of a Service; nil means the Service and its slices are
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

// WakeAll wakes a waiter of every Service that has some.
func (sr *Registry) WakeAll() {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	for _, s := range sr.services {
		if s.Room.Waiting.Load() > 0 {
			s.Room.SlotFreed()
		}
	}
}

// Idle says no request is in flight or held, in any Service.
func (sr *Registry) Idle() bool {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	t := Micros(time.Now())
	for _, s := range sr.services {
		if _, n := s.Load.Read(t); n > 0 {
			return false
		}
	}
	return true
}

// Timeouts are a revision's limits; 0 is none (total always has one, until the
// response starts).
type Timeouts struct {
	Total, ResponseStart, Idle time.Duration
}
