package gateway

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// service is the data plane's view of one Kubernetes Service. Compiled routes point at
// it and read its endpoints atomically per request, so endpoint churn (scaling, pods
// becoming ready) never recompiles an ingress or rebuilds the routing table.
type service struct {
	key       types.NamespacedName
	endpoints atomic.Pointer[serviceEndpoints]
	// refs counts the compiled splits that point here; guarded by serviceRegistry.mu.
	refs int
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
// revision label when the Service has one, else the Service's name (Knative names a
// revision's Service after the revision). se is the snapshot the caller routes by.
func (s *service) revisionName(se *serviceEndpoints) string {
	if se != nil && se.revision != "" {
		return se.revision
	}
	return s.key.Name
}

// targetSet is the ready endpoints of one port, picked round-robin.
type targetSet struct {
	targets []target
	next    atomic.Uint32
}

type target struct {
	// addr is host:port to dial.
	addr string
	// ip is the pod address, for messages.
	ip string
	// simulated marks a pod that kwok simulates: nothing listens at addr.
	simulated bool
}

func (ts *targetSet) empty() bool { return ts == nil || len(ts.targets) == 0 }

func (ts *targetSet) pick() *target {
	i := ts.next.Add(1) - 1
	return &ts.targets[i%uint32(len(ts.targets))]
}

// serviceRegistry hands out one *service per Service name, shared by every split that
// references it, and drops it once nothing references it and the Service is gone.
type serviceRegistry struct {
	mu       sync.Mutex
	services map[types.NamespacedName]*service
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
// gone.
func (sr *serviceRegistry) update(key types.NamespacedName, se *serviceEndpoints) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if se == nil {
		if s := sr.services[key]; s != nil {
			s.endpoints.Store(nil)
			sr.forgetIfUnusedLocked(s)
		}
		return
	}
	sr.getLocked(key).endpoints.Store(se)
}

func (sr *serviceRegistry) getLocked(key types.NamespacedName) *service {
	s := sr.services[key]
	if s == nil {
		s = &service{key: key}
		sr.services[key] = s
	}
	return s
}

// forgetIfUnusedLocked drops an entry that holds nothing worth keeping. An entry that
// a split still points at stays even when empty: a Service created later must fill
// the very object the live table references.
func (sr *serviceRegistry) forgetIfUnusedLocked(s *service) {
	if s.refs == 0 && s.endpoints.Load() == nil {
		delete(sr.services, s.key)
	}
}
