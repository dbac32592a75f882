package integration

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler"
)

// TestRollbackToNamedRevision applies a Service's first template again after a second
// one, both naming their Revision: as in Knative (CheckNameAvailability in
// pkg/reconciler/configuration), the first Revision is this Configuration's and of the
// same spec, so it is the latest created and ready again and takes the traffic back;
// it is not reported as a name taken.
func TestRollbackToNamedRevision(t *testing.T) {
	c := testClient
	ns := testNamespace(t)
	startFerry(t, ns, reconciler.Options{})
	dumpOnFailure(t, c, ns)
	ctx := context.Background()

	first := func(s *v1.Service) {
		s.Spec.Template.ObjectMeta.Name = "app-byo-foo"
		s.Spec.Template.Spec.Containers[0].Image = "ferry.test/foo"
	}
	svc := ksvc(ns, "app", "")
	first(svc)
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	waitServing(t, svc, "app-byo-foo")

	updateService(t, c, ns, "app", func(s *v1.Service) {
		s.Spec.Template.ObjectMeta.Name = "app-byo-foo-new"
		s.Spec.Template.Spec.Containers[0].Image = "ferry.test/foo-new"
	})
	waitServing(t, svc, "app-byo-foo-new")

	updateService(t, c, ns, "app", first)
	waitServing(t, svc, "app-byo-foo")

	// The Revision is taken back as it is: Knative does not relabel it.
	rev := &v1.Revision{}
	get(t, c, ns, "app-byo-foo", rev)
	if g := rev.Labels[v1.ConfigurationGenerationLabelKey]; g != "1" {
		t.Errorf("Revision app-byo-foo: configurationGeneration label %q, want 1", g)
	}
	if get(t, c, ns, "app-00003", &v1.Revision{}) {
		t.Error("a Revision app-00003 was made")
	}
}

// waitServing waits until the Service has settled on its current generation and
// checks that it is Ready with name as its latest created and ready Revision, which
// takes all the traffic.
func waitServing(t *testing.T, svc *v1.Service, name string) {
	t.Helper()
	eventually(t, readyTimeout, func() (bool, string) {
		get(t, testClient, svc.Namespace, svc.Name, svc)
		ready := condition(&svc.Status.Status, v1.ServiceConditionReady)
		// Settled: serving name, or the Configuration's verdict is a failure (the
		// Route's own may be False for a moment while the Configuration is made).
		settled := svc.Status.ObservedGeneration == svc.Generation &&
			(ready.Status == corev1.ConditionTrue && len(svc.Status.Traffic) == 1 && svc.Status.Traffic[0].RevisionName == name ||
				condition(&svc.Status.Status, v1.ServiceConditionConfigurationsReady).Status == corev1.ConditionFalse)
		return settled, fmt.Sprintf("Service %s: observedGeneration %d/%d, Ready %+v, traffic %+v",
			svc.Name, svc.Status.ObservedGeneration, svc.Generation, ready, svc.Status.Traffic)
	})
	ready := condition(&svc.Status.Status, v1.ServiceConditionReady)
	if ready.Status != corev1.ConditionTrue {
		t.Fatalf("Service %s at generation %d: Ready %s %s: %s", svc.Name, svc.Generation, ready.Status, ready.Reason, ready.Message)
	}
	st := svc.Status
	if st.LatestCreatedRevisionName != name || st.LatestReadyRevisionName != name ||
		st.Traffic[0].Percent == nil || *st.Traffic[0].Percent != 100 {
		t.Errorf("Service %s: latest created %q, latest ready %q, traffic %+v; want all on %s",
			svc.Name, st.LatestCreatedRevisionName, st.LatestReadyRevisionName, st.Traffic, name)
	}
}
