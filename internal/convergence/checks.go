package convergence

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

const (
	serviceKind       = "serving.knative.dev/Service"
	configurationKind = "serving.knative.dev/Configuration"
	revisionKind      = "serving.knative.dev/Revision"
	routeKind         = "serving.knative.dev/Route"
	coreServiceKind   = "/Service"
)

// maxWritesPerObject bounds the controllers' writes to one object in a run: a few per
// user change and per fault. More is a write storm.
const maxWritesPerObject = 60

// checker holds the safety properties, checked at every commit, and the liveness
// ones, checked at quiescence.
type checker struct {
	sim        *Sim
	violations []string
	// writes counts the controllers' writes per object.
	writes map[ref]int
	// revisions are the Revisions created per Configuration UID and generation.
	revisions map[string][]string
	// ready is the last stored Ready status of each Service, by UID.
	ready map[types.UID]serviceReady
	// faults counts the faults that may make a Ready status regress for a while:
	// a stale status planted, a late write landing, a leader starting from a stale
	// cache.
	faults int
	// configChanged: the user changed the configuration, which may rightly make a
	// Ready Service Unknown while its Route's KIngress takes its new hosts, as
	// Knative's does.
	configChanged bool
}

type serviceReady struct {
	generation int64
	ready      bool
}

func newChecker(s *Sim) *checker {
	return &checker{sim: s, writes: map[ref]int{}, revisions: map[string][]string{}, ready: map[types.UID]serviceReady{}}
}

func (c *checker) violate(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.sim.logf("VIOLATION: %s", msg)
	c.violations = append(c.violations, msg)
}

// observe checks each committed change: the safety properties.
func (s *Sim) observe(ch change) {
	c := s.checker
	s.lastCommit = s.now()
	author := s.author
	if author == "stale-replica" || strings.HasSuffix(author, "(in flight)") {
		c.faults++
	}
	controller := strings.HasPrefix(author, "controller-") && !strings.HasSuffix(author, "(in flight)")
	if strings.HasPrefix(author, "controller-") {
		c.writes[ch.ref]++
		if c.writes[ch.ref] == maxWritesPerObject+1 {
			c.violate("write storm: more than %d writes to %s", maxWritesPerObject, ch.ref)
		}
	}
	if ch.deleted {
		if strings.HasPrefix(author, "controller-") {
			c.checkDeletion(ch)
		}
		return
	}
	if st := duckStatusOf(ch.obj); st != nil && st.ObservedGeneration > ch.obj.GetGeneration() {
		c.violate("%s: status.observedGeneration %d ahead of generation %d", ch.ref, st.ObservedGeneration, ch.obj.GetGeneration())
	}
	switch o := ch.obj.(type) {
	case *v1.Revision:
		cfg := o.Labels[v1.ConfigurationUIDLabelKey] + "@" + o.Labels[v1.ConfigurationGenerationLabelKey]
		// A Revision made for a Configuration already deleted (by a leader whose cache
		// is behind) is garbage the collector takes: not a second Revision.
		if o.Generation == 1 && !contains(c.revisions[cfg], string(o.UID)) && s.isCreate(ch) && s.configurationExists(o) {
			c.revisions[cfg] = append(c.revisions[cfg], string(o.UID))
			if len(c.revisions[cfg]) > 1 {
				c.violate("Configuration %s generation %s has %d Revisions: %v", o.Labels[v1.ConfigurationLabelKey],
					o.Labels[v1.ConfigurationGenerationLabelKey], len(c.revisions[cfg]), c.revisions[cfg])
			}
		}
	case *netv1alpha1.Ingress:
		s.checkServed(o, author, ch)
	case *v1.Service:
		now := serviceReady{generation: o.Generation, ready: o.Status.ObservedGeneration == o.Generation && o.IsReady()}
		before, seen := c.ready[o.UID]
		c.ready[o.UID] = now
		// After a fault, a regression may have its cause outside Ferry (a stale
		// status read from a child, a stale cache): it must still be put right,
		// which quiescent checks.
		if controller && seen && before.ready && !now.ready && before.generation == now.generation && c.faults == 0 && !c.configChanged {
			c.violate("Service %s: Ready turned %s in generation %d with no change to its spec (written by %s)",
				o.Name, readyOf(&o.Status.Status), o.Generation, author)
		}
	}
}

// checkServed: a gateway replica marks an ingress's load balancer Ready for a
// generation only once it serves that generation, and so does every other live
// replica it counts (whose Lease its cache holds, unexpired): a request through any
// of them then finds what the status promises.
func (s *Sim) checkServed(ing *netv1alpha1.Ingress, author string, ch change) {
	gen := ing.Status.ObservedGeneration
	if !lbReady(ing, gen) {
		return
	}
	if prev, ok := s.store.before(ch); ok && lbReady(prev.(*netv1alpha1.Ingress), gen) {
		return // Ready already: this write decided nothing
	}
	var writer *process
	for _, p := range s.gateways {
		if p != nil && p.name == author {
			writer = p
		}
	}
	if writer == nil {
		return // a late write: its replica decided it, then crashed
	}
	key := client.ObjectKeyFromObject(ing)
	for _, p := range s.gateways {
		if p == nil || !p.alive || (p != writer && !p.gateway.warm) {
			continue
		}
		if served, _ := p.gateway.programmer.Serves(key); served < gen {
			s.checker.violate("ingress %s marked Ready for generation %d by %s while %s, a live replica taking requests, serves generation %d",
				key, gen, author, p.name, served)
		}
	}
}

func lbReady(ing *netv1alpha1.Ingress, gen int64) bool {
	c := netv1alpha1.IngressConditions.Manage(&ing.DeepCopy().Status.Status).GetCondition(netv1alpha1.IngressConditionLoadBalancerReady)
	return ing.Status.ObservedGeneration == gen && c.IsTrue()
}

func (s *Sim) configurationExists(rev *v1.Revision) bool {
	o, ok := s.store.get(ref{kind: configurationKind, key: types.NamespacedName{Namespace: rev.Namespace, Name: rev.Labels[v1.ConfigurationLabelKey]}})
	return ok && string(o.GetUID()) == rev.Labels[v1.ConfigurationUIDLabelKey]
}

func (s *Sim) isCreate(ch change) bool {
	for i := len(s.store.log) - 1; i >= 0; i-- {
		if s.store.log[i].rv == ch.rv {
			continue
		}
		if s.store.log[i].ref == ch.ref {
			return s.store.log[i].deleted
		}
	}
	return true
}

// checkDeletion: a controller deletes only Revisions nothing routes to and that are
// not their Configuration's latest, and placeholder Services of a Route's tags (which
// tags a Route has at quiescence checkPlaceholders says).
func (c *checker) checkDeletion(ch change) {
	if svc, ok := ch.obj.(*corev1.Service); ok {
		owner := metav1.GetControllerOf(svc)
		if owner == nil || owner.Kind != "Route" || svc.Labels[v1.RouteLabelKey] != owner.Name || svc.Name == owner.Name {
			c.violate("a controller deleted %s, which is no placeholder Service of a Route's tag", ch.ref)
		}
		return
	}
	rev, ok := ch.obj.(*v1.Revision)
	if !ok {
		c.violate("a controller deleted %s", ch.ref)
		return
	}
	for _, o := range c.sim.store.list(configurationKind, rev.Namespace) {
		cfg := o.(*v1.Configuration)
		if cfg.Status.LatestReadyRevisionName == rev.Name || cfg.Status.LatestCreatedRevisionName == rev.Name {
			c.violate("Revision %s deleted while Configuration %s names it latest", rev.Name, cfg.Name)
		}
	}
	for _, o := range c.sim.store.list(routeKind, rev.Namespace) {
		for _, t := range o.(*v1.Route).Status.Traffic {
			if t.RevisionName == rev.Name {
				c.violate("Revision %s deleted while Route %s routes to it", rev.Name, o.GetName())
			}
		}
	}
}

// quiescent checks, once nothing is left to happen, that every object reached the
// state its spec implies, and that Ferry agrees: a new leader, starting from the store
// as it is, has nothing to write.
func (c *checker) quiescent() {
	s := c.sim
	for _, kind := range []string{serviceKind, configurationKind, revisionKind, routeKind, ingressKind, paKind} {
		for _, o := range s.store.list(kind, "") {
			st := duckStatusOf(o)
			ready := st.GetCondition(duck.ConditionReady)
			switch {
			case st.ObservedGeneration != o.GetGeneration():
				c.violate("%s %s: observedGeneration %d, generation %d at quiescence", kind, o.GetName(), st.ObservedGeneration, o.GetGeneration())
			case ready == nil || ready.IsUnknown():
				c.violate("%s %s: Ready %s at quiescence", kind, o.GetName(), readyOf(st))
			}
		}
	}
	for _, o := range s.store.list(serviceKind, "") {
		svc := o.(*v1.Service)
		want := fmt.Sprintf("%s-%05d", svc.Name, configGeneration(s, svc))
		switch {
		case !svc.IsReady():
			c.violate("Service %s not Ready at quiescence: %s", svc.Name, readyOf(&svc.Status.Status))
		case svc.Status.LatestReadyRevisionName != want || svc.Status.LatestCreatedRevisionName != want:
			c.violate("Service %s: latest created %q, latest ready %q, want %q", svc.Name,
				svc.Status.LatestCreatedRevisionName, svc.Status.LatestReadyRevisionName, want)
		}
	}
	c.checkPlaceholders()
	c.checkDomains()
	if s.traffic != nil {
		c.checkTraffic()
	}
	c.fixpoint()
}

// checkPlaceholders: at quiescence each Route has a placeholder Service for itself and
// one per tag of its traffic (<tag>-<route>, the default tag-template), controlled by
// it, and no other: a removed tag's is gone.
func (c *checker) checkPlaceholders() {
	s := c.sim
	have := map[types.UID][]string{}
	for _, o := range s.store.list(coreServiceKind, "") {
		if owner := metav1.GetControllerOf(o); owner != nil && owner.Kind == "Route" {
			have[owner.UID] = append(have[owner.UID], o.GetName())
		}
	}
	for _, o := range s.store.list(routeKind, "") {
		rt := o.(*v1.Route)
		want := []string{rt.Name}
		for _, t := range rt.Spec.Traffic {
			if t.Tag != "" {
				want = append(want, t.Tag+"-"+rt.Name)
			}
		}
		got := have[rt.UID]
		sort.Strings(want)
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			c.violate("Route %s: placeholder Services %v at quiescence, want %v", rt.Name, got, want)
		}
	}
}

// checkDomains: at quiescence every Route's URL is the host config-network's
// domain-template makes under the domain config-domain names now (the one catch-all
// entry the workload writes).
func (c *checker) checkDomains() {
	s := c.sim
	for domain := range s.config.Domain.Domains {
		for _, o := range s.store.list(routeKind, "") {
			rt := o.(*v1.Route)
			want := "http://" + rt.Name + "." + rt.Namespace + "." + domain
			if s.config.Network.DomainTemplate == movedDomainTemplate {
				want = "http://" + rt.Name + "-" + rt.Namespace + "." + domain
			}
			if rt.Status.URL != "" && rt.Status.URL != want {
				c.violate("Route %s: URL %s at quiescence, config-domain and config-network make %s", rt.Name, rt.Status.URL, want)
			}
		}
	}
}

func configGeneration(s *Sim, svc *v1.Service) int64 {
	o, ok := s.store.get(ref{kind: configurationKind, key: client.ObjectKeyFromObject(svc)})
	if !ok {
		return 0
	}
	return o.GetGeneration()
}

// fixpoint starts a new leader and a new gateway with caches equal to the store and
// runs them, with no faults, until they are quiet: every write they make is one the
// run's controllers should have made and did not — a lost update.
func (c *checker) fixpoint() {
	s := c.sim
	before := len(s.store.log)
	s.scenario = Scenario{Name: "fixpoint"}
	for _, p := range s.processes() {
		p.alive = false
	}
	s.deposed = nil
	s.leader = s.start("checker", len(s.store.log))
	s.gateways = []*process{s.startGateway("checker-gateway", len(s.store.log), true)}
	s.logf("[checker] leads, and a gateway starts, with caches equal to the store: they must have nothing to write")
	s.runToQuiescence(20000)
	var wrote []string
	for _, ch := range s.store.log[before:] {
		wrote = append(wrote, fmt.Sprintf("%s%s", ch.ref, summary(ch.obj)))
	}
	if len(wrote) > 0 {
		c.violate("not converged: a fresh controller still had %d writes to make: %s", len(wrote), strings.Join(wrote, "; "))
	}
}

func readyOf(st *duck.Status) string {
	c := st.GetCondition(duck.ConditionReady)
	if c == nil {
		return "missing"
	}
	return fmt.Sprintf("%s/%s %q", c.Status, c.Reason, c.Message)
}

var paKind = "autoscaling.internal.knative.dev/PodAutoscaler"

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedViolations(v []string) []string {
	out := append([]string(nil), v...)
	sort.Strings(out)
	return out
}
