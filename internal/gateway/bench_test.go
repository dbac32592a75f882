package gateway

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
	"github.com/ferry-serving/ferry/internal/gateway/proxy"
	"github.com/ferry-serving/ferry/internal/telemetry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// BenchmarkProxy measures requests through the gateway against the same requests
// sent straight to the backend, with the same client: at concurrency 1 for the added
// latency, and at 64 for throughput. It reports req/s and p50/p99 in microseconds.
//
// FERRY_BENCH_BACKEND fixes the backend's address and FERRY_BENCH_NGINX adds a target:
// an nginx that proxies Host bench.example.com to that backend. FERRY_BENCH_WRK, the
// path of wrk, makes wrk the client instead of Go's (for FERRY_BENCH_DURATION, 10s by
// default, per target); a C client leaves more of a small machine to the servers.
// docs/gateway.md has the commands.
func BenchmarkProxy(b *testing.B) {
	backendAddr := os.Getenv("FERRY_BENCH_BACKEND")
	if backendAddr == "" {
		backendAddr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", backendAddr)
	if err != nil {
		b.Fatal(err)
	}
	backend := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from the backend\n")
	})}}
	backend.Start()
	defer backend.Close()

	// Load reports on, as in a cluster: every request is accounted and the reporter
	// runs (into a sink that drops them).
	g := startGateway(b, Options{Stats: discardSink{}})
	g.serve("bench-1", backend)
	g.program(gatewaytest.NewIngress("bench", 0, gatewaytest.ExternalRule([]string{"bench.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("bench-1", 100)))))

	targets := []struct{ name, addr string }{{"direct", backend.Listener.Addr().String()}, {"gateway", g.ExternalAddr()}}
	if nginx := os.Getenv("FERRY_BENCH_NGINX"); nginx != "" {
		targets = append(targets, struct{ name, addr string }{"nginx", nginx})
	}
	for _, concurrency := range []int{1, 64} {
		for _, target := range targets {
			b.Run(fmt.Sprintf("%s/c=%d", target.name, concurrency), func(b *testing.B) {
				load(b, "http://"+target.addr+"/", "bench.example.com", concurrency)
			})
		}
	}
}

// discardSink drops what the gateway reports.
type discardSink struct{}

func (discardSink) Report(stats.Report) {}
func (discardSink) Poke(string, string) {}

// load sends b.N GET requests from concurrency workers, each on its own keep-alive
// connection, and reports throughput and latency percentiles.
func load(b *testing.B, url, host string, concurrency int) {
	if wrk := os.Getenv("FERRY_BENCH_WRK"); wrk != "" {
		loadWithWrk(b, wrk, url, host, concurrency)
		return
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency, DisableCompression: true}}
	defer client.CloseIdleConnections()
	do := func() error {
		req, _ := http.NewRequest("GET", url, nil)
		req.Host = host
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", res.StatusCode)
		}
		return nil
	}
	for range concurrency { // open the connections before the clock starts
		if err := do(); err != nil {
			b.Fatal(err)
		}
	}
	latencies := make([][]time.Duration, concurrency)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := range concurrency {
		n := b.N / concurrency
		if w < b.N%concurrency {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			latencies[w] = make([]time.Duration, 0, n)
			for range n {
				t0 := time.Now()
				if err := do(); err != nil {
					b.Error(err)
					return
				}
				latencies[w] = append(latencies[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(latencies...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
}

// loadWithWrk runs wrk once against url and reports what it measured; b.N plays no
// part.
func loadWithWrk(b *testing.B, wrk, url, host string, concurrency int) {
	duration := os.Getenv("FERRY_BENCH_DURATION")
	if duration == "" {
		duration = "10s"
	}
	out, err := exec.Command(wrk, "-t1", "-c"+strconv.Itoa(concurrency), "-d"+duration, "--latency",
		"-H", "Host: "+host, url).CombinedOutput()
	if err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	// wrk prints "Requests/sec: 12345.67" and, under "Latency Distribution",
	// lines such as "50%  123.00us" or "99%    1.20ms".
	metrics := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			metrics[f[0]] = f[1]
		}
	}
	if strings.Contains(string(out), "Non-2xx") {
		b.Fatalf("wrk saw errors: %s", out)
	}
	reqs, err := strconv.ParseFloat(metrics["Requests/sec:"], 64)
	if err != nil {
		b.Fatalf("no Requests/sec in %s", out)
	}
	b.ReportMetric(reqs, "req/s")
	b.ReportMetric(wrkMicros(b, metrics["50%"]), "p50-µs")
	b.ReportMetric(wrkMicros(b, metrics["99%"]), "p99-µs")
}

func wrkMicros(b *testing.B, s string) float64 {
	for _, unit := range []struct {
		suffix string
		scale  float64
	}{{"us", 1}, {"ms", 1e3}, {"s", 1e6}} {
		if v, ok := strings.CutSuffix(s, unit.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("wrk latency %q", s)
			}
			return f * unit.scale
		}
	}
	b.Fatalf("wrk latency %q", s)
	return 0
}

// benchObservability is the configuration with FERRY_BENCH_OBSERVABILITY, the data of
// a config-observability as JSON, e.g. {"logging.enable-request-log": "true"}.
func benchObservability(t *testing.T, data string) *config.Config {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := json.Unmarshal([]byte(data), &cm.Data); err != nil {
		t.Fatalf("FERRY_BENCH_OBSERVABILITY: %v", err)
	}
	o, err := config.NewObservabilityFromConfigMap(cm)
	if err != nil {
		t.Fatalf("FERRY_BENCH_OBSERVABILITY: %v", err)
	}
	c := config.Default()
	c.Observability = o
	return c
}

// TestBenchServe runs the gateway as hack/bench-dataplane.sh measures it, until
// SIGTERM or SIGINT: skipped unless FERRY_BENCH_SERVE is the external address to
// listen on. FERRY_BENCH_BACKEND is the one backend (HTTP/1.1 and h2c on one port),
// reached as two Revisions, bench.example.com over HTTP/1.1 and h2c.example.com over
// h2c, both with containerConcurrency 100 and a 300-second timeout as queue-proxy is
// given in the same run; load reports on, as in BenchmarkProxy. FERRY_BENCH_HTTPS
// with FERRY_BENCH_CERT and FERRY_BENCH_KEY (PEM files) adds the HTTPS listener, the
// certificate serving both hosts. FERRY_BENCH_OBSERVABILITY sets config-observability
// (benchObservability): request logs, and tracing; FERRY_BENCH_REQUEST_LOG the file
// request logs go to. A clean exit on the signal lets -test.cpuprofile
// write the profile of what ran.
func TestBenchServe(t *testing.T) {
	addr := os.Getenv("FERRY_BENCH_SERVE")
	if addr == "" {
		t.Skip("FERRY_BENCH_SERVE is not set; hack/bench-dataplane.sh sets it")
	}
	backend := os.Getenv("FERRY_BENCH_BACKEND")
	host, p, err := net.SplitHostPort(backend)
	if err != nil {
		t.Fatalf("FERRY_BENCH_BACKEND %q: %v", backend, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	opts := Options{Stats: discardSink{}, ExternalAddr: addr, HTTPSAddr: os.Getenv("FERRY_BENCH_HTTPS")}
	if path := os.Getenv("FERRY_BENCH_REQUEST_LOG"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		opts.RequestLog = f
	}
	var observability *config.Config
	if data := os.Getenv("FERRY_BENCH_OBSERVABILITY"); data != "" {
		observability = benchObservability(t, data)
		// Only a row that traces has Telemetry, so that the others' request path is
		// the same as without it.
		if observability.Observability.Tracing.Protocol != config.ProtocolNone {
			opts.Telemetry = telemetry.New(telemetry.Options{ServiceName: "ferry-gateway"})
			defer opts.Telemetry.Shutdown()
			if err := opts.Telemetry.Apply(observability.Observability); err != nil {
				t.Fatal(err)
			}
		}
	}
	g := startGateway(t, opts)
	if observability != nil {
		g.applyConfig(observability)
	}
	for _, r := range []struct{ name, portName, host string }{
		{"bench-1", "", "bench.example.com"},
		{"bench-h2c", "h2c", "h2c.example.com"},
	} {
		rev := &servingv1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: r.name}, Spec: servingv1.RevisionSpec{
			ContainerConcurrency: ptr.To[int64](100), TimeoutSeconds: ptr.To[int64](300),
			PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: "img",
				Ports: []corev1.ContainerPort{{Name: r.portName, ContainerPort: int32(port)}}}}}}}
		pods := []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: r.name + "-pod"},
			Status: corev1.PodStatus{PodIP: host, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}}
		g.services.Update(gatewaytest.Key(r.name), backends.BuildRevisionEndpoints(rev, pods, gatewaytest.NotSimulated))
		g.route(r.host, r.name)
	}
	if g.opts.HTTPSAddr != "" {
		cert, err := tls.LoadX509KeyPair(os.Getenv("FERRY_BENCH_CERT"), os.Getenv("FERRY_BENCH_KEY"))
		if err != nil {
			t.Fatal(err)
		}
		g.tlsStore.Set(gatewaytest.Key("bench"), gatewaytest.Epoch, map[string]*proxy.HostTLS{"bench.example.com": {Cert: &cert}, "h2c.example.com": {Cert: &cert}})
	}
	fmt.Printf("gateway serving on %s (https %q)\n", g.ExternalAddr(), g.HTTPSAddr())
	<-ctx.Done()
}
