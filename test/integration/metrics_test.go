package integration

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ferry-serving/ferry/api/duck"
	"github.com/ferry-serving/ferry/internal/gateway"
	"github.com/ferry-serving/ferry/internal/manager"
)

// TestMetrics runs Ferry as `ferry controller` and `ferry gateway` assemble it, in
// one manager, rolls out a Service, sends it a request, and reads what an operator
// reads: /metrics, /healthz and /readyz. Series are process-wide and other tests may
// add to them, so counts are compared with a scrape taken before the rollout.
func TestMetrics(t *testing.T) {
	// Reconcile errors are worth seeing; controller-runtime keeps the first logger set
	// in the process, whichever test sets it.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	metricsAddr, healthAddr := freeAddr(t), freeAddr(t)
	f, err := manager.New(rest.CopyConfig(testConfig), manager.Options{
		Reconcilers: true,
		Gateway: &gateway.Options{ExternalAddr: "127.0.0.1:0", LocalAddr: "127.0.0.1:0",
			DialContext: dialPodOnLoopback},
		MetricsAddr:        metricsAddr,
		HealthAddr:         healthAddr,
		SkipNameValidation: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	runManager(t, f)

	// Serves from the start, before the caches have synced.
	eventually(t, 30*time.Second, func() (bool, string) {
		code, body := probe(t, healthAddr, "/healthz")
		return code == http.StatusOK, strconv.Itoa(code) + " " + body
	})
	var before scraped
	eventually(t, 30*time.Second, func() (bool, string) {
		before = scrape(t, metricsAddr)
		return before != nil, "no metrics"
	})

	ns := testNamespace(t)
	svc := ksvc(ns, "hello", "example.com/hello:1")
	if err := testClient.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, testClient, svc, duck.ConditionReady, corev1.ConditionTrue, "", 2*time.Minute)
	revision := svc.Status.LatestReadyRevisionName
	u, err := url.Parse(svc.Status.URL)
	if err != nil || u.Host == "" {
		t.Fatalf("Service URL %q: %v", svc.Status.URL, err)
	}

	// kwok's pod has nothing behind it: the gateway answers 200 for it, itself.
	eventually(t, 30*time.Second, func() (bool, string) {
		code, body := send(t, f.Gateway.ExternalAddr(), u.Host, "/")
		return code == http.StatusOK, strconv.Itoa(code) + " " + body
	})

	// Once Ferry has done something, every check passes.
	eventually(t, 30*time.Second, func() (bool, string) {
		code, body := probe(t, healthAddr, "/readyz?verbose")
		return code == http.StatusOK && strings.Contains(body, "[+]caches ok") && strings.Contains(body, "[+]gateway ok") && strings.Contains(body, "[+]routes ok"),
			strconv.Itoa(code) + " " + body
	})

	after := scrape(t, metricsAddr)
	for _, kind := range []string{"Service", "Configuration", "Revision", "Route"} {
		series := "ferry_time_to_ready_seconds_count"
		labels := map[string]string{"kind": kind}
		if got, was := after.sum(series, labels), before.sum(series, labels); got <= was {
			t.Errorf("%s%v = %v, was %v before the rollout: the Ready %s was not observed", series, labels, got, was, kind)
		}
	}
	for _, series := range []string{"ferry_tracker_observers", "ferry_tracker_references"} {
		if got := after.sum(series, nil); got <= 0 {
			t.Errorf("%s = %v with a Route tracking its Configuration", series, got)
		}
	}
	requests := map[string]string{"host": u.Host, "namespace": ns, "revision": revision, "code": "200"}
	if got := after.sum("ferry_gateway_requests_total", requests); got < 1 {
		t.Errorf("ferry_gateway_requests_total%v = %v after a 200", requests, got)
	}
	// controller-runtime's own series, which the dashboard reads.
	for _, c := range []struct {
		series string
		labels map[string]string
	}{
		{"controller_runtime_reconcile_total", map[string]string{"result": "success"}},
		{"workqueue_adds_total", nil},
		{"workqueue_queue_duration_seconds_count", nil},
		{"controller_runtime_reconcile_time_seconds_count", nil},
	} {
		if got := after.sum(c.series, c.labels); got <= 0 {
			t.Errorf("%s%v = %v", c.series, c.labels, got)
		}
	}
	if !after.has("workqueue_depth") {
		t.Error("no workqueue_depth series")
	}
}

// freeAddr is a loopback address with a port free a moment ago, for servers that do
// not report the port they bound.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func probe(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	res, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(body)
}

// scrape returns the samples the metrics endpoint serves, or nil if it does not
// answer 200 (yet).
//
// scraped is one scrape of a Prometheus text exposition.
type scraped []sample

type sample struct {
	name   string
	labels map[string]string
	value  float64
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)`)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// scrape returns the samples the metrics endpoint serves, or nil while it does not
// answer 200.
func scrape(t *testing.T, addr string) scraped {
	t.Helper()
	code, body := probe(t, addr, "/metrics")
	if code != http.StatusOK {
		return nil
	}
	var s scraped
	for _, line := range strings.Split(body, "\n") {
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		labels := map[string]string{}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			labels[p[1]] = p[2]
		}
		s = append(s, sample{name: m[1], labels: labels, value: v})
	}
	return s
}

// sum adds up the series of name whose labels include want.
func (s scraped) sum(name string, want map[string]string) float64 {
	total := 0.0
	for _, smp := range s {
		if smp.name == name && matches(smp.labels, want) {
			total += smp.value
		}
	}
	return total
}

func (s scraped) has(name string) bool {
	for _, smp := range s {
		if smp.name == name {
			return true
		}
	}
	return false
}

func matches(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}
