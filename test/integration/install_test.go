package integration

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/explain"
	"github.com/ferry-serving/ferry/internal/localcluster"
)

// TestInstall installs Ferry from config/ as `kubectl apply --server-side -k config/`
// would (the Namespace, CRDs, RBAC and ConfigMaps; not the Deployments, Services and
// webhook configurations, which the shared test cluster has no pod network for:
// TestInstallAsPods installs those on ferry up), then runs `ferry
// controller` and `ferry gateway` as their own processes, each authenticated only as the
// ServiceAccount its Deployment names. The samples become Ready and are routed through
// the gateway, neither process is ever refused, and each identity is refused what its
// component does not need.
func TestInstall(t *testing.T) {
	setLoggerOnce.Do(func() { ctrl.SetLogger(logr.New(errorSink{})) })
	start := time.Now()
	manifests := buildInstall(t)
	applyInstall(t, manifests)
	t.Logf("built and applied %d objects in %v", len(manifests.objects), time.Since(start).Round(time.Millisecond))
	controller := serviceAccountKubeconfig(t, manifests.serviceAccount["ferry-controller"])
	gateway := serviceAccountKubeconfig(t, manifests.serviceAccount["ferry-gateway"])
	// The processes start once both identities hold every right they need, so that a
	// refusal they log means a missing rule, not RBAC catching up with the apply.
	checkAccess(t, controller, controllerMay, nil)
	checkAccess(t, gateway, gatewayMay, nil)
	t.Logf("both ServiceAccounts authorized %v after the install began", time.Since(start).Round(time.Millisecond))

	// Created first so that it is deleted after the processes stop (cleanups run last
	// first), before which they may be refused writes into it.
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	addrs := loopbackAddrs(t, 3)
	// The gateway reports load to the controller over the network, as in a cluster.
	gw := startProcess(t, "ferry gateway", nil, "gateway", "--kubeconfig", gateway.path,
		"--simulated-pods", "--addr", addrs[0], "--local-addr", addrs[1], "--metrics-addr", "0", "--health-addr", "0",
		"--autoscaler", addrs[2], "--lease-namespace", gatewayLeaseNamespace)
	ctl := startProcess(t, "ferry controller", nil, "controller", "--kubeconfig", controller.path,
		"--metrics-addr", "0", "--health-addr", "0", "--stats-addr", addrs[2], "--leader-elect", "--leader-election-namespace", systemNamespace)
	procs := []namedProcess{{"ferry controller", ctl}, {"ferry gateway", gw}}
	watchProcesses(t, procs)
	gatewayURL := "http://" + addrs[0]

	dyn, err := dynamic.NewForConfig(testConfig)
	if err != nil {
		t.Fatal(err)
	}
	apply := func(obj *unstructured.Unstructured) {
		t.Helper()
		obj.SetNamespace(ns)
		if err := serverSideApply(dyn, obj); err != nil {
			t.Fatalf("%s %s: refused: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	started := time.Now()
	hello := readManifests(t, "../../config/samples/hello-world.yaml")[0]
	apply(hello)
	waitInstalledRouted(t, procs, ns, hello.GetName(), gatewayURL)
	t.Logf("hello routed %v after the processes started", time.Since(started).Round(time.Millisecond))

	// The traffic-split sample, then its second step (as its comment says): v2 gets the
	// latest tag's 10% once Ready, and both revisions answer on the Service's host.
	split := readManifests(t, "../../config/samples/traffic-split.yaml")[0]
	apply(split.DeepCopy())
	waitInstalledRouted(t, procs, ns, split.GetName(), gatewayURL)
	apply(splitDemoV2(t, split))
	waitInstalledRouted(t, procs, ns, split.GetName(), gatewayURL)
	checkSplitAnswers(t, ns, split.GetName(), gatewayURL)
	t.Logf("hello and split-demo routed %v after the processes started", time.Since(started).Round(time.Millisecond))

	// The DomainMapping sample, its domain claimed as an administrator would (no
	// autocreate here): the controller's identity reads the claim and the Service and
	// programs the KIngress, which the gateway serves.
	for _, obj := range readManifests(t, "../../config/samples/knative/domainmapping.yaml") {
		if obj.GetKind() == "DomainMapping" {
			claimDomain(t, ns, obj.GetName())
			apply(obj)
			waitSampleDomainMapped(t, ns, obj.GetName(), gatewayURL)
			continue
		}
		apply(obj)
	}

	// A Revision whose image cannot be pulled fails: the controller says so with a
	// Warning Event, which nothing above records.
	if err := testClient.Create(context.Background(), ksvc(ns, "broken", localcluster.ImagePullErrorImage)); err != nil {
		t.Fatal(err)
	}
	waitWarningEvent(t, ns, "broken-00001")

	checkAccess(t, controller, nil, controllerMayNot(ns))
	checkAccess(t, gateway, nil, gatewayMayNot(ns, split.GetName()))
}

// waitInstalledRouted is waitSampleRouted, failing at once if a process has exited or
// was refused already (the cleanup that watchProcesses registers says which).
func waitInstalledRouted(t *testing.T, procs []namedProcess, ns, name, gatewayURL string) {
	t.Helper()
	if len(processProblems(procs)) > 0 {
		t.FailNow()
	}
	waitSampleRouted(t, ns, name, gatewayURL)
}

// waitWarningEvent waits for a Warning Event on the Revision.
func waitWarningEvent(t *testing.T, ns, revision string) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(testConfig)
	eventually(t, readyTimeout, func() (bool, string) {
		list, err := cs.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "Revision" && e.Regarding.Name == revision && e.Type == corev1.EventTypeWarning {
				t.Logf("Revision %s: Warning %s by %s: %s", revision, e.Reason, e.ReportingController, e.Note)
				return true, ""
			}
		}
		return false, fmt.Sprintf("no Warning Event on Revision %s among %d Events", revision, len(list.Items))
	})
}

// splitDemoV2 is the traffic-split sample's second step: a new template name and TARGET.
func splitDemoV2(t *testing.T, split *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	v2 := split.DeepCopy()
	containers, _, err := unstructured.NestedSlice(v2.Object, "spec", "template", "spec", "containers")
	if err != nil || len(containers) != 1 {
		t.Fatalf("traffic-split.yaml: want one container, got %v (%v)", containers, err)
	}
	containers[0].(map[string]any)["env"] = []any{map[string]any{"name": "TARGET", "value": "v2"}}
	if err := unstructured.SetNestedSlice(v2.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(v2.Object, "split-demo-v2", "spec", "template", "metadata", "name"); err != nil {
		t.Fatal(err)
	}
	return v2
}

// routedTo is the revision a simulated pod's answer names ("200 Hello from revision
// hello-00001 (pod 10.244.0.5 is simulated by kwok; …)").
var routedTo = regexp.MustCompile(`Hello from revision (\S+) `)

// checkSplitAnswers: each tag's host answers from its revision, and the Service's own
// host from both (90/10, so a few hundred requests see both).
func checkSplitAnswers(t *testing.T, ns, name, gatewayURL string) {
	t.Helper()
	svc := &v1.Service{}
	if !get(t, testClient, ns, name, svc) {
		t.Fatalf("Service %s is gone", name)
	}
	answer := func(host string) string {
		routed, a := explain.Probe(context.Background(), gwClient, gatewayURL, host)
		if m := routedTo.FindStringSubmatch(a); routed && m != nil {
			return m[1]
		}
		t.Fatalf("%s: not routed: %s", host, a)
		return ""
	}
	want := map[string]string{"current": "split-demo-v1", "latest": "split-demo-v2"}
	for _, tt := range svc.Status.Traffic {
		if got := answer(explain.HostOf(tt.URL)); got != want[tt.Tag] {
			t.Errorf("tag %q (%s) answered from %s, want %s", tt.Tag, tt.URL, got, want[tt.Tag])
		}
		delete(want, tt.Tag)
	}
	if len(want) != 0 {
		t.Errorf("no traffic status for tags %v: %+v", want, svc.Status.Traffic)
	}
	seen := map[string]int{}
	for range 300 {
		if seen[answer(explain.HostOf(svc.Status.URL))]++; seen["split-demo-v1"] > 0 && seen["split-demo-v2"] > 0 {
			break
		}
	}
	if seen["split-demo-v1"] == 0 || seen["split-demo-v2"] == 0 || len(seen) != 2 {
		t.Errorf("%s answered from %v, want both split-demo-v1 and split-demo-v2", svc.Status.URL, seen)
	}
	t.Logf("%s answered from %v", svc.Status.URL, seen)
}

type namedProcess struct {
	name string
	p    *process
}

// watchProcesses fails the test, when it ends, if a process exited or logged a refusal
// by the API server: every right the code uses must be in config/rbac.
func watchProcesses(t *testing.T, procs []namedProcess) {
	t.Cleanup(func() {
		for _, p := range processProblems(procs) {
			t.Error(p)
		}
	})
}

func processProblems(procs []namedProcess) []string {
	var problems []string
	for _, np := range procs {
		out := np.p.Output()
		if np.p.Exited() {
			problems = append(problems, np.name+" exited")
		}
		var refused []string
		for line := range strings.Lines(out) {
			// A namespace being deleted (an earlier test's) refuses new objects as
			// Forbidden too; that is no missing right.
			if strings.Contains(strings.ToLower(line), "forbidden") && !strings.Contains(line, "because it is being terminated") {
				refused = append(refused, line)
			}
		}
		if len(refused) > 0 {
			problems = append(problems, np.name+" was refused by the API server (config/rbac misses a rule):\n"+strings.Join(refused, ""))
		}
	}
	return problems
}
