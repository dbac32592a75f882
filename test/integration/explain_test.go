package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ferry-serving/ferry/internal/explain"
	"github.com/ferry-serving/ferry/internal/gateway"
	"github.com/ferry-serving/ferry/internal/reconciler"
)

// startFerryAndGateway runs Ferry's reconcilers and, with withGateway, the real
// gateway with kwok's pods simulated (as `ferry up` does), in a manager of their own
// that sees namespaces (every namespace if none) until the test ends. It returns the gateway's external URL ("" without one):
// without a gateway nobody marks a KIngress Ready.
func startFerryAndGateway(t *testing.T, withGateway bool, namespaces ...string) string {
	t.Helper()
	return startFerryAndGatewayWith(t, reconciler.Options{}, withGateway, namespaces...)
}

// startFerryAndGatewayWith is startFerryAndGateway with the reconcilers' options (a
// configuration of their own, say).
func startFerryAndGatewayWith(t *testing.T, opts reconciler.Options, withGateway bool, namespaces ...string) string {
	t.Helper()
	gw := startReconcilersAndGateway(t, opts, withGateway, namespaces...)
	if gw == nil {
		return ""
	}
	return "http://" + gw.ExternalAddr()
}

// startReconcilersAndGateway is startFerryAndGatewayWith returning the gateway (nil
// without one), for a test that uses both of its listeners.
func startReconcilersAndGateway(t *testing.T, opts reconciler.Options, withGateway bool, namespaces ...string) *gateway.Gateway {
	t.Helper()
	setLoggerOnce.Do(func() { ctrl.SetLogger(logr.New(errorSink{})) })
	mgr := newTestManager(t, rest.CopyConfig(testConfig), namespaces...)
	ctrls, err := reconciler.SetupWithManager(mgr, opts)
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
	return gw
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

// TestExplainReady: a healthy Service is Ready and routed through the gateway, and
// a name that does not exist is said to be one. The failures are explainTable's.
func TestExplainReady(t *testing.T) {
	ns := testNamespace(t)
	gatewayURL := startFerryAndGateway(t, true, ns)
	dumpOnFailure(t, testClient, ns)
	ctx := context.Background()

	if err := testClient.Create(ctx, ksvc(ns, "fine", "ferry.test/fine")); err != nil {
		t.Fatal(err)
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
// Configuration or Route, and is Ready once Ferry runs.
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

	startFerryAndGateway(t, true, ns)
	explainUntil(t, explain.Target{Kind: explain.KindService, Namespace: ns, Name: "early"}, "", func(r explain.Report) bool { return r.OK })
}
