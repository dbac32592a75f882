package convergence

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/routing"
	"github.com/ferry-serving/ferry/internal/watches"
)

// The load balancers the gateway names in an ingress's status, as `ferry gateway`'s
// defaults do.
const (
	publicDomain  = "ferry-gateway.ferry-system.svc.cluster.local"
	privateDomain = "ferry-gateway-local.ferry-system.svc.cluster.local"
)

var ingressKind = "networking.internal.knative.dev/Ingress"

// startGateway builds a gateway replica: the gateway's own KIngress reconciler over
// an empty routing table, as `ferry gateway` starts, its caches as of the store's log
// index asOf. Every replica runs it, leader or not, so a gateway is not part of the
// controllers' failover: a crashed one is restarted, as its pod is.
func (s *Sim) startGateway(name string, asOf int) *process {
	p := s.newProcess(name, asOf)
	// Buffered beyond anything a run programs: the reconciler sends on it inside a
	// reconcile, and nothing else runs until that returns.
	p.requeue = make(chan event.GenericEvent, 4096)
	ingresses := routing.IngressController(cacheClient{p: p}, apiReader{sim: s}, routing.NewProgrammer(backends.NewRegistry()), p.requeue, nil, publicDomain, privateDomain)
	// Its one other source reads the requeue channel on a goroutine of its own: the
	// simulation drains the channel itself (requeueAction).
	ingresses.Sources = nil
	p.run(ingresses)
	p.started = true
	return p
}

// requeueAction hands the oldest ingress p's programmer gave back to its reconciler,
// through the handler controller-runtime's channel source uses.
func (s *Sim) requeueAction(p *process) (action, bool) {
	if p.requeue == nil || len(p.requeue) == 0 {
		return action{}, false
	}
	return action{"requeue in " + p.name, func() {
		ev := <-p.requeue
		watches.Enqueue().Generic(context.Background(), ev, p.controllers[0].queue)
		s.logf("[%s] its programmer requeues %s/%s", p.name, ev.Object.GetNamespace(), ev.Object.GetName())
	}}, true
}

// restartGateway starts the gateway that replaces a crashed one, after its pod's
// restart; in stale scenarios its first list may lag the store, as a failed-over
// controller's does.
func (s *Sim) restartGateway() {
	s.gateways++
	asOf := s.staleStart()
	s.gateway = s.startGateway(fmt.Sprintf("gateway-%d", s.gateways), asOf)
	s.logf("[%s] starts, its caches as of rv=%d (the store is at rv=%d)", s.gateway.name, s.rvAt(asOf), s.store.rv)
}

// gatewayRestart is how long a crashed gateway's pod takes to come back.
func (s *Sim) gatewayRestart() time.Duration {
	return time.Duration(1+s.rng.Intn(5)) * time.Second
}
