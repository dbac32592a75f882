package integration

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler"
	"github.com/ferry-serving/ferry/internal/reconciler/revision/resources"
)

// TestProbeSchemeInLowerCase: a Service whose probes say `scheme: http` and `https`,
// as Knative takes them (its queue-proxy reads the readiness probe, the kubelet
// never sees it), becomes Ready; its Deployment has the probes in the API server's
// terms, the readiness host Knative's prober ignores left out.
func TestProbeSchemeInLowerCase(t *testing.T) {
	ns := testNamespace(t)
	startFerry(t, ns, reconciler.Options{})
	dumpOnFailure(t, testClient, ns)

	svc := ksvc(ns, "probed", "ferry.test/probed")
	c := &svc.Spec.Template.Spec.Containers[0]
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: "/healthz", Scheme: "http", Host: "localhost", HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "ready"}}}}}
	c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/live", Scheme: "https"}}}
	if err := testClient.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, testClient, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)

	d := &appsv1.Deployment{}
	if !get(t, testClient, ns, resources.DeploymentName(svc.Status.LatestReadyRevisionName), d) {
		t.Fatal("no Deployment")
	}
	got := d.Spec.Template.Spec.Containers[0]
	if h := got.ReadinessProbe.HTTPGet; h.Scheme != corev1.URISchemeHTTP || h.Host != "" || h.Path != "/healthz" || h.Port.IntValue() != 8080 ||
		len(h.HTTPHeaders) != 1 || h.HTTPHeaders[0].Value != "ready" {
		t.Errorf("readiness probe %+v", h)
	}
	if h := got.LivenessProbe.HTTPGet; h.Scheme != corev1.URISchemeHTTPS || h.Path != "/live" || h.Port.IntValue() != 8080 {
		t.Errorf("liveness probe %+v", h)
	}
}
