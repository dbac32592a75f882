package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// recordingSink keeps what the gateway reports.
type recordingSink struct {
	mu      sync.Mutex
	reports []stats.Report
	pokes   []string
}

func (s *recordingSink) Report(r stats.Report) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reports = append(s.reports, r)
}

func (s *recordingSink) Poke(namespace, revision string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pokes = append(s.pokes, namespace+"/"+revision)
}

func (s *recordingSink) poked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.pokes...)
}

// revisionService is gatewaytest.ServiceWithPort with the annotations the Revision reconciler sets.
func revisionService(name string, containerConcurrency, timeoutSeconds int) *corev1.Service {
	svc := gatewaytest.ServiceWithPort(name)
	svc.Annotations = map[string]string{}
	if containerConcurrency > 0 {
		svc.Annotations["serving.ferry.dev/container-concurrency"] = strconv.Itoa(containerConcurrency)
	}
	if timeoutSeconds > 0 {
		svc.Annotations["serving.ferry.dev/timeout-seconds"] = strconv.Itoa(timeoutSeconds)
	}
	return svc
}

// serveRevision points the revision's Service, with its annotations, at backends; none
// makes a Service without ready endpoints.
func (tg *testGateway) serveRevision(svc *corev1.Service, servers ...*httptest.Server) {
	var slices []discoveryv1.EndpointSlice
	for _, b := range servers {
		host, port := splitHostPort(tg.t, b.Listener.Addr().String())
		s := gatewaytest.SliceFor(svc.Name, int32(port), host)
		s.Name = svc.Name + "-" + strconv.Itoa(port)
		slices = append(slices, s)
	}
	tg.services.Update(gatewaytest.Key(svc.Name), backends.BuildEndpoints(svc, slices, gatewaytest.NotSimulated))
}

// route programs host to the Service name.
func (tg *testGateway) route(host, name string) {
	tg.program(gatewaytest.NewIngress(name, 0, gatewaytest.ExternalRule([]string{host}, gatewaytest.Path("", gatewaytest.SplitTo(name, 100)))))
}

func (tg *testGateway) service(name string) *backends.Service {
	return tg.services.Lookup(gatewaytest.Key(name))
}

// answer is what a client got.
type answer struct {
	code   int
	body   string
	header http.Header
	err    error
	at     time.Time
}

// send sends a GET for host and path in the background; cancel abandons it.
func (tg *testGateway) send(ctx context.Context, host, path string) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", tg.externalURL(path), nil)
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- answer{err: err, at: time.Now()}
			return
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		out <- answer{code: res.StatusCode, body: string(b), header: res.Header, err: err, at: time.Now()}
	}()
	return out
}

// eventually polls cond for up to 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// histogram returns the sample count and sum of a histogram of the gateway's registry.
func (tg *testGateway) histogram(name string) (uint64, float64) {
	tg.t.Helper()
	mfs, err := tg.opts.Registry.(prometheus.Gatherer).Gather()
	if err != nil {
		tg.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			h := mf.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	return 0, 0
}

// newBackend serves handler on loopback until the test ends.
func newBackend(t *testing.T, handler http.HandlerFunc) *httptest.Server {
	s := httptest.NewServer(handler)
	t.Cleanup(s.Close)
	return s
}

// countingBackend answers with its name after hold, and records how many requests it
// served at once, at most.
type countingBackend struct {
	*httptest.Server
	name          string
	now, max, all atomic.Int64
}

func newCountingBackend(t *testing.T, name string, hold time.Duration) *countingBackend {
	b := &countingBackend{name: name}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := b.now.Add(1)
		for m := b.max.Load(); n > m && !b.max.CompareAndSwap(m, n); m = b.max.Load() {
		}
		b.all.Add(1)
		time.Sleep(hold)
		b.now.Add(-1)
		fmt.Fprint(w, name)
	}))
	t.Cleanup(b.Close)
	return b
}
