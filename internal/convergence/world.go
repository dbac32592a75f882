package convergence

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
)

// world is the rest of the cluster, as far as Ferry's controllers can tell: the
// Deployment controller and its pods (a Deployment becomes available a seeded delay
// after it asks for replicas), the gateway (a KIngress is programmed and Ready a
// seeded delay after each generation), and the garbage collector (dependents of a
// deleted owner go at some later step). They act on the store directly: they are not
// under test, only their timing is.
type world struct {
	sim *Sim
	// due is when each object's pending work may be done, chosen when first seen.
	due map[ref]time.Time
}

func newWorld(s *Sim) *world { return &world{sim: s, due: map[ref]time.Time{}} }

var (
	deploymentKind = "apps/Deployment"
	ingressKind    = "networking.internal.knative.dev/Ingress"
)

// actions lists the world's work that is due now. Work not yet due keeps the run
// going: nextDue says when.
func (w *world) actions() []action {
	s := w.sim
	var acts []action
	for _, o := range s.store.list(deploymentKind, "") {
		d := o.(*appsv1.Deployment)
		if deploymentSettled(d) {
			continue
		}
		r := s.store.refOf(d)
		if w.isDue(r, 3*time.Second) {
			acts = append(acts, action{"deployment controller syncs " + r.key.String(), func() { w.syncDeployment(r) }})
		}
	}
	for _, o := range s.store.list(ingressKind, "") {
		ing := o.(*netv1alpha1.Ingress)
		if ingressSettled(ing) {
			continue
		}
		r := s.store.refOf(ing)
		if w.isDue(r, time.Second) {
			acts = append(acts, action{"gateway programs " + r.key.String(), func() { w.programIngress(r) }})
		}
	}
	for _, r := range s.store.orphans() {
		acts = append(acts, action{"garbage collector deletes " + r.String(), func() {
			s.author = "garbage-collector"
			if err := s.store.delete(r, ""); err == nil {
				s.logf("[garbage-collector] deletes %s: its owner is gone", r)
			}
			s.author = ""
		}})
	}
	return acts
}

// isDue reports whether r's pending work may be done now, choosing its delay (up to
// most) when the work is first seen.
func (w *world) isDue(r ref, most time.Duration) bool {
	at, ok := w.due[r]
	if !ok {
		at = w.sim.now().Add(time.Duration(w.sim.rng.Int63n(int64(most))))
		w.due[r] = at
	}
	return !at.After(w.sim.now())
}

// nextDue is the earliest time pending world work becomes due, if any.
func (w *world) nextDue() (time.Time, bool) {
	var next time.Time
	found := false
	for _, at := range w.due {
		if at.After(w.sim.now()) && (!found || at.Before(next)) {
			next, found = at, true
		}
	}
	return next, found
}

func deploymentSettled(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return d.Status.ObservedGeneration == d.Generation && d.Status.ReadyReplicas == want && d.Status.Replicas == want
}

// syncDeployment reports the Deployment rolled out with all its replicas ready.
func (w *world) syncDeployment(r ref) {
	s := w.sim
	o, ok := s.store.get(r)
	if !ok {
		return
	}
	delete(w.due, r)
	d := o.(*appsv1.Deployment)
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	now := metav1.NewTime(s.now())
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: want, UpdatedReplicas: want, ReadyReplicas: want, AvailableReplicas: want,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", LastUpdateTime: now, LastTransitionTime: now},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", LastUpdateTime: now, LastTransitionTime: now},
		},
	}
	s.author = "deployment-controller"
	err := s.store.update(d, true)
	s.author = ""
	s.logf("[deployment-controller] %s has %d ready replicas: %s", r.key, want, resultOf(d, err))
}

func ingressSettled(ing *netv1alpha1.Ingress) bool {
	return ing.Status.ObservedGeneration == ing.Generation && ing.Status.GetCondition(netv1alpha1.IngressConditionReady).IsTrue()
}

// programIngress marks the KIngress's generation served, as Ferry's gateway does.
func (w *world) programIngress(r ref) {
	s := w.sim
	o, ok := s.store.get(r)
	if !ok {
		return
	}
	delete(w.due, r)
	ing := o.(*netv1alpha1.Ingress)
	ing.Status.ObservedGeneration = ing.Generation
	m := netv1alpha1.IngressConditions.Manage(&ing.Status.Status)
	m.InitializeConditions()
	m.MarkTrue(netv1alpha1.IngressConditionNetworkConfigured)
	m.MarkTrue(netv1alpha1.IngressConditionLoadBalancerReady)
	lb := &netv1alpha1.LoadBalancerStatus{Ingress: []netv1alpha1.LoadBalancerIngressStatus{{Domain: "ferry-gateway.ferry-system.svc.cluster.local"}}}
	ing.Status.PublicLoadBalancer, ing.Status.PrivateLoadBalancer = lb, lb
	s.author = "gateway"
	err := s.store.update(ing, true)
	s.author = ""
	s.logf("[gateway] programs %s generation %d: %s", r.key, ing.Generation, resultOf(ing, err))
}
