package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/explain"
)

// TestLongestServiceNameServes: a Service named with 63 characters, the longest
// admission accepts (a DNS-1035 label), becomes Ready and its host is routed through
// the gateway. <name>-00001 and <name>-00001-deployment are over 63, so the Revision and
// the Deployment get Knative's hashed names (kmeta.ChildName); the literal names are
// Knative's for this Service.
func TestLongestServiceNameServes(t *testing.T) {
	ns := testNamespace(t)
	gatewayURL := startFerryAndGateway(t, true, ns)
	dumpOnFailure(t, testClient, ns)
	const (
		name       = "the-longest-name-knative-accepts-for-a-service-is-63-characters"
		revision   = "the-longest-name-knative-0b3fa7fd5cddc016fb1060803dcc2532-00001"
		deployment = "the-longest-name-knad8fc388004f3b035b1a4205c4d5f2dd9-deployment"
	)
	if len(name) != 63 {
		t.Fatalf("the name has %d characters, want 63", len(name))
	}
	svc := ksvc(ns, name, "ferry.test/long")
	if err := testClient.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, testClient, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)

	if svc.Status.LatestReadyRevisionName != revision {
		t.Errorf("latest ready Revision = %q, want %q", svc.Status.LatestReadyRevisionName, revision)
	}
	dep, ing := &appsv1.Deployment{}, &netv1alpha1.Ingress{}
	if !get(t, testClient, ns, deployment, dep) || !get(t, testClient, ns, name, ing) {
		t.Fatal("the Deployment or the KIngress is missing")
	}
	if dep.Labels[v1.RevisionLabelKey] != revision || dep.Labels[v1.ServiceLabelKey] != name || dep.Labels[v1.ConfigurationLabelKey] != name {
		t.Errorf("Deployment labels = %v", dep.Labels)
	}

	host := name + "." + ns + ".example.com"
	if svc.Status.URL != "http://"+host {
		t.Errorf("URL = %q, want http://%s", svc.Status.URL, host)
	}
	code, body := send(t, strings.TrimPrefix(gatewayURL, "http://"), host, "/")
	if code != http.StatusOK || !strings.Contains(body, revision) {
		t.Errorf("GET / with Host %s through the gateway: %d %q, want 200 from %s", host, code, body, revision)
	}

	// explain finds the hashed children by the reconcilers' own names.
	r := explainUntil(t, explain.Target{Kind: explain.KindService, Namespace: ns, Name: name}, gatewayURL, func(r explain.Report) bool { return r.OK })
	wantInReport(t, r, "✓ Deployment "+deployment+": 1/1 available")
}
