package convergence

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
)

const namespace = "default"

// workload is what a user does during a run, in order, each step when it may (after
// what it needs exists) and when the simulation picks it among everything else that
// can happen: so user writes interleave with the controllers' work at every point.
type workload struct {
	sim  *Sim
	ops  []op
	next int
	// services are the names of the Services it creates.
	services []string
}

type op struct {
	what string
	// when reports whether the step can be taken now (nil: at any time).
	when func() bool
	do   func()
}

func (w *workload) actions() []action {
	if w.next >= len(w.ops) {
		return nil
	}
	o := w.ops[w.next]
	if o.when != nil && !o.when() {
		return nil
	}
	return []action{{"user: " + o.what, func() {
		w.next++
		w.sim.author = "user"
		o.do()
		w.sim.author = ""
	}}}
}

// done reports whether the user has taken every step.
func (w *workload) done() bool { return w.next >= len(w.ops) }

// newWorkload draws the run's workload from the seed: one or two Services, each
// created (half of them rolling out new Revisions gradually) and then changed a few
// times (new templates, traffic splits with tags and back, deletion and re-creation
// under the same name, a stale status planted by a replica that no longer leads),
// sometimes a Route created before the Configuration it names, in half the runs
// config-domain changed at some point, and in a third config-network's
// domain-template.
func newWorkload(s *Sim) *workload {
	w := &workload{sim: s}
	for i := range 1 + s.rng.Intn(2) {
		name := fmt.Sprintf("svc-%d", i)
		w.services = append(w.services, name)
		rollout := s.rng.Intn(2) == 0
		create := "create Service " + name
		if rollout {
			create += " with a rollout duration"
		}
		w.add(create, nil, func() { w.createService(name, "v1", rollout) })
		version := 1
		for range s.rng.Intn(4) {
			switch s.rng.Intn(5) {
			case 0, 1:
				version++
				image := fmt.Sprintf("v%d", version)
				w.add("change the template of "+name+" to "+image, w.exists(name), func() { w.updateService(name, func(svc *v1.Service) { setImage(svc, image) }) })
			case 2:
				w.add("split "+name+"'s traffic 50/50 with its first Revision, both tagged", w.exists(name), func() {
					w.updateService(name, func(svc *v1.Service) {
						// The latest's tag has a host of its own that rolls too.
						svc.Spec.Traffic = []v1.TrafficTarget{
							{LatestRevision: ptr.To(true), Percent: ptr.To[int64](50), Tag: "current"},
							{RevisionName: name + "-00001", LatestRevision: ptr.To(false), Percent: ptr.To[int64](50), Tag: "first"},
						}
					})
				})
				// A new Revision once the split is served rolls into the default split and
				// the tag's host; the user waits for that before going back. Waiting for a
				// settled status, not Ready: the split names the first Revision, which never
				// exists when the template changed before it was made (RevisionMissing,
				// rightly), and the user must still get to send the traffic back.
				version++
				image := fmt.Sprintf("v%d", version)
				w.add("change the template of "+name+" to "+image+" while split", w.settled(name), func() { w.updateService(name, func(svc *v1.Service) { setImage(svc, image) }) })
				w.add("send all of "+name+"'s traffic to its latest Revision again", w.settled(name), func() {
					w.updateService(name, func(svc *v1.Service) { svc.Spec.Traffic = nil })
				})
			case 3:
				w.add("delete Service "+name, w.exists(name), func() { w.delete(&v1.Service{}, name) })
				w.add(create+" again", nil, func() { w.createService(name, "v1", rollout) })
				version = 1
			case 4:
				w.add("plant a stale status in "+name+" and its children", w.ready(name), func() { w.plantStale(name) })
			}
		}
	}
	if s.rng.Intn(3) == 0 {
		w.add("create Route early, naming Configuration late that does not exist yet", nil, func() {
			rt := &v1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "early"}}
			rt.Spec.Traffic = []v1.TrafficTarget{{ConfigurationName: "late", Percent: ptr.To[int64](100)}}
			w.create(rt)
		})
		w.add("create Configuration late", nil, func() {
			cfg := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "late"}}
			cfg.Spec.Template.Spec.Containers = []corev1.Container{{Image: "ferry.test/late"}}
			w.create(cfg)
		})
	}
	if s.rng.Intn(2) == 0 {
		// Drawn last, so that the rest of each seed's workload stays as it was.
		at := 1 + s.rng.Intn(len(w.ops))
		w.ops = slices.Insert(w.ops, at, op{what: "move every Route to " + movedDomain + " (config-domain)", do: w.moveDomain})
	}
	// From a source of its own, so that the runs that do not draw it do what they did
	// before it was added (the seeds of found bugs among them).
	if network := rand.New(rand.NewSource(s.seed)); network.Intn(3) == 0 {
		at := 1 + network.Intn(len(w.ops))
		w.ops = slices.Insert(w.ops, at, op{what: "change every Route's host to " + movedDomainTemplate + " (config-network)", do: w.changeDomainTemplate})
	}
	if rollout := rand.New(rand.NewSource(s.seed + 3)); s.scenario.GatewayReplicas > 1 {
		// A rollout of the gateway's Deployment: each replica in turn replaced by a new
		// pod, which joins while the KIngresses move on.
		for i := range s.scenario.GatewayReplicas {
			at := 1 + rollout.Intn(len(w.ops))
			w.ops = slices.Insert(w.ops, at, op{what: fmt.Sprintf("replace gateway replica %d (a rollout)", i), do: func() { s.replaceGateway(i) }})
		}
	}
	if autoscaling := rand.New(rand.NewSource(s.seed + 2)); s.scenario.Traffic && autoscaling.Intn(3) == 0 {
		at := 1 + autoscaling.Intn(len(w.ops))
		w.ops = slices.Insert(w.ops, at, op{what: "turn scale to zero off (config-autoscaler)", do: w.keepOnePod})
	}
	return w
}

// keepOnePod sets config-autoscaler's enable-scale-to-zero to false: every Revision
// at zero gets a pod again and none scales to zero from then on, once the
// PodAutoscalers learn it.
func (w *workload) keepOnePod() {
	c := *w.sim.config
	a, err := config.NewAutoscalerFromConfigMap(&corev1.ConfigMap{Data: map[string]string{"enable-scale-to-zero": "false"}})
	if err != nil {
		panic(err) // a setting Knative accepts
	}
	c.Autoscaler = a
	w.sim.config = &c
	w.sim.logf("[user] changes config-autoscaler enable-scale-to-zero to false")
}

// movedDomainTemplate is the domain-template config-network names once the user
// changes it.
const movedDomainTemplate = "{{.Name}}-{{.Namespace}}.{{.Domain}}"

// changeDomainTemplate changes config-network's domain-template: every Route's URL
// and KIngress hosts change, which each process learns when its ConfigMap informer
// catches up.
func (w *workload) changeDomainTemplate() {
	c := *w.sim.config
	network, err := config.NewNetworkFromConfigMap(&corev1.ConfigMap{Data: map[string]string{"domain-template": movedDomainTemplate}})
	if err != nil {
		panic(err) // a fixed template Knative accepts
	}
	c.Network = network
	w.sim.config = &c
	w.sim.checker.configChanged = true
	w.sim.logf("[user] changes config-network domain-template to %s", movedDomainTemplate)
}

// movedDomain is the domain config-domain names once the user changes it.
const movedDomain = "example.org"

// moveDomain changes config-domain: every Route's URL and KIngress hosts move to
// movedDomain, which each process learns when its ConfigMap informer catches up.
func (w *workload) moveDomain() {
	c := *w.sim.config
	c.Domain = &config.Domain{Domains: map[string]config.DomainSelector{movedDomain: {Type: config.DomainTypeWildcard}}}
	w.sim.config = &c
	w.sim.checker.configChanged = true
	w.sim.logf("[user] changes config-domain to %s for every Route", movedDomain)
}

func (w *workload) add(what string, when func() bool, do func()) {
	w.ops = append(w.ops, op{what: what, when: when, do: do})
}

func key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}

func (w *workload) exists(name string) func() bool {
	return func() bool {
		_, ok := w.sim.store.get(ref{kind: serviceKind, key: key(name)})
		return ok
	}
}

// ready: the Service is Ready in its current generation, as a user waiting for it
// sees.
func (w *workload) ready(name string) func() bool {
	return w.service(name, func(svc *v1.Service) bool {
		return svc.Status.ObservedGeneration == svc.Generation && svc.Status.GetCondition(v1.ServiceConditionReady).IsTrue()
	})
}

// settled: the Service's status is for its spec and Ready is True or False.
func (w *workload) settled(name string) func() bool {
	return w.service(name, func(svc *v1.Service) bool { return svc.Status.Settled(svc.Generation) })
}

// service: the Service exists and is as is says.
func (w *workload) service(name string, is func(*v1.Service) bool) func() bool {
	return func() bool {
		o, ok := w.sim.store.get(ref{kind: serviceKind, key: key(name)})
		return ok && is(o.(*v1.Service))
	}
}

func setImage(svc *v1.Service, image string) {
	svc.Spec.Template.Spec.Containers = []corev1.Container{{Image: "ferry.test/hello:" + image}}
}

// admit defaults obj as Ferry's admission webhook does before it is stored.
func admit(obj client.Object) {
	ctx := config.ToContext(context.Background(), config.Default())
	if d, ok := obj.(interface{ SetDefaults(context.Context) }); ok {
		d.SetDefaults(ctx)
	}
}

// createService creates the Service; with rollout its new Revisions take its traffic
// over in steps (a few seconds of the simulated clock).
func (w *workload) createService(name, image string, rollout bool) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if rollout {
		svc.Annotations = map[string]string{v1.RolloutDurationAnnotationKey: "5s"}
	}
	setImage(svc, image)
	w.create(svc)
}

func (w *workload) create(obj client.Object) {
	admit(obj)
	err := w.sim.store.create(obj)
	w.sim.logf("[user] creates %s: %s", w.sim.store.refOf(obj), resultOf(obj, err))
}

func (w *workload) updateService(name string, change func(*v1.Service)) {
	o, ok := w.sim.store.get(ref{kind: serviceKind, key: key(name)})
	if !ok {
		return
	}
	svc := o.(*v1.Service)
	change(svc)
	admit(svc)
	err := w.sim.store.update(svc, false)
	w.sim.logf("[user] updates %s: %s (generation %d)", w.sim.store.refOf(svc), resultOf(svc, err), svc.Generation)
}

func (w *workload) delete(obj client.Object, name string) {
	obj.SetNamespace(namespace)
	obj.SetName(name)
	r := w.sim.store.refOf(obj)
	err := w.sim.store.delete(r, "", "")
	w.sim.logf("[user] deletes %s: %s", r, errString(err))
}

// plantStale writes into a Ready Service, its Configuration, Route and latest Revision
// a status from before the rollout finished, as a replica that no longer leads would
// (the integration test TestHAControllerFailover does the same): no URL, traffic or
// Revision names, every condition Unknown.
func (w *workload) plantStale(name string) {
	s := w.sim
	o, ok := s.store.get(ref{kind: serviceKind, key: key(name)})
	if !ok {
		return
	}
	latest := o.(*v1.Service).Status.LatestReadyRevisionName
	s.author = "stale-replica"
	for _, obj := range []client.Object{&v1.Service{}, &v1.Configuration{}, &v1.Route{}, &v1.Revision{}} {
		n := name
		if _, isRev := obj.(*v1.Revision); isRev {
			n = latest
		}
		r := ref{kind: kindOf(s.scheme, obj), key: key(n)}
		cur, ok := s.store.get(r)
		if !ok {
			continue
		}
		stale := duckStatusOf(cur).DeepCopy()
		for i := range stale.Conditions {
			stale.Conditions[i].Status, stale.Conditions[i].Reason, stale.Conditions[i].Message = corev1.ConditionUnknown, "StaleWrite", "written by a replica that no longer leads"
		}
		data, err := json.Marshal([]any{map[string]any{"op": "add", "path": "/status", "value": stale}})
		if err != nil {
			panic(err)
		}
		err = s.store.patch(cur, client.RawPatch(types.JSONPatchType, data), true)
		s.logf("[stale-replica] writes a stale status into %s: %s", r, resultOf(cur, err))
	}
}

// duckStatusOf is the Knative status of obj, or nil for other kinds.
func duckStatusOf(obj client.Object) *duck.Status {
	if o, ok := obj.(interface{ DuckStatus() *duck.Status }); ok {
		return o.DuckStatus()
	}
	return nil
}
