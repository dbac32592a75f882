package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/localcluster"
)

// screenshotDirEnv is where the browser tests keep a screenshot of each page
// (default bin/dashboard-screenshots in the repository).
const screenshotDirEnv = "FERRY_SCREENSHOTS"

// The dashboard of ferry up, in headless Chromium: a new Service shows in the list
// within a second of turning Ready, a traffic split shows status.traffic's
// percentages, the traffic chart moves with a rollout, and a Revision's page shows
// pods rising under ferry load and falling to zero, each page without reloading.
func TestDashboardInBrowser(t *testing.T) {
	chromium := browser(t)
	dir := t.TempDir()
	addrs := loopbackAddrs(t, 4)
	gw := addrs[0]
	up, c, _ := startFerryUp(t, "ferry up", []string{"up", "--data-dir", filepath.Join(dir, "data"),
		"--gateway-addr", addrs[0], "--gateway-local-addr", addrs[1], "--gateway-https-addr", addrs[2], "--dashboard-addr", addrs[3]})
	m := regexp.MustCompile(`Dashboard: (http://\S+)`).FindStringSubmatch(up.Output())
	if m == nil {
		t.Fatalf("ferry up does not print the dashboard's URL:\n%s", up.Output())
	}
	base := strings.TrimSuffix(m[1], "/")
	shots := screenshotDir(t)

	ctx, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.WindowSize(1280, 1000))...)
	defer cancel()
	ctx, cancel = chromedp.NewContext(ctx)
	defer cancel()
	// The first run starts the browser for the context it is given: ctx itself, so
	// that the per-step timeouts below do not end it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		actx, acancel := context.WithTimeout(ctx, 90*time.Second)
		defer acancel()
		if err := chromedp.Do(actx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// poll evaluates js in the page until it is true.
	poll := func(what, js string, timeout time.Duration) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
			var html string
			html, _ = chromedp.Run(ctx, chromedp.OuterHTML("main"))
			t.Fatalf("%s: %v\nthe page:\n%s", what, err, html)
		}
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		path := filepath.Join(shots, name+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}

	// The list, open before the Service exists, shows it within a second of Ready.
	run("open the list", chromedp.Navigate(base+"/"), chromedp.WaitVisible("#services"))
	svc := autoscaledDashboardService("shop")
	if err := c.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	readyAt := seenReady(t, c, svc)
	poll("the new Service in the list", `document.querySelector('tr[data-service="default/shop"][data-ready="True"]') !== null`, 30*time.Second)
	took := time.Since(readyAt)
	t.Logf("the list showed the Service Ready %v after the test's watch saw it Ready", took.Round(time.Millisecond))
	if took > time.Second {
		t.Errorf("the list showed the Service %v after it turned Ready, want within a second", took)
	}
	shot("list")

	// A split between two Revisions: the page's percentages are status.traffic's.
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(svc), svc); err != nil {
		t.Fatal(err)
	}
	first := svc.Status.LatestReadyRevisionName
	updateService(t, c, "default", "shop", func(s *v1.Service) {
		s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "VERSION", Value: "2"}}
		s.Spec.Traffic = []v1.TrafficTarget{{RevisionName: first, Percent: ptr[int64](80)},
			{LatestRevision: ptr(true), Percent: ptr[int64](20), Tag: "candidate"}}
	})
	waitCondition(t, c, svc, duck.ConditionReady, corev1.ConditionTrue, "", readyTimeout)
	run("open the Service", chromedp.Navigate(base+"/services/default/shop"), chromedp.WaitVisible("#traffic"))
	want := map[string]int64{}
	for _, tt := range svc.Status.Traffic {
		want[tt.RevisionName] += *tt.Percent
	}
	wantJSON, _ := json.Marshal(want)
	poll("the split on the Service's page", `(() => { const got = {};
		document.querySelectorAll('#traffic tr.split').forEach(r => { got[r.dataset.revision] = (got[r.dataset.revision] || 0) + Number(r.dataset.percent); });
		const want = `+string(wantJSON)+`; return Object.keys(want).length === Object.keys(got).length && Object.keys(want).every(k => got[k] === want[k]); })()`, 10*time.Second)
	poll("the chart drawn", `document.querySelector('#traffic-chart canvas') !== null`, 10*time.Second)

	// The rollout goes on while the page stays open: the chart moves to the new split.
	points, err := chromedp.Run(ctx, chromedp.Evaluate[int](`Number(document.getElementById('traffic-chart').dataset.points)`))
	if err != nil {
		t.Fatal(err)
	}
	second := svc.Status.LatestReadyRevisionName
	updateService(t, c, "default", "shop", func(s *v1.Service) {
		s.Spec.Traffic[0].Percent, s.Spec.Traffic[1].Percent = ptr[int64](50), ptr[int64](50)
	})
	poll("the chart at 50/50", fmt.Sprintf(`(() => { const el = document.getElementById('traffic-chart');
		const l = JSON.parse(el.dataset.latest || '{}'); return Number(el.dataset.points) > %d && l[%q] === 50 && l[%q] === 50; })()`, points, first, second), 30*time.Second)
	shot("service")

	// A Revision under ferry load (through its tag, all of it to this Revision): pods
	// rise, then fall to zero once the load stops.
	rev := "/revisions/default/" + second
	run("open the Revision", chromedp.Navigate(base+rev), chromedp.WaitVisible("#load-chart"))
	poll("the autoscaler's numbers", `document.getElementById('numbers') !== null`, 15*time.Second)
	load := startProcess(t, "ferry load", nil, "load", "http://"+gw+"/?sleep=500", "--host", "candidate-shop.default.example.com", "-c", "12", "-d", "15s")
	poll("pods rising under load", `Number((document.getElementById('ready') || {}).textContent) >= 2`, 60*time.Second)
	shot("revision")
	select {
	case <-load.done:
	case <-time.After(time.Minute):
		t.Fatal("ferry load did not end")
	}
	if !strings.Contains(load.Output(), "200") {
		t.Errorf("ferry load: %s", load.Output())
	}
	poll("pods falling to zero", `document.getElementById('pods').textContent === '0' && document.getElementById('desired').textContent === '0'`, 90*time.Second)
	// One request to its tag (the split would send half elsewhere) wakes it: the page
	// counts the activation and its wait.
	if code, body := getHost(t, gw, "candidate-shop.default.example.com"); code != http.StatusOK {
		t.Fatalf("waking the Revision: %d %s", code, body)
	}
	poll("the wake-up counted", `(document.getElementById('activations') || {}).textContent === '1'`, 30*time.Second)
	shot("revision-woken")

	// A Service that cannot become Ready: the list says why in explain's words, and
	// its page shows explain's chain.
	broken := ksvc("default", "broken", localcluster.ImagePullErrorImage)
	if err := c.Create(context.Background(), broken); err != nil {
		t.Fatal(err)
	}
	run("open the list", chromedp.Navigate(base+"/"), chromedp.WaitVisible("#services"))
	poll("why broken is not Ready", `(() => { const w = document.querySelector('tr[data-service="default/broken"] .why');
		return w !== null && w.textContent.includes('image-pull-error'); })()`, 60*time.Second)
	run("open broken", chromedp.Navigate(base+"/services/default/broken"), chromedp.WaitVisible(".explain"))
	poll("explain's chain", `document.querySelectorAll('.explain .chain li').length >= 3 && document.querySelector('.explain').textContent.includes('cannot be pulled')`, 30*time.Second)
	shot("service-not-ready")

	checkDashboardHTTP(t, base)
}

// autoscaledDashboardService scales on one request in flight per pod, with a 6 s
// window, so that ferry load's 12 workers ask for several pods and its end lets the
// Revision go to zero within the test.
func autoscaledDashboardService(name string) *v1.Service {
	s := ksvc("default", name, "ferry.test/"+name)
	s.Spec.Template.ObjectMeta.Annotations = map[string]string{
		"autoscaling.knative.dev/window":                        "6s",
		"autoscaling.knative.dev/target":                        "2",
		"autoscaling.knative.dev/target-utilization-percentage": "100",
		"autoscaling.knative.dev/max-scale":                     "4",
	}
	return s
}

// seenReady polls svc every 10 ms until it is Ready for its generation and returns when the
// test saw it so.
func seenReady(t *testing.T, c client.Client, svc *v1.Service) time.Time {
	t.Helper()
	var readyAt time.Time
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
			return false, nil
		}
		if cond := svc.Status.GetCondition(duck.ConditionReady); cond.IsTrue() && svc.Status.ObservedGeneration == svc.Generation {
			readyAt = time.Now()
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("Service %s not Ready: %v", svc.Name, err)
	}
	return readyAt
}

// checkDashboardHTTP checks what a user sees without a browser: clear 404s, no
// writes, and one watch per kind.
func checkDashboardHTTP(t *testing.T, base string) {
	t.Helper()
	for path, want := range map[string]int{
		"/services/default/nope": http.StatusNotFound, "/services/nope/shop": http.StatusNotFound,
		"/?namespace=nope": http.StatusNotFound, "/revisions/default/nope": http.StatusNotFound, "/no/such/page": http.StatusNotFound,
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || !strings.Contains(string(body), "nope") && !strings.Contains(string(body), "no page") {
			t.Errorf("GET %s: %d, want %d and a page that names it:\n%s", path, resp.StatusCode, want, body)
		}
	}
	resp, err := http.Post(base+"/services/default/shop", "application/x-www-form-urlencoded", strings.NewReader("x=1"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405 (read-only)", resp.StatusCode)
	}
	resp, err = http.Get(base + "/api/requests")
	if err != nil {
		t.Fatal(err)
	}
	var counts map[string]int
	err = json.NewDecoder(resp.Body).Decode(&counts)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the dashboard's requests to the API server: %v", counts)
	for k, n := range counts {
		if strings.HasPrefix(k, "get ") && !strings.HasPrefix(k, "get /api") {
			t.Errorf("%d× %s: the dashboard reads objects one by one, want watches", n, k)
		}
	}
}

func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(screenshotDirEnv)
	if dir == "" {
		dir = filepath.Join("..", "..", "bin", "dashboard-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	return abs
}

// ferry dashboard against a cluster where ferry controller and ferry gateway run as
// their own processes (as after ferry up --cluster-only): the same pages, with the
// autoscaler's numbers from the controller's metrics listener.
func TestDashboardOnSeparateProcesses(t *testing.T) {
	ns := testNamespace(t)
	stats, metrics, dash := freeLoopbackAddr(t), freeLoopbackAddr(t), freeLoopbackAddr(t)
	gw := startGatewayProcess(t, "ferry gateway", stats, ns)
	startProcess(t, "ferry controller", nil, "controller", "--kubeconfig", testCluster.KubeconfigPath(),
		"--metrics-addr", metrics, "--health-addr", "0", "--stats-addr", stats)
	d := startProcess(t, "ferry dashboard", nil, "dashboard", "--kubeconfig", testCluster.KubeconfigPath(),
		"--addr", dash, "--autoscaler-url", "http://"+metrics)
	base := "http://" + dash
	page := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	svc := ksvc(ns, "hello", "ferry.test/hello")
	if err := testClient.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, testClient, svc, duck.ConditionReady, corev1.ConditionTrue, "", readyTimeout)
	rev := svc.Status.LatestReadyRevisionName
	expect := func(path, want string) {
		t.Helper()
		eventually(t, 30*time.Second, func() (bool, string) {
			if d.Exited() {
				t.Fatalf("ferry dashboard exited:\n%s", d.Output())
			}
			code, body := page(path)
			return code == http.StatusOK && strings.Contains(body, want), fmt.Sprintf("GET %s: %d, without %q:\n%s", path, code, want, body)
		})
	}
	expect("/?namespace="+ns, fmt.Sprintf(`data-service="%s/hello" data-ready="True"`, ns))
	expect("/services/"+ns+"/hello", fmt.Sprintf(`data-revision="%s" data-percent="100"`, rev))
	// One request through the gateway, so that the autoscaler has load to show.
	if code, _ := getHost(t, gw, "hello."+ns+".example.com"); code != http.StatusOK {
		t.Fatalf("the gateway answered %d", code)
	}
	expect("/revisions/"+ns+"/"+rev, `id="numbers"`)
}

// ferry dashboard with a user's own rights: credentials the API server refuses show
// its message, and rights in one namespace show that namespace with --namespace.
func TestDashboardWithTheUsersRights(t *testing.T) {
	ctx := context.Background()
	ns := testNamespace(t)
	// serviceAccountKubeconfig's ServiceAccounts live in ferry-system, which this
	// test may be the first to need.
	ensureNamespace(t, systemNamespace)
	sa := "dashboard-viewer-" + ns
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: sa}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dashboard-viewer"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"serving.knative.dev"}, Resources: []string{"services", "configurations", "revisions", "routes", "domainmappings"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"networking.internal.knative.dev"}, Resources: []string{"ingresses"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"pods", "events"}, Verbs: []string{"get", "list", "watch"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dashboard-viewer"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "dashboard-viewer"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: systemNamespace, Name: sa}}},
		ksvc(ns, "hello", "ferry.test/hello"),
	}
	for _, o := range objs {
		if err := testClient.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = testClient.Delete(ctx, objs[0]) })
	viewer := serviceAccountKubeconfig(t, sa)
	expired := filepath.Join(t.TempDir(), "expired.kubeconfig")
	kc, err := os.ReadFile(viewer.path)
	if err != nil {
		t.Fatal(err)
	}
	tokenLine := regexp.MustCompile(`token: \S+`)
	if err := os.WriteFile(expired, tokenLine.ReplaceAll(kc, []byte("token: expired")), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"expired credentials", []string{"--kubeconfig", expired}, http.StatusBadGateway, "Unauthorized"},
		{"rights in one namespace, every namespace asked", []string{"--kubeconfig", viewer.path}, http.StatusBadGateway, "cannot list resource"},
		{"rights in one namespace, that namespace asked", []string{"--kubeconfig", viewer.path, "--namespace", ns}, http.StatusOK,
			fmt.Sprintf(`data-service="%s/hello"`, ns)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := freeLoopbackAddr(t)
			d := startProcess(t, "ferry dashboard", nil, append([]string{"dashboard", "--addr", addr}, tc.args...)...)
			eventually(t, 30*time.Second, func() (bool, string) {
				if d.Exited() {
					t.Fatalf("ferry dashboard exited:\n%s", d.Output())
				}
				resp, err := http.Get("http://" + addr + "/")
				if err != nil {
					return false, err.Error()
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return resp.StatusCode == tc.code && strings.Contains(string(body), tc.want),
					fmt.Sprintf("GET /: %d, want %d with %q:\n%s", resp.StatusCode, tc.code, tc.want, body)
			})
		})
	}
}
