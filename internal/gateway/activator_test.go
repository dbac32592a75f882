package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
	"github.com/prometheus/client_golang/prometheus/testutil"
	discoveryv1 "k8s.io/api/discovery/v1"
)

func TestHeldRequestIsForwardedWhenAPodBecomesReady(t *testing.T) {
	sink := &recordingSink{}
	g := startGateway(t, Options{Stats: sink})
	g.serveRevision(revisionService("cold-1", 0, 0)) // no ready endpoint yet
	g.route("cold.example.com", "cold-1")

	got := g.send(context.Background(), "cold.example.com", "/")
	svc := g.service("cold-1")
	eventually(t, "the request to be held", func() bool { return svc.Room.Waiting.Load() == 1 })
	if got := testutil.ToFloat64(g.metrics.Queued); got != 1 {
		t.Errorf("queued requests gauge %v, want 1", got)
	}
	if pokes := sink.poked(); len(pokes) != 1 || pokes[0] != "ns/cold-1" {
		t.Errorf("pokes %v, want one for ns/cold-1", pokes)
	}

	time.Sleep(50 * time.Millisecond) // some wait, for the header
	swapped := time.Now()
	g.serveRevision(revisionService("cold-1", 0, 0), newEchoBackend(t, "cold-1"))
	a := <-got
	if a.err != nil || a.code != http.StatusOK || !strings.Contains(a.body, `"backend":"cold-1"`) {
		t.Fatalf("held request: %d %q %v", a.code, a.body, a.err)
	}
	wait, err := time.ParseDuration(a.header.Get("X-Ferry-Activation-Wait"))
	if err != nil || wait < 50*time.Millisecond || wait > 10*time.Second {
		t.Errorf("X-Ferry-Activation-Wait %q", a.header.Get("X-Ferry-Activation-Wait"))
	}
	n, delay := g.histogram("ferry_gateway_release_delay_seconds")
	t.Logf("endpoints swap to answer: %v; to forward (release delay): %.2fms", a.at.Sub(swapped), delay*1e3)
	if n != 1 || delay > 0.2 {
		t.Errorf("release delay: %d samples, %vs; want one, small", n, delay)
	}
	if n, _ := g.histogram("ferry_gateway_activation_wait_seconds"); n != 1 {
		t.Errorf("activation wait: %d samples", n)
	}
	if got := testutil.ToFloat64(g.metrics.Queued); got != 0 {
		t.Errorf("queued requests gauge %v after the release", got)
	}

	// Not held: no header, no new sample.
	if a := <-g.send(context.Background(), "cold.example.com", "/"); a.code != 200 || a.header.Get("X-Ferry-Activation-Wait") != "" {
		t.Errorf("request to a ready revision: %d, header %q", a.code, a.header.Get("X-Ferry-Activation-Wait"))
	}
}

func TestHeldRequestTimesOut(t *testing.T) {
	g := startGateway(t, Options{RequestTimeout: 100 * time.Millisecond})
	g.serveRevision(revisionService("cold-1", 0, 0))
	g.serveRevision(revisionService("slow-1", 0, 1)) // the annotation wins: 1s
	g.route("cold.example.com", "cold-1")
	g.route("slow.example.com", "slow-1")

	for _, tc := range []struct {
		host, body string
		min        time.Duration
	}{
		{host: "cold.example.com", body: "ferry: revision cold-1 did not get a ready pod within 100ms (timeoutSeconds)\n", min: 100 * time.Millisecond},
		{host: "slow.example.com", body: "ferry: revision slow-1 did not get a ready pod within 1s (timeoutSeconds)\n", min: time.Second},
	} {
		start := time.Now()
		a := <-g.send(context.Background(), tc.host, "/")
		if took := time.Since(start); a.code != http.StatusGatewayTimeout || a.body != tc.body || took < tc.min || took > tc.min+5*time.Second {
			t.Errorf("%s: %d %q after %v; want 504 %q after %v", tc.host, a.code, a.body, took, tc.body, tc.min)
		}
		if a.header.Get("X-Ferry-Activation-Wait") == "" {
			t.Errorf("%s: no X-Ferry-Activation-Wait on the 504", tc.host)
		}
	}
	if got := testutil.ToFloat64(g.metrics.Requests.WithLabelValues("cold.example.com", "504", "ns", "cold-1")); got != 1 {
		t.Errorf("504s counted %v times", got)
	}
}

func TestHeldRequestsAreBounded(t *testing.T) {
	g := startGateway(t, Options{MaxQueued: 2})
	g.serveRevision(revisionService("cold-1", 0, 0))
	g.route("cold.example.com", "cold-1")
	svc := g.service("cold-1")

	ctx, cancel := context.WithCancel(context.Background())
	held := []<-chan answer{g.send(ctx, "cold.example.com", "/"), g.send(ctx, "cold.example.com", "/")}
	eventually(t, "two held requests", func() bool { return svc.Room.Waiting.Load() == 2 })
	a := <-g.send(context.Background(), "cold.example.com", "/")
	if a.code != http.StatusServiceUnavailable || a.body != "ferry: revision cold-1 has 2 requests waiting; try again\n" ||
		a.header.Get("Retry-After") == "" {
		t.Errorf("over the bound: %d %q Retry-After %q", a.code, a.body, a.header.Get("Retry-After"))
	}

	// Clients that give up leave the queue (499) and count no more.
	cancel()
	for _, h := range held {
		if a := <-h; a.err == nil {
			t.Errorf("cancelled request got %d", a.code)
		}
	}
	eventually(t, "the queue to empty", func() bool { return svc.Room.Waiting.Load() == 0 })
	eventually(t, "the 499s to be counted", func() bool {
		return testutil.ToFloat64(g.metrics.Requests.WithLabelValues("cold.example.com", "499", "ns", "cold-1")) == 2
	})
	if got := testutil.ToFloat64(g.metrics.Queued); got != 0 {
		t.Errorf("queued gauge %v", got)
	}
	if _, n := svc.Load.Read(backends.Micros(time.Now())); n != 0 {
		t.Errorf("%d requests still accounted in flight", n)
	}
}

func TestOnePokePerBurst(t *testing.T) {
	sink := &recordingSink{}
	g := startGateway(t, Options{Stats: sink})
	g.serveRevision(revisionService("cold-1", 0, 0))
	g.route("cold.example.com", "cold-1")
	svc := g.service("cold-1")
	backend := newEchoBackend(t, "cold-1")

	for round := 1; round <= 2; round++ {
		var answers []<-chan answer
		for range 20 {
			answers = append(answers, g.send(context.Background(), "cold.example.com", "/"))
		}
		eventually(t, "20 held requests", func() bool { return svc.Room.Waiting.Load() == 20 })
		g.serveRevision(revisionService("cold-1", 0, 0), backend)
		for _, a := range answers {
			if a := <-a; a.code != 200 {
				t.Fatalf("round %d: %d %q %v", round, a.code, a.body, a.err)
			}
		}
		if pokes := sink.poked(); len(pokes) != round {
			t.Errorf("after burst %d: pokes %v", round, pokes)
		}
		g.serveRevision(revisionService("cold-1", 0, 0)) // scaled to zero again
	}
}

// containerConcurrency 1: whatever the load, no pod ever has two requests at once.
func TestContainerConcurrencyIsEnforced(t *testing.T) {
	g := startGateway(t, Options{})
	backends := []*countingBackend{
		newCountingBackend(t, "a", 2*time.Millisecond),
		newCountingBackend(t, "b", 2*time.Millisecond),
		newCountingBackend(t, "c", 2*time.Millisecond),
	}
	g.serveRevision(revisionService("cc-1", 1, 0), backends[0].Server, backends[1].Server, backends[2].Server)
	g.route("cc.example.com", "cc-1")

	var answers []<-chan answer
	for range 100 {
		answers = append(answers, g.send(context.Background(), "cc.example.com", "/"))
	}
	byBackend := map[string]int{}
	for _, a := range answers {
		a := <-a
		if a.code != 200 {
			t.Fatalf("%d %q %v", a.code, a.body, a.err)
		}
		byBackend[a.body]++
	}
	for _, b := range backends {
		if b.max.Load() != 1 || b.all.Load() == 0 {
			t.Errorf("backend %s: %d requests, at most %d at once; want some, one at a time", b.name, b.all.Load(), b.max.Load())
		}
	}
	t.Logf("requests per backend: %v", byBackend)
	if n, _ := g.histogram("ferry_gateway_activation_wait_seconds"); n == 0 {
		t.Error("no request was held, with 100 at once for 3 slots")
	}
}

// A slot given back while requests wait for it goes to one of them, not to nobody:
// with one pod of containerConcurrency 2, requests are served two at a time.
func TestFreedSlotsWakeWaiters(t *testing.T) {
	g := startGateway(t, Options{})
	b := newCountingBackend(t, "a", 20*time.Millisecond)
	g.serveRevision(revisionService("cc-2", 2, 0), b.Server)
	g.route("cc.example.com", "cc-2")
	var wg sync.WaitGroup
	start := time.Now()
	for range 10 {
		wg.Go(func() {
			if a := <-g.send(context.Background(), "cc.example.com", "/"); a.code != 200 {
				t.Errorf("%d %q %v", a.code, a.body, a.err)
			}
		})
	}
	wg.Wait()
	if b.max.Load() != 2 {
		t.Errorf("at most %d at once, want 2", b.max.Load())
	}
	// Five rounds of 20ms; a lost wake-up would leave one until the timeout (5m).
	if took := time.Since(start); took < 100*time.Millisecond || took > 5*time.Second {
		t.Errorf("10 requests of 20ms two at a time took %v", took)
	}
}

// Without a limit, a request goes to the pod with the fewest requests in flight: while
// one pod is busy with a slow request, the other takes everything.
func TestLeastInFlightBalancing(t *testing.T) {
	g := startGateway(t, Options{})
	blocked, release := make(chan string, 1), make(chan struct{})
	backend := func(name string) *httptest.Server {
		return newBackend(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				blocked <- name
				<-release
			}
			w.Write([]byte(name))
		})
	}
	a, b := backend("a"), backend("b")
	g.serveRevision(revisionService("lb-1", 0, 0), a, b)
	g.route("lb.example.com", "lb-1")

	slow := g.send(context.Background(), "lb.example.com", "/slow")
	busy := <-blocked
	for i := range 10 {
		got := <-g.send(context.Background(), "lb.example.com", "/")
		if got.code != 200 || got.body == busy {
			t.Fatalf("request %d: %d %q while %s is busy", i, got.code, got.body, busy)
		}
	}
	close(release)
	if got := <-slow; got.code != 200 || got.body != busy {
		t.Errorf("slow request: %d %q", got.code, got.body)
	}

	// Idle pods share the load evenly.
	seen := map[string]int{}
	for range 10 {
		seen[(<-g.send(context.Background(), "lb.example.com", "/")).body]++
	}
	if seen["a"] != 5 || seen["b"] != 5 {
		t.Errorf("idle pods got %v, want 5 each", seen)
	}
}

// Scaling down removes a pod from the ready set; the requests it is serving finish,
// and its slot, still counted, keeps containerConcurrency if it comes back.
func TestRemovedPodFinishesItsRequests(t *testing.T) {
	g := startGateway(t, Options{})
	started, release := make(chan struct{}, 1), make(chan struct{})
	a := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			started <- struct{}{}
			<-release
		}
		w.Write([]byte("a"))
	})
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("b")) })
	g.serveRevision(revisionService("rev-1", 1, 0), a)
	g.route("rev.example.com", "rev-1")
	svc := g.service("rev-1")

	slow := g.send(context.Background(), "rev.example.com", "/slow")
	<-started
	g.serveRevision(revisionService("rev-1", 1, 0), b) // a leaves the ready set
	if got := <-g.send(context.Background(), "rev.example.com", "/"); got.code != 200 || got.body != "b" {
		t.Errorf("after a left: %d %q", got.code, got.body)
	}
	aAddr := a.Listener.Addr().String()
	slot := g.services.Slot(svc, aAddr)
	if slot == nil || slot.InFlight() != 1 {
		t.Fatalf("a's slot was not kept with its request in flight: %v", slot)
	}

	// a comes back, alone, before its request finished: with containerConcurrency
	// 1 the next request waits for it.
	g.serveRevision(revisionService("rev-1", 1, 0), a)
	next := g.send(context.Background(), "rev.example.com", "/")
	eventually(t, "the next request to wait for a's slot", func() bool { return svc.Room.Waiting.Load() == 1 })
	close(release)
	if got := <-slow; got.code != 200 || got.body != "a" {
		t.Errorf("the removed pod's request: %d %q %v", got.code, got.body, got.err)
	}
	if got := <-next; got.code != 200 || got.body != "a" {
		t.Errorf("the request that waited: %d %q %v", got.code, got.body, got.err)
	}
	eventually(t, "nothing in flight", func() bool {
		_, n := svc.Load.Read(backends.Micros(time.Now()))
		return n == 0 && slot.InFlight() == 0
	})
	// Once idle and gone from the ready set, the slot is forgotten.
	g.serveRevision(revisionService("rev-1", 1, 0), b)
	if kept := g.services.Slot(svc, aAddr); kept != nil {
		t.Error("an idle removed pod's slot was kept")
	}
}

// In ferry up, kwok's pods have no process: the gateway answers for them, through the
// same holding and accounting as real pods.
func TestSimulatedPodAnswersAfterActivation(t *testing.T) {
	sink := &recordingSink{}
	g := startGateway(t, Options{Stats: sink})
	g.serveRevision(revisionService("hello-00001", 0, 0))
	g.route("hello.example.com", "hello-00001")
	got := g.send(context.Background(), "hello.example.com", "/")
	svc := g.service("hello-00001")
	eventually(t, "the request to be held", func() bool { return svc.Room.Waiting.Load() == 1 })
	g.services.Update(gatewaytest.Key("hello-00001"), backends.BuildEndpoints(revisionService("hello-00001", 0, 0),
		[]discoveryv1.EndpointSlice{gatewaytest.SliceFor("hello-00001", 8012, "10.244.0.5")}, func(string) bool { return true }))
	a := <-got
	if a.code != 200 || a.body != "Hello from revision hello-00001 (pod 10.244.0.5 is simulated by kwok; no process serves it)\n" ||
		a.header.Get("X-Ferry-Simulated") != "true" || a.header.Get("X-Ferry-Activation-Wait") == "" {
		t.Errorf("%d %q %v", a.code, a.body, a.header)
	}
	if pokes := sink.poked(); len(pokes) != 1 {
		t.Errorf("pokes %v", pokes)
	}
	if got := testutil.ToFloat64(g.metrics.Requests.WithLabelValues("hello.example.com", "200", "ns", "hello-00001")); got != 1 {
		t.Errorf("simulated answers counted %v times", got)
	}
}

// A request with a body takes http.Transport; the revision timeout bounds its wait for
// the headers too.
func TestRevisionTimeoutBoundsTheAnswerOfABodyRequest(t *testing.T) {
	g := startGateway(t, Options{RequestTimeout: 100 * time.Millisecond})
	stop := make(chan struct{})
	slow := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(stop) })
	g.serveRevision(revisionService("slow-1", 0, 0), slow)
	g.route("slow.example.com", "slow-1")
	start := time.Now()
	code, body := fetch(t, g, "POST", "slow.example.com", "payload")
	if took := time.Since(start); code != http.StatusGatewayTimeout || !strings.HasPrefix(body, "ferry: revision slow-1 did not answer in time") ||
		took > 5*time.Second {
		t.Errorf("%d %q after %v", code, body, took)
	}
}

// A stopping gateway answers its held requests at once instead of keeping them for
// the drain timeout: the client can retry on another replica.
func TestHeldRequestsAreAnsweredOnShutdown(t *testing.T) {
	g := New(Options{ExternalAddr: "127.0.0.1:0", LocalAddr: "127.0.0.1:0"})
	if err := g.bind(); err != nil {
		t.Fatal(err)
	}
	tg := &testGateway{Gateway: g, t: t}
	tg.serveRevision(revisionService("cold-1", 0, 0))
	tg.route("cold.example.com", "cold-1")
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- g.servers().Start(ctx) }()

	held := tg.send(context.Background(), "cold.example.com", "/")
	eventually(t, "the request to be held", func() bool { return tg.service("cold-1").Room.Waiting.Load() == 1 })
	start := time.Now()
	cancel()
	a := <-held
	if a.code != http.StatusServiceUnavailable || a.body != "ferry: the gateway is shutting down; try again\n" || a.header.Get("Retry-After") == "" {
		t.Errorf("held request on shutdown: %d %q %v", a.code, a.body, a.err)
	}
	if err := <-stopped; err != nil || time.Since(start) > 5*time.Second {
		t.Errorf("Start: %v after %v", err, time.Since(start))
	}
}
