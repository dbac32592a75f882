package scale

import (
	"context"
	"strings"
	"testing"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/explain"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The explainer's own table is in internal/explain; these tests check what scale
// feeds it.

const svcName = "scale-00010-004-gkwltbwt"

func cond(t duck.ConditionType, s corev1.ConditionStatus, reason, msg string) duck.Condition {
	return duck.Condition{Type: t, Status: s, Reason: reason, Message: msg}
}

func om(name string, gen int64) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: gen}
}

// waitingChain is a Service whose Revision waits for its unschedulable pod, read as
// explainStuck reads it.
func waitingChain(t *testing.T) explain.Chain {
	t.Helper()
	c, err := explain.Read(context.Background(), waitingObjects(t), explain.Target{Kind: explain.KindService, Namespace: "ns", Name: svcName})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitingObjects are a run's lists, as readRun takes them.
func waitingObjects(t *testing.T) *explain.Snapshot {
	T, F, U := corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown
	rev := svcName + "-00001"
	svc := &v1.Service{ObjectMeta: om(svcName, 1)}
	svc.Status.Status = duck.Status{ObservedGeneration: 1, Conditions: []duck.Condition{
		cond(duck.ConditionReady, U, v1.ReasonRevisionMissing, "Configuration \""+svcName+"\" is waiting for a Revision to become ready."),
		cond(v1.ServiceConditionConfigurationsReady, U, v1.ReasonDeploying, ""),
		cond(v1.ServiceConditionRoutesReady, U, v1.ReasonRevisionMissing, "Configuration \""+svcName+"\" is waiting for a Revision to become ready.")}}
	cfg := &v1.Configuration{ObjectMeta: om(svcName, 1)}
	cfg.Status.Status = duck.Status{ObservedGeneration: 1, Conditions: []duck.Condition{cond(duck.ConditionReady, U, v1.ReasonDeploying, "")}}
	cfg.Status.LatestCreatedRevisionName = rev
	r := v1.Revision{ObjectMeta: om(rev, 1)}
	r.Labels = map[string]string{v1.ConfigurationGenerationLabelKey: "1", v1.ConfigurationLabelKey: svcName}
	r.Status.Status = duck.Status{ObservedGeneration: 1, Conditions: []duck.Condition{
		cond(duck.ConditionReady, U, v1.ReasonDeploying, ""),
		cond(v1.RevisionConditionResourcesAvailable, U, v1.ReasonDeploying, ""),
		cond(v1.RevisionConditionContainerHealthy, U, v1.ReasonDeploying, "")}}
	dep := &appsv1.Deployment{ObjectMeta: om(rev+"-deployment", 1), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)}}
	dep.Status.Conditions = []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentProgressing, Status: T, Reason: "ReplicaSetUpdated"},
		{Type: appsv1.DeploymentAvailable, Status: F, Reason: "MinimumReplicasUnavailable", Message: "Deployment does not have minimum availability."},
	}
	pod := corev1.Pod{ObjectMeta: om(rev+"-deployment-7d9f-x2x", 0)}
	pod.Labels = map[string]string{v1.RevisionLabelKey: rev}
	pod.Status.Phase = corev1.PodPending
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: F, Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient cpu."}}
	rt := &v1.Route{ObjectMeta: om(svcName, 1)}
	rt.Status.Status = duck.Status{ObservedGeneration: 1, Conditions: []duck.Condition{
		cond(duck.ConditionReady, U, v1.ReasonRevisionMissing, ""),
		cond(v1.RouteConditionAllTrafficAssigned, U, v1.ReasonRevisionMissing, "Configuration \""+svcName+"\" is waiting for a Revision to become ready."),
		cond(v1.RouteConditionIngressReady, U, v1.ReasonIngressNotConfigured, ""),
		cond(v1.RouteConditionCertificateProvisioned, T, v1.ReasonTLSNotEnabled, "")}}
	snap := &explain.Snapshot{}
	for _, l := range []client.ObjectList{&v1.ServiceList{Items: []v1.Service{*svc}}, &v1.ConfigurationList{Items: []v1.Configuration{*cfg}},
		&v1.RevisionList{Items: []v1.Revision{r}}, &v1.RouteList{Items: []v1.Route{*rt}}, &netv1alpha1.IngressList{},
		&appsv1.DeploymentList{Items: []appsv1.Deployment{*dep}}, &corev1.PodList{Items: []corev1.Pod{pod}}} {
		if err := snap.AddList(l); err != nil {
			t.Fatal(err)
		}
	}
	return snap
}

// TestChainExplained: the objects a run read become the chain of one Service, and
// the explanation walks it down to the pod.
func TestChainExplained(t *testing.T) {
	c := waitingChain(t)
	if c.Service == nil || c.Configuration == nil || len(c.Revisions) != 1 || c.Deployments[svcName+"-00001"] == nil ||
		len(c.Pods[svcName+"-00001"]) != 1 || c.Route == nil || c.Ingress != nil {
		t.Fatalf("chain = %+v", c)
	}
	e := explain.Explain(c)
	if want := "Pod " + svcName + "-00001-deployment-7d9f-x2x: Pending; PodScheduled=False Unschedulable"; !strings.HasPrefix(e.Culprit, want) {
		t.Errorf("culprit = %q, want prefix %q", e.Culprit, want)
	}
	if e.Kind != "Pod Pending PodScheduled=False Unschedulable" {
		t.Errorf("kind = %q", e.Kind)
	}
	if !strings.Contains(e.String(), "    → KIngress "+svcName+": missing") {
		t.Errorf("explanation:\n%s", e)
	}
	if got := explain.Explain(explain.Chain{Name: "x", CreateError: "boom"}).Kind; got != "ksvc not created" {
		t.Errorf("kind of a create error = %q", got)
	}
}

// TestPinnedToMissingRevision: a stuck Service whose traffic names a Revision that
// does not exist is blamed on its Route, with the Revisions that do exist, in the
// run's summary as `ferry explain` says it.
func TestPinnedToMissingRevision(t *testing.T) {
	T, F := corev1.ConditionTrue, corev1.ConditionFalse
	rev, missing := svcName+"-00001", svcName+"-00099"
	msg := `Revision "` + missing + `" referenced in traffic not found.`
	svc := &v1.Service{ObjectMeta: om(svcName, 1)}
	svc.Spec.Traffic = []v1.TrafficTarget{{RevisionName: missing, Percent: ptr.To[int64](100)}}
	svc.Status.Status = duck.Status{ObservedGeneration: 1, Conditions: []duck.Condition{cond(duck.ConditionReady, F, v1.ReasonRevisionMissing, msg),
		cond(v1.ServiceConditionConfigurationsReady, T, "", ""), cond(v1.ServiceConditionRoutesReady, F, v1.ReasonRevisionMissing, msg)}}
	cfg := &v1.Configuration{ObjectMeta: om(svcName, 1)}
	cfg.Status.Status = duck.Status{ObservedGeneration: 1, Conditions: []duck.Condition{cond(duck.ConditionReady, T, "", "")}}
	cfg.Status.LatestCreatedRevisionName, cfg.Status.LatestReadyRevisionName = rev, rev
	r := v1.Revision{ObjectMeta: om(rev, 1)}
	r.Labels = map[string]string{v1.ConfigurationGenerationLabelKey: "1", v1.ConfigurationLabelKey: svcName}
	r.Status.Status = duck.Status{ObservedGeneration: 1, Conditions: []duck.Condition{cond(duck.ConditionReady, T, "", "")}}
	rt := &v1.Route{ObjectMeta: om(svcName, 1)}
	rt.Spec.Traffic = svc.Spec.Traffic
	rt.Status.Status = duck.Status{ObservedGeneration: 1, Conditions: []duck.Condition{cond(duck.ConditionReady, F, v1.ReasonRevisionMissing, msg),
		cond(v1.RouteConditionAllTrafficAssigned, F, v1.ReasonRevisionMissing, msg), cond(v1.RouteConditionIngressReady, corev1.ConditionUnknown, v1.ReasonIngressNotConfigured, "")}}
	snap := &explain.Snapshot{}
	for _, l := range []client.ObjectList{&v1.ServiceList{Items: []v1.Service{*svc}}, &v1.ConfigurationList{Items: []v1.Configuration{*cfg}},
		&v1.RevisionList{Items: []v1.Revision{r}}, &v1.RouteList{Items: []v1.Route{*rt}}, &netv1alpha1.IngressList{}} {
		if err := snap.AddList(l); err != nil {
			t.Fatal(err)
		}
	}
	c, err := explain.Read(context.Background(), snap, explain.Target{Kind: explain.KindService, Namespace: "ns", Name: svcName})
	if err != nil {
		t.Fatal(err)
	}
	e := explain.Explain(c)
	var b strings.Builder
	WriteSummary(&b, &Result{N: 1, Samples: []Sample{{Name: svcName, Stuck: true, Explanation: &e}}}, 10)
	for _, want := range []string{
		"1 × Route AllTrafficAssigned=False RevisionMissing (not found)",
		`culprit: Route ` + svcName + `: its traffic names Revision "` + missing + `", which does not exist`,
		`to do:   Revision "` + missing + `" does not exist (Configuration ` + svcName + ` has ` + rev + ` (latest ready))`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, b.String())
		}
	}
}
