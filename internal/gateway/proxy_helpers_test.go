package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
	"github.com/prometheus/client_golang/prometheus"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// testGateway runs the listeners of a Gateway without a manager; tests program the
// table and the endpoints directly.
type testGateway struct {
	*Gateway
	t testing.TB
}

func startGateway(t testing.TB, opts Options) *testGateway {
	t.Helper()
	return startGatewayReporting(t, opts, true)
}

// startGatewayReporting starts the reporter too if runReporter, else a test calls
// its collect.
func startGatewayReporting(t testing.TB, opts Options, runReporter bool) *testGateway {
	t.Helper()
	// Any free port, unless the caller fixed one (TestBenchServe).
	if opts.ExternalAddr == "" {
		opts.ExternalAddr = "127.0.0.1:0"
	}
	if opts.LocalAddr == "" {
		opts.LocalAddr = "127.0.0.1:0"
	}
	opts.Registry = prometheus.NewRegistry()
	g := New(opts)
	if err := g.metrics.Register(opts.Registry); err != nil {
		t.Fatal(err)
	}
	if err := g.bind(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- g.servers().Start(ctx) }()
	reporting := runReporter && g.reporter != nil
	if reporting {
		go func() { done <- g.reporter.Start(ctx) }()
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("listeners: %v", err)
		}
		if reporting {
			if err := <-done; err != nil {
				t.Errorf("reporter: %v", err)
			}
		}
	})
	return &testGateway{Gateway: g, t: t}
}

func (tg *testGateway) program(ing *v1alpha1.Ingress) {
	tg.t.Helper()
	if err := tg.programmer.Apply(ing); err != nil {
		tg.t.Fatal(err)
	}
}

// serve points the Service name at the given backends.
func (tg *testGateway) serve(name string, servers ...*httptest.Server) {
	var addrs []string
	for _, b := range servers {
		addrs = append(addrs, b.Listener.Addr().String())
	}
	tg.serveAddrs(name, addrs...)
}

// serveAddrs points the Service name at the given host:port addresses.
func (tg *testGateway) serveAddrs(name string, addrs ...string) {
	var slices []discoveryv1.EndpointSlice
	for _, addr := range addrs {
		host, port := splitHostPort(tg.t, addr)
		s := gatewaytest.SliceFor(name, int32(port), host)
		s.Name = name + "-" + strconv.Itoa(port)
		slices = append(slices, s)
	}
	tg.services.Update(gatewaytest.Key(name), backends.BuildEndpoints(gatewaytest.ServiceWithPort(name), slices, gatewaytest.NotSimulated))
}

func (tg *testGateway) externalURL(path string) string { return "http://" + tg.ExternalAddr() + path }
func (tg *testGateway) localURL(path string) string    { return "http://" + tg.LocalAddr() + path }

func splitHostPort(t testing.TB, addr string) (string, int) {
	t.Helper()
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return host, port
}

// echo is what an echo backend saw.
type echo struct {
	Backend string      `json:"backend"`
	Host    string      `json:"host"`
	Path    string      `json:"path"`
	Header  http.Header `json:"header"`
}

// newEchoBackend answers every request with what it saw, as JSON.
func newEchoBackend(t *testing.T, name string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(echo{Backend: name, Host: r.Host, Path: r.URL.Path, Header: r.Header})
	}))
	t.Cleanup(s.Close)
	return s
}

// get sends a request with the given Host and decodes an echo, returning the status
// and body for other answers (non-200, or not an echo backend's JSON).
func get(t *testing.T, url, host string, header http.Header) (int, string, *echo) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/json" {
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, string(b), nil
	}
	var e echo
	if err := json.NewDecoder(res.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, "", &e
}
