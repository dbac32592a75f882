package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ferry-serving/ferry/internal/explain"
	"github.com/ferry-serving/ferry/internal/gateway"
	"github.com/ferry-serving/ferry/internal/localcluster"
	"github.com/ferry-serving/ferry/internal/reconciler"
	"github.com/ferry-serving/ferry/internal/scale"
)

// startScaleFerry runs Ferry as `ferry scale` does in-process — the reconcilers and
// the gateway with kwok's pods simulated, on free loopback ports — in a manager of its
// own until the test ends, its writes counted. It returns the gateway's URL.
func startScaleFerry(t *testing.T, ns string) (string, *scale.WriteCounter) {
	t.Helper()
	cfg := rest.CopyConfig(testConfig)
	writes := scale.NewWriteCounter()
	writes.Wrap(cfg)
	// Reconcile errors are worth seeing when a Service is stuck; controller-runtime
	// keeps the first logger set in the process, whichever test sets it.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	mgr := newTestManager(t, cfg, ns)
	ctrls, err := reconciler.SetupWithManager(mgr, reconciler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw := gateway.New(gateway.Options{ExternalAddr: "127.0.0.1:0", LocalAddr: "127.0.0.1:0", SimulatedPods: true,
		Registry: prometheus.NewRegistry(), Stats: ctrls.Autoscaler})
	if err := gw.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	runTestManager(t, mgr)
	return "http://" + gw.ExternalAddr(), writes
}

// testLogWriter sends the run's progress lines to the test log.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestScale is `ferry scale -n 200` against the shared cluster: every Service Ready
// and routed through the gateway, nothing stuck, the reports written with every
// sample. No timing is asserted: machines are noisy.
func TestScale(t *testing.T) {
	const n = 200
	ns := testNamespace(t)
	gatewayURL, ferryWrites := startScaleFerry(t, ns)
	awaitNamespaceGone(t, ns)
	res, err := scale.Run(context.Background(), scale.Options{
		Config: testConfig, Namespace: ns, N: n, Concurrency: 50, TimeoutPerService: 3 * time.Minute,
		GatewayURL: gatewayURL, Warmup: true, Phases: true, InProcess: true, FerryWrites: ferryWrites, Progress: testLogWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	var summary strings.Builder
	scale.WriteSummary(&summary, res, 5)
	t.Log(summary.String())

	if got := res.ReadyCount(); got != n {
		t.Errorf("%d/%d Services Ready", got, n)
	}
	if stuck := res.Stuck(); len(stuck) != 0 {
		t.Errorf("%d Services stuck, e.g.\n%s", len(stuck), stuck[0].Explanation)
	}
	if got := len(res.RoutedTimes()); got != n {
		t.Errorf("%d/%d Services routed through the gateway", got, n)
	}
	// Ready in the order they were created (oldest first through every queue), not all
	// at the end of the burst: an order, so it does not depend on the machine's speed.
	if o := res.CreationOrder(); o.RankCorrelation < 0.8 {
		t.Errorf("rank correlation of create and Ready order %.2f, want ≥ 0.8 (p50 / total %.2f)", o.RankCorrelation, o.P50OverTotal)
	}
	if res.WritesError != "" {
		t.Errorf("writes unknown: %s", res.WritesError)
	}
	if res.FerryWrites.Total() == 0 {
		t.Error("Ferry's writes were not counted")
	}
	if res.Process == nil || res.Process.PeakRSSBytes == 0 {
		t.Errorf("no process usage: %+v", res.Process)
	}
	reached := map[scale.Milestone]int{}
	for _, p := range scale.Phases(res.Samples) {
		reached[p.Milestone] = p.Reached.Count
	}
	for _, m := range []scale.Milestone{scale.ConfigurationCreated, scale.RevisionCreated, scale.PodReady, scale.IngressReady, scale.ServiceReady} {
		if reached[m] != n {
			t.Errorf("%d Services reached %s, want %d", reached[m], m, n)
		}
	}

	dir := filepath.Join(t.TempDir(), "report")
	jsonPath, htmlPath, err := scale.WriteReports(dir, res)
	if err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "<svg") {
		t.Error("report.html has no chart")
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var report struct {
		Summary struct {
			Ready            int     `json:"ready"`
			Stuck            int     `json:"stuck"`
			WritesPerService float64 `json:"writesPerService"`
		} `json:"summary"`
		Samples []struct {
			Name  string   `json:"name"`
			Ready *float64 `json:"timeToReadySeconds"`
		} `json:"samples"`
	}
	if err := json.Unmarshal(b, &report); err != nil {
		t.Fatal(err)
	}
	if len(report.Samples) != n || report.Summary.Ready != n || report.Summary.Stuck != 0 {
		t.Errorf("report.json: %d samples, %d Ready, %d stuck; want %d, %d, 0", len(report.Samples), report.Summary.Ready, report.Summary.Stuck, n, n)
	}
	if report.Summary.WritesPerService <= 0 {
		t.Errorf("report.json: %v writes per Service", report.Summary.WritesPerService)
	}
	for _, s := range report.Samples {
		if s.Ready == nil || *s.Ready <= 0 || !strings.HasPrefix(s.Name, "scale-00200-") {
			t.Errorf("sample %+v", s)
			break
		}
	}
}

// TestScaleStuck runs Services whose image cannot be pulled: each misses its
// deadline and is explained down to its Revision's failing container. The floor
// and the cleanup run on the same small run.
func TestScaleStuck(t *testing.T) {
	ns := testNamespace(t)
	gatewayURL, _ := startScaleFerry(t, ns)
	ctx := context.Background()
	res, err := scale.Run(ctx, scale.Options{
		Config: testConfig, Namespace: ns, N: 3, TimeoutPerService: 15 * time.Second,
		Image: localcluster.ImagePullErrorImage, GatewayURL: gatewayURL, Warmup: false,
	})
	if err != nil {
		t.Fatal(err)
	}
	var summary strings.Builder
	scale.WriteSummary(&summary, res, 3)
	t.Log(summary.String())
	stuck := res.Stuck()
	if len(stuck) != 3 {
		t.Fatalf("%d stuck, want 3", len(stuck))
	}
	for _, s := range stuck {
		e := s.Explanation
		if e == nil {
			t.Fatalf("%s: no explanation", s.Name)
		}
		text := e.String()
		for _, want := range []string{"ksvc " + s.Name + ": Ready=False", "→ Configuration " + s.Name, "→ Revision " + s.Name + "-00001", "ContainerHealthy=False"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: explanation lacks %q:\n%s", s.Name, want, text)
			}
		}
		if !strings.Contains(e.Culprit, s.Name+"-00001") {
			t.Errorf("%s: the culprit is not the Revision or below: %s", s.Name, e.Culprit)
		}
		// What ferry explain says of the same Service, read on its own.
		r, err := explain.Check(ctx, testClient, explain.Target{Kind: explain.KindService, Namespace: ns, Name: s.Name}, "")
		if err != nil || r.Culprit != e.Culprit || len(r.Advice) == 0 || len(e.Advice) == 0 || r.Advice[0] != e.Advice[0] {
			t.Errorf("%s: ferry scale says %q, to do %q; ferry explain %q, to do %q (%v)", s.Name, e.Culprit, e.Advice, r.Culprit, r.Advice, err)
		}
	}
	if want := `to do:   The image "` + localcluster.ImagePullErrorImage + `" cannot be pulled`; !strings.Contains(summary.String(), want) {
		t.Errorf("the summary lacks %q", want)
	}

	floor, err := scale.Floor(ctx, scale.FloorOptions{Config: testConfig, Writes: res.Writes, Concurrency: 50, Real: res.Total, SizeNamespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if floor.Writes != res.Writes.Total() || floor.Duration <= 0 || floor.Errors != 0 {
		t.Errorf("floor: %d writes (the run made %d) in %v, %d errors (%s)", floor.Writes, res.Writes.Total(), floor.Duration, floor.Errors, floor.FirstError)
	}

	if err := scale.Cleanup(ctx, testConfig, res, 2*time.Minute, testLogWriter{t}); err != nil {
		t.Fatal(err)
	}
}
