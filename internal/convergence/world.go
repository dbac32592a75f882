package convergence

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// world is the rest of the cluster, as far as Ferry's controllers can tell: the
// Deployment controller and its pods (a Deployment becomes available a seeded delay
// after it asks for replicas) and the garbage collector (dependents of a deleted owner
// go at some later step). The gateway is not the world's: its own KIngress reconciler
// runs as a process (gateway.go). They act on the store directly: they are not
// under test, only their timing is.
type world struct {
	sim *Sim
	// due is when each object's pending work may be done, chosen when first seen.
	due map[ref]time.Time
}

func newWorld(s *Sim) *world { return &world{sim: s, due: map[ref]time.Time{}} }

var deploymentKind = "apps/Deployment"

// actions lists the world's work that is due now. Work not yet due keeps the run
// going: nextDue says when.
func (w *world) actions() []action {
	s := w.sim
	var acts []action
	for _, o := range s.store.view(deploymentKind, "") {
		d := o.(*appsv1.Deployment)
		if deploymentSettled(d) {
			continue
		}
		r := s.store.refOf(d)
		if w.isDue(r, 3*time.Second) {
			acts = append(acts, action{"deployment controller syncs " + r.key.String(), func() { w.syncDeployment(r) }})
		}
	}
	for _, r := range s.store.orphans() {
		acts = append(acts, action{"garbage collector deletes " + r.String(), func() {
			s.author = "garbage-collector"
			if err := s.store.delete(r, "", ""); err == nil {
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
