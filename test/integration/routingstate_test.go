package integration

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// TestMinScaleLeavesUnroutedRevisions: min-scale holds a Revision's pods while a Route
// sends it traffic, as in Knative: once a new Revision takes all the traffic, the old
// one is labelled routingState=reserve, its PodAutoscaler turns Unreachable and its
// pods go; when the Service pins its traffic back on it, it is labelled active and
// min-scale brings a pod back. The latest Revision keeps its pod throughout.
func TestMinScaleLeavesUnroutedRevisions(t *testing.T) {
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	farm := newPodFarm(t, 0)
	startAutoscaling(t, farm)

	svc := autoscaled(ns, "kept", map[string]string{"autoscaling.knative.dev/min-scale": "1"})
	rev1, _ := createReady(t, svc)
	updateService(t, testClient, ns, "kept", func(s *v1.Service) {
		s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", Value: "2"}}
	})
	var rev2 string
	eventually(t, 2*time.Minute, func() (bool, string) {
		s := &v1.Service{}
		get(t, testClient, ns, "kept", s)
		rev2 = s.Status.LatestReadyRevisionName
		return rev2 != rev1 && s.Status.GetCondition(duck.ConditionReady).IsTrue(), fmt.Sprintf("latest ready %q", rev2)
	})

	waitRoutingState(t, ns, rev1, v1.RoutingStateReserve, av1alpha1.ReachabilityUnreachable, 0)
	if spec, _ := scaleOf(t, ns, rev2); spec != 1 {
		t.Errorf("%s, routed, with min-scale 1: %d replicas", rev2, spec)
	}

	hundred := int64(100)
	updateService(t, testClient, ns, "kept", func(s *v1.Service) {
		s.Spec.Traffic = []v1.TrafficTarget{{RevisionName: rev1, Percent: &hundred}}
	})
	waitRoutingState(t, ns, rev1, v1.RoutingStateActive, av1alpha1.ReachabilityReachable, 1)
	// The latest Revision, now without traffic, is never labelled reserve: it keeps the
	// active it was created with (its Configuration followed the latest).
	rev := &v1.Revision{}
	get(t, testClient, ns, rev2, rev)
	if state := rev.Labels[v1.RoutingStateLabelKey]; state != string(v1.RoutingStateActive) {
		t.Errorf("%s, the latest Revision, labelled routingState=%s", rev2, state)
	}
	if spec, _ := scaleOf(t, ns, rev2); spec != 1 {
		t.Errorf("%s, the latest Revision, with min-scale 1: %d replicas", rev2, spec)
	}
}

// waitRoutingState waits until the Revision is labelled state, with the time of the
// change in routingStateModified, its PodAutoscaler says reachability and its
// Deployment asks for replicas.
func waitRoutingState(t *testing.T, ns, name string, state v1.RoutingState, reachability av1alpha1.ReachabilityType, replicas int32) {
	t.Helper()
	eventually(t, 2*time.Minute, func() (bool, string) {
		rev, pa := &v1.Revision{}, &av1alpha1.PodAutoscaler{}
		get(t, testClient, ns, name, rev)
		get(t, testClient, ns, name, pa)
		spec, _ := scaleOf(t, ns, name)
		_, err := time.Parse(time.RFC3339, rev.Annotations[v1.RoutingStateModifiedAnnotation])
		return rev.Labels[v1.RoutingStateLabelKey] == string(state) && err == nil &&
				pa.Spec.Reachability == reachability && spec == replicas,
			fmt.Sprintf("%s: routingState %q modified %q, PodAutoscaler %q, %d replicas; want %s, %s, %d",
				name, rev.Labels[v1.RoutingStateLabelKey], rev.Annotations[v1.RoutingStateModifiedAnnotation],
				pa.Spec.Reachability, spec, state, reachability, replicas)
	})
	t.Logf("%s: routingState=%s, PodAutoscaler %s, %d replicas", name, state, reachability, replicas)
}
