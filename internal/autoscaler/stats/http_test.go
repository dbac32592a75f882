package stats

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a Sink that keeps what it gets.
type recorder struct {
	mu      sync.Mutex
	reports []Report
	pokes   []string
}

func (r *recorder) Report(rep Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports = append(r.reports, rep)
}

func (r *recorder) Poke(namespace, revision string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pokes = append(r.pokes, namespace+"/"+revision)
}

func (r *recorder) got() ([]Report, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Report(nil), r.reports...), append([]string(nil), r.pokes...)
}

var sample = Report{
	Source: "gateway-0",
	Time:   time.Date(2025, 1, 1, 0, 0, 1, 0, time.UTC),
	Period: time.Second,
	Stats:  []Stat{{Namespace: "ns", Revision: "hello-00001", AverageConcurrency: 1.5, Requests: 12}},
}

func TestHandler(t *testing.T) {
	rec := &recorder{}
	h := Handler(rec)
	for _, tc := range []struct {
		method, path, body string
		want               int
	}{
		{method: "POST", path: "/report", body: `{"source":"gateway-0","time":"2025-01-01T00:00:01Z","period":1000000000,` +
			`"stats":[{"namespace":"ns","revision":"hello-00001","averageConcurrency":1.5,"requests":12}],"future":true}`, want: 204},
		{method: "POST", path: "/poke", body: `{"namespace":"ns","revision":"hello-00001"}`, want: 204},
		{method: "POST", path: "/report", body: `{"stats":`, want: 400},
		{method: "POST", path: "/report", body: `[1,2]`, want: 400},
		{method: "POST", path: "/poke", body: `{"namespace":"ns"}`, want: 400},
		{method: "POST", path: "/poke", body: `not json`, want: 400},
		{method: "POST", path: "/report", body: `{"source":"` + strings.Repeat("x", maxBodyBytes) + `"}`, want: 413},
		{method: "GET", path: "/report", want: 405},
		{method: "PUT", path: "/poke", body: `{}`, want: 405},
		{method: "POST", path: "/other", body: `{}`, want: 404},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
		if w.Code != tc.want {
			t.Errorf("%s %s %.40q: %d %q, want %d", tc.method, tc.path, tc.body, w.Code, w.Body.String(), tc.want)
		}
		if tc.want == 405 && w.Header().Get("Allow") != "POST" {
			t.Errorf("%s %s: Allow %q", tc.method, tc.path, w.Header().Get("Allow"))
		}
	}
	reports, pokes := rec.got()
	if len(reports) != 1 || !reflect.DeepEqual(reports[0], sample) {
		t.Errorf("reports %+v, want %+v", reports, sample)
	}
	if !reflect.DeepEqual(pokes, []string{"ns/hello-00001"}) {
		t.Errorf("pokes %v", pokes)
	}
}

func startClient(t *testing.T, c *Client) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestClientPostsToTheHandler(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(Handler(rec))
	t.Cleanup(srv.Close)
	// An IP literal is used as is: the resolver is not asked.
	c := NewClient(srv.Listener.Addr().String(), WithResolver(func(context.Context, string) ([]string, error) {
		t.Error("resolver called for an IP literal")
		return nil, errors.New("no")
	}))
	startClient(t, c)
	c.Report(sample)
	c.Poke("ns", "hello-00001")
	// The handler records a message before the client reads the answer and counts it
	// sent: wait for both.
	eventually(t, "the report and the poke", func() bool {
		reports, pokes := rec.got()
		return len(reports) == 1 && len(pokes) == 1 && c.Sent()+c.Failed() == 2
	})
	if reports, _ := rec.got(); !reflect.DeepEqual(reports[0], sample) {
		t.Errorf("report %+v", reports[0])
	}
	if c.Sent() != 2 || c.Failed() != 0 || c.Dropped() != 0 {
		t.Errorf("sent %d, failed %d, dropped %d", c.Sent(), c.Failed(), c.Dropped())
	}
	if c.NeedLeaderElection() {
		t.Error("the client waits for leader election")
	}
}

// Every address of the host name gets every message: two controller replicas behind
// a headless Service. The test resolves the name to two documentation addresses and
// dials them to two servers on loopback.
func TestClientPostsToEveryAddress(t *testing.T) {
	recs := map[string]*recorder{"192.0.2.1": {}, "192.0.2.2": {}}
	servers := map[string]string{}
	for ip, rec := range recs {
		srv := httptest.NewServer(Handler(rec))
		t.Cleanup(srv.Close)
		servers[ip] = srv.Listener.Addr().String()
	}
	var lookups sync.Map
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, _ := net.SplitHostPort(addr)
		if port != "9090" || servers[host] == "" {
			return nil, errors.New("test: unexpected address " + addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, servers[host])
	}
	c := NewClient("autoscaler.ferry-system.svc:9090",
		WithResolver(func(_ context.Context, host string) ([]string, error) {
			lookups.Store(host, true)
			return []string{"192.0.2.1", "192.0.2.2"}, nil
		}),
		WithHTTPClient(&http.Client{Transport: &http.Transport{DialContext: dial}}))
	startClient(t, c)
	c.Poke("ns", "hello-00001")
	c.Report(sample)
	for ip, rec := range recs {
		eventually(t, "both messages at "+ip, func() bool {
			reports, pokes := rec.got()
			return len(reports) == 1 && len(pokes) == 1
		})
	}
	if _, ok := lookups.Load("autoscaler.ferry-system.svc"); !ok {
		t.Error("the host name was not resolved")
	}
}

// Report and Poke never block, whatever the state of the sender: a full queue drops.
func TestClientNeverBlocks(t *testing.T) {
	c := NewClient("127.0.0.1:1", WithQueueSize(2)) // not started: nothing drains the queue
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 10 {
			c.Report(sample)
			c.Poke("ns", "r")
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Report or Poke blocked")
	}
	if c.Dropped() != 18 {
		t.Errorf("dropped %d, want 18", c.Dropped())
	}
}

// An address that does not answer costs a failure, not the other messages.
func TestClientCountsFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c := NewClient(addr, WithTimeout(500*time.Millisecond))
	startClient(t, c)
	c.Poke("ns", "r")
	eventually(t, "the failure", func() bool { return c.Failed() == 1 })

	bad := NewClient("no-port")
	if err := bad.Start(context.Background()); err == nil {
		t.Error("Start accepted an address without a port")
	}
}

// A comma-separated address lists replicas that no one name resolves to (processes
// on one host): each gets every message.
func TestClientPostsToEveryListedAddress(t *testing.T) {
	var recs [2]recorder
	var addrs []string
	for i := range recs {
		srv := httptest.NewServer(Handler(&recs[i]))
		t.Cleanup(srv.Close)
		addrs = append(addrs, srv.Listener.Addr().String())
	}
	c := NewClient(strings.Join(addrs, ","))
	startClient(t, c)
	c.Poke("ns", "hello-00001")
	eventually(t, "a poke at each replica", func() bool {
		_, a := recs[0].got()
		_, b := recs[1].got()
		return len(a) == 1 && len(b) == 1
	})
}
