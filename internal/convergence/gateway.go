package convergence

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
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

var (
	ingressKind = "networking.internal.knative.dev/Ingress"
	leaseKind   = "coordination.k8s.io/Lease"
)

// Gateway replicas' Leases, as `ferry gateway` keeps them (backends.ReplicaSet):
// renewed every third of leaseDuration, in leaseNamespace.
const (
	leaseNamespace = "ferry-system"
	leaseDuration  = 15 * time.Second
	renewalTimer   = "lease renewal"
	readinessTimer = "readiness probe"
	// readinessPeriod is how often a replica's readiness (routing.Programmer.Warm) is
	// asked until it first passes, as a kubelet probes its /readyz.
	readinessPeriod = 100 * time.Millisecond
)

// gateway is a gateway replica's own state beside its process: its routing table,
// and its Lease when it has company (nil: a replica alone).
type gateway struct {
	programmer *routing.Programmer
	replicas   *backends.ReplicaSet
	joined     bool
	// warm: its readiness passed (its Lease exists and it serves every KIngress at
	// the generation the API server showed then): a load balancer sends it requests.
	warm bool
}

// startGateway builds a gateway replica in slot: the gateway's own KIngress
// reconciler over an empty routing table, as `ferry gateway` starts, its caches as of
// the store's log index asOf. Every replica runs it, leader or not, so a gateway is
// not part of the controllers' failover: a crashed one is restarted, as its pod is.
// With more than one replica each keeps a Lease, and an ingress is Ready only once
// every replica serves it; weaken.Replicas keeps the Leases but not the wait.
func (s *Sim) startGateway(name string, asOf int, alone bool) *process {
	p := s.newProcess(name, asOf)
	// Buffered beyond anything a run programs: the reconciler sends on it inside a
	// reconcile, and nothing else runs until that returns.
	p.requeue = make(chan event.GenericEvent, 4096)
	p.gateway = &gateway{programmer: routing.NewProgrammer(backends.NewRegistry())}
	if !alone {
		rs := backends.NewReplicaSet(cacheClient{p: p, calm: true}, leaseNamespace, name, leaseDuration, 0, p.requeue)
		rs.Confirm = apiReader{sim: s}
		rs.Now = s.now
		p.gateway.replicas = rs
		s.after(p, 0, "lease join", func() { s.renew(p) })
	}
	waitFor := p.gateway.replicas
	if s.weaken.Replicas {
		waitFor = nil
	}
	ingresses := routing.IngressController(cacheClient{p: p}, apiReader{sim: s}, p.gateway.programmer, p.requeue, waitFor, publicDomain, privateDomain)
	if waitFor == nil && p.gateway.replicas != nil {
		// The Leases still change in its cache, as they would with the wait.
		p.informer(leaseKind)
	}
	// Its one other source reads the requeue channel on a goroutine of its own: the
	// simulation drains the channel itself (requeueAction).
	ingresses.Sources = nil
	p.run(ingresses)
	p.started = true
	return p
}

// renew is a replica's Lease loop, one turn at a time on the simulation's clock:
// joining until its Lease exists, then renewing it every third of its duration.
func (s *Sim) renew(p *process) {
	g := p.gateway
	s.background(p, func(ctx context.Context) error {
		if !g.joined {
			if err := g.replicas.Join(ctx); err != nil {
				return err
			}
			g.joined = true
			s.after(p, 0, readinessTimer, func() { s.probe(p) })
			return nil
		}
		return g.replicas.Renew(ctx)
	})
	if p.alive {
		s.after(p, leaseDuration/3, renewalTimer, func() { s.renew(p) })
	}
}

// probe asks a joined replica's readiness, as `ferry gateway`'s /readyz check does
// (gateway.Gateway.Warm: the API server's KIngresses), every readinessPeriod until it
// first passes.
func (s *Sim) probe(p *process) {
	if err := p.gateway.programmer.Warm(context.Background(), apiReader{sim: s}); err != nil {
		s.after(p, readinessPeriod, readinessTimer, func() { s.probe(p) })
		return
	}
	p.gateway.warm = true
	s.logf("[%s] is ready: it serves every KIngress it was asked for", p.name)
}

// flushAction writes a replica's record when it has changed, as its Lease loop
// does at once.
func (s *Sim) flushAction(p *process) (action, bool) {
	if p.gateway == nil || p.gateway.replicas == nil || !p.gateway.joined || len(p.gateway.replicas.Dirty()) == 0 {
		return action{}, false
	}
	return action{"flush the record of " + p.name, func() {
		<-p.gateway.replicas.Dirty()
		s.background(p, p.gateway.replicas.Flush)
	}}, true
}

// background runs work of p that is not a reconcile, whose writes may crash p as a
// reconcile's may.
func (s *Sim) background(p *process, work func(context.Context) error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crashed); !ok {
				panic(r)
			}
		}
	}()
	if err := work(context.Background()); err != nil {
		s.logf("[%s] lease: %v", p.name, err)
	}
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

// startGateways starts the scenario's gateway replicas.
func (s *Sim) startGateways() {
	s.gateways = make([]*process, max(1, s.scenario.GatewayReplicas))
	for i := range s.gateways {
		s.restartGateway(i)
	}
}

// restartGateway starts the gateway in slot i, first or after its pod restarted; in
// stale scenarios its first list may lag the store, as a failed-over controller's does.
func (s *Sim) restartGateway(i int) {
	s.gatewayStarts++
	asOf := 0
	if s.gatewayStarts > len(s.gateways) {
		asOf = s.staleStart()
	}
	p := s.startGateway(fmt.Sprintf("gateway-%d", s.gatewayStarts), asOf, len(s.gateways) == 1)
	s.gateways[i] = p
	s.logf("[%s] starts, its caches as of rv=%d (the store is at rv=%d)", p.name, s.rvAt(asOf), s.store.rv)
}

// replaceGateway replaces the replica in slot i by a new pod, as a rollout does: the
// old one stops at once (its Lease left to expire), the new one starts a moment later.
func (s *Sim) replaceGateway(i int) {
	p := s.gateways[i]
	if p == nil {
		return // restarting already
	}
	p.alive = false
	s.gateways[i] = nil
	s.logf("[%s] is replaced (a rollout)", p.name)
	s.after(nil, s.gatewayRestart(), "gateway restart", func() { s.restartGateway(i) })
}

// gatewayRestart is how long a crashed gateway's pod takes to come back.
func (s *Sim) gatewayRestart() time.Duration {
	return time.Duration(1+s.rng.Intn(5)) * time.Second
}

// leasesSettled: every replica's Lease in the store is a live replica's, and every
// live replica has one. Renewals change nothing then, and the run may end with them
// still due.
func (s *Sim) leasesSettled() bool {
	live := map[string]bool{}
	for _, p := range s.gateways {
		if p == nil {
			return false
		}
		if p.gateway.replicas == nil {
			continue
		}
		if !p.gateway.joined {
			return false
		}
		live[p.name] = true
	}
	for _, o := range s.store.list(leaseKind, leaseNamespace) {
		l := o.(*coordinationv1.Lease)
		if l.Labels[backends.ReplicaLabel] != "" && (l.Spec.HolderIdentity == nil || !live[*l.Spec.HolderIdentity]) {
			return false
		}
	}
	return true
}
