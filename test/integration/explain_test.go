package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/explain"
	"github.com/ferry-serving/ferry/internal/gateway"
	"github.com/ferry-serving/ferry/internal/localcluster"
	"github.com/ferry-serving/ferry/internal/reconciler"
)

// startFerryAndGateway runs Ferry's reconcilers and, with withGateway, the real
// gateway with kwok's pods simulated (as `ferry up` does), in a manager of their own
// that sees namespaces (every namespace if none) until the test ends. It returns the gateway's external URL ("" without one):
// without a gateway nobody marks a KIngress Ready.
func startFerryAndGateway(t *testing.T, withGateway bool, namespaces ...string) string {
	t.Helper()
	setLoggerOnce.Do(func() { ctrl.SetLogger(logr.New(errorSink{})) })
	mgr := newTestManager(t, rest.CopyConfig(testConfig), namespaces...)
	ctrls, err := reconciler.SetupWithManager(mgr, reconciler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var gw *gateway.Gateway
	if withGateway {
		gw = gateway.New(gateway.Options{ExternalAddr: "127.0.0.1:0", LocalAddr: "127.0.0.1:0", SimulatedPods: true,
			Registry: prometheus.NewRegistry(), Stats: ctrls.Autoscaler})
		if err := gw.SetupWithManager(mgr); err != nil {
			t.Fatal(err)
		}
	}
	runTestManager(t, mgr)
	if gw == nil {
		return ""
	}
	return "http://" + gw.ExternalAddr()
}

// explainUntil runs `ferry explain`'s Go API until done says the report is the one
// the test waits for, and returns it; the last report is in the failure.
func explainUntil(t *testing.T, target explain.Target, gatewayURL string, done func(explain.Report) bool) explain.Report {
	t.Helper()
	var last explain.Report
	eventually(t, readyTimeout, func() (bool, string) {
		r, err := explain.Check(context.Background(), testClient, target, gatewayURL)
		if err != nil {
			return false, err.Error()
		}
		last = r
		return done(r), "last report:\n" + r.String()
	})
	t.Logf("ferry explain %s %s:\n%s", target.Kind, target.Name, last)
	return last
}

func wantInReport(t *testing.T, r explain.Report, subs ...string) {
	t.Helper()
	text := r.String()
	for _, s := range subs {
		if !strings.Contains(text, s) {
			t.Errorf("the report does not say %q:\n%s", s, text)
		}
	}
}

// TestExplainReadyAndBroken: a healthy Service is Ready and routed through the
// gateway; one whose image cannot be pulled is explained down to the pod, with the
// Revision's condition and the kubelet's reason.
func TestExplainReadyAndBroken(t *testing.T) {
	ns := testNamespace(t)
	gatewayURL := startFerryAndGateway(t, true, ns)
	dumpOnFailure(t, testClient, ns)
	ctx := context.Background()

	for _, s := range []*v1.Service{ksvc(ns, "fine", "ferry.test/fine"), ksvc(ns, "broken", localcluster.ImagePullErrorImage)} {
		if err := testClient.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}

	fine := explainUntil(t, explain.Target{Kind: explain.KindService, Namespace: ns, Name: "fine"}, gatewayURL, func(r explain.Report) bool { return r.OK })
	if !strings.HasPrefix(fine.Headline, "Ready and routed: the gateway at "+gatewayURL) || fine.Culprit != "" || len(fine.Advice) != 0 {
		t.Errorf("healthy report: %+v", fine)
	}
	for _, s := range fine.Steps {
		if !s.Done {
			t.Errorf("step not done in a healthy Service: %+v", s)
		}
	}
	wantInReport(t, fine, "✓ Pod fine-00001-deployment-", "✓ gateway: routed GET / with Host fine."+ns+".example.com: 200 Hello from revision fine-00001")

	// The status alone says routed too, without asking the gateway.
	if r, err := explain.Check(ctx, testClient, explain.Target{Kind: explain.KindService, Namespace: ns, Name: "fine"}, ""); err != nil || !r.OK {
		t.Errorf("without --gateway: %v\n%s", err, r)
	}

	bad := &v1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken-00001"}}
	waitCondition(t, testClient, bad, v1.RevisionConditionContainerHealthy, corev1.ConditionFalse, "ContainerMissing", readyTimeout)
	broken := explainUntil(t, explain.Target{Kind: explain.KindService, Namespace: ns, Name: "broken"}, gatewayURL,
		func(r explain.Report) bool { return strings.Contains(r.Kind, "ErrImagePull") })
	if broken.OK || !strings.HasPrefix(broken.Culprit, "Pod broken-00001-deployment-") {
		t.Errorf("culprit = %q", broken.Culprit)
	}
	wantInReport(t, broken, "NOT READY", "ContainerHealthy=False ContainerMissing", "waiting: ErrImagePull",
		`cannot be pulled`, "✗ Revision broken-00001 (latest created)")

	// From the Revision: the same culprit.
	rev := explainUntil(t, explain.Target{Kind: explain.KindRevision, Namespace: ns, Name: "broken-00001"}, "", func(r explain.Report) bool { return !r.OK })
	if !strings.Contains(rev.Kind, "ErrImagePull") {
		t.Errorf("revision report kind = %q", rev.Kind)
	}
	// A name that does not exist.
	if r, err := explain.Check(ctx, testClient, explain.Target{Kind: explain.KindService, Namespace: ns, Name: "nope"}, ""); err != nil || r.OK || r.Kind != "ksvc not found" {
		t.Errorf("a missing Service: %v\n%s", err, r)
	}
}

// TestExplainIngressNotReady: with no gateway running, nobody programs the KIngress;
// the report names that step and asks whether the gateway runs.
func TestExplainIngressNotReady(t *testing.T) {
	ns := testNamespace(t)
	startFerryAndGateway(t, false, ns)
	dumpOnFailure(t, testClient, ns)
	if err := testClient.Create(context.Background(), ksvc(ns, "lonely", "ferry.test/lonely")); err != nil {
		t.Fatal(err)
	}
	r := explainUntil(t, explain.Target{Kind: explain.KindService, Namespace: ns, Name: "lonely"}, "", func(r explain.Report) bool {
		return strings.HasPrefix(r.Kind, "KIngress") && len(r.Steps) > 1 && r.Steps[1].Done // the Configuration is Ready: only the KIngress waits
	})
	if r.OK || !strings.HasPrefix(r.Culprit, "KIngress lonely: ") {
		t.Errorf("culprit = %q", r.Culprit)
	}
	wantInReport(t, r, "✗ KIngress lonely", "Is the gateway running?", "✓ Revision lonely-00001")
	// From the Route, too.
	rt := explainUntil(t, explain.Target{Kind: explain.KindRoute, Namespace: ns, Name: "lonely"}, "", func(r explain.Report) bool { return !r.OK })
	if !strings.HasPrefix(rt.Kind, "KIngress") {
		t.Errorf("route report kind = %q", rt.Kind)
	}
}

// TestExplainRouteMissing: a Service created while Ferry is not running has no
// Configuration or Route; once Ferry runs, a Service whose Route name is taken by
// another Route is explained as such.
func TestExplainRouteMissing(t *testing.T) {
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	ctx := context.Background()
	if err := testClient.Create(ctx, ksvc(ns, "early", "ferry.test/early")); err != nil {
		t.Fatal(err)
	}
	r, err := explain.Check(ctx, testClient, explain.Target{Kind: explain.KindService, Namespace: ns, Name: "early"}, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("before Ferry runs:\n%s", r)
	if r.OK || r.Kind != "Configuration missing" {
		t.Errorf("kind = %q", r.Kind)
	}
	wantInReport(t, r, "✗ Route early: missing", "Is Ferry's controller running?")

	// A Route of the Service's name that the Service does not own.
	squatter := &v1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"}}
	squatter.Spec.Traffic = []v1.TrafficTarget{{ConfigurationName: "elsewhere", Percent: ptr(int64(100))}}
	if err := testClient.Create(ctx, squatter); err != nil {
		t.Fatal(err)
	}
	startFerryAndGateway(t, true, ns)
	if err := testClient.Create(ctx, ksvc(ns, "taken", "ferry.test/taken")); err != nil {
		t.Fatal(err)
	}
	taken := explainUntil(t, explain.Target{Kind: explain.KindService, Namespace: ns, Name: "taken"}, "", func(r explain.Report) bool { return r.Kind == "Route not owned" })
	if !strings.HasPrefix(taken.Culprit, "Route taken: not owned by ksvc taken") {
		t.Errorf("culprit = %q", taken.Culprit)
	}
	wantInReport(t, taken, "NotOwned", "`kubectl get route taken -n "+ns+" -o yaml`")
	// The early Service is Ready now that Ferry runs.
	explainUntil(t, explain.Target{Kind: explain.KindService, Namespace: ns, Name: "early"}, "", func(r explain.Report) bool { return r.OK })
}
