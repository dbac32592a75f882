package gateway

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
	"github.com/prometheus/client_golang/prometheus/testutil"
	discoveryv1 "k8s.io/api/discovery/v1"
)

func TestProxyRoutesByHostAndPath(t *testing.T) {
	g := startGateway(t, Options{})
	g.serve("web-1", newEchoBackend(t, "web-1"))
	g.serve("api-1", newEchoBackend(t, "api-1"))
	apiPath := gatewaytest.Path("/api", gatewaytest.SplitTo("api-1", 100))
	apiPath.AppendHeaders = map[string]string{"knative-serving-namespace": "ns", "x-level": "path"}
	apiPath.Splits[0].AppendHeaders = map[string]string{"knative-serving-revision": "api-1", "x-level": "split"}
	rewritten := gatewaytest.Path("/rewrite", gatewaytest.SplitTo("web-1", 100))
	rewritten.RewriteHost = "web.internal"
	g.program(gatewaytest.NewIngress("web", 0, gatewaytest.ExternalRule([]string{"web.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("web-1", 100)), apiPath, rewritten)))

	for _, tc := range []struct {
		host, path, wantBackend string
	}{
		{host: "web.example.com", path: "/", wantBackend: "web-1"},
		{host: "WEB.Example.com:8080", path: "/x", wantBackend: "web-1"},
		{host: "web.example.com.", path: "/api/v1", wantBackend: "api-1"},
		{host: "web.example.com", path: "/apiary", wantBackend: "api-1"}, // prefixes are not segment-aware
	} {
		code, body, e := get(t, g.externalURL(tc.path), tc.host, nil)
		if code != http.StatusOK || e.Backend != tc.wantBackend || e.Path != tc.path {
			t.Errorf("%s%s: %d %q %+v; want backend %s", tc.host, tc.path, code, body, e, tc.wantBackend)
		}
	}

	// Path and split headers are set, the split's last; X-Forwarded-* come from what
	// the gateway saw, not from the client.
	_, _, e := get(t, g.externalURL("/api"), "web.example.com", http.Header{"X-Forwarded-For": {"6.6.6.6"}, "X-Level": {"client"}})
	for name, want := range map[string]string{
		"Knative-Serving-Namespace": "ns",
		"Knative-Serving-Revision":  "api-1",
		"X-Level":                   "split",
		"X-Forwarded-For":           "127.0.0.1",
		"X-Forwarded-Host":          "web.example.com",
		"X-Forwarded-Proto":         "http",
	} {
		if got := strings.Join(e.Header[name], ","); got != want {
			t.Errorf("upstream %s = %q, want %q", name, got, want)
		}
	}
	if e.Host != "web.example.com" {
		t.Errorf("upstream Host %q, want the client's", e.Host)
	}
	if _, _, e := get(t, g.externalURL("/rewrite"), "web.example.com", nil); e.Host != "web.internal" {
		t.Errorf("rewriteHost: upstream Host %q", e.Host)
	}
}

func TestProxyVisibility(t *testing.T) {
	g := startGateway(t, Options{})
	g.serve("hello-1", newEchoBackend(t, "hello-1"))
	g.program(gatewaytest.NewIngress("hello", 0,
		gatewaytest.ExternalRule([]string{"hello.ns.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("hello-1", 100))),
		gatewaytest.LocalRule([]string{"hello.ns.svc.cluster.local"}, gatewaytest.Path("", gatewaytest.SplitTo("hello-1", 100))),
	))
	for _, tc := range []struct {
		url, host string
		want      int
	}{
		{url: g.externalURL("/"), host: "hello.ns.example.com", want: http.StatusOK},
		{url: g.externalURL("/"), host: "hello.ns.svc.cluster.local", want: http.StatusNotFound},
		{url: g.localURL("/"), host: "hello.ns.svc.cluster.local", want: http.StatusOK},
		{url: g.localURL("/"), host: "hello.ns.example.com", want: http.StatusOK},
	} {
		if code, body, _ := get(t, tc.url, tc.host, nil); code != tc.want {
			t.Errorf("%s with Host %s: %d %q, want %d", tc.url, tc.host, code, body, tc.want)
		}
	}
}

func TestProxyErrorAnswers(t *testing.T) {
	g := startGateway(t, Options{RequestTimeout: 100 * time.Millisecond})
	closed := newEchoBackend(t, "gone")
	closed.Close()
	g.serve("gone-1", closed)
	g.services.Update(gatewaytest.Key("kwok-1"), backends.BuildEndpoints(gatewaytest.ServiceWithPort("kwok-1"),
		[]discoveryv1.EndpointSlice{gatewaytest.SliceFor("kwok-1", 8012, "10.244.0.5")}, func(string) bool { return true }))
	g.program(gatewaytest.NewIngress("app", 0, gatewaytest.ExternalRule([]string{"app.example.com"},
		gatewaytest.Path("/empty", gatewaytest.SplitTo("empty-1", 100)),
		gatewaytest.Path("/gone", gatewaytest.SplitTo("gone-1", 100)),
		gatewaytest.Path("/kwok", gatewaytest.SplitTo("kwok-1", 100)),
	)))

	for _, tc := range []struct {
		host, path string
		code       int
		body       string
	}{
		{host: "nope.example.com", path: "/", code: 404, body: "ferry: no route for host \"nope.example.com\"\n"},
		{host: "app.example.com", path: "/", code: 404, body: "ferry: no route for app.example.com/\n"},
		{host: "app.example.com", path: "/empty", code: 504, body: "ferry: revision empty-1 did not get a ready pod within 100ms (timeoutSeconds)\n"},
		{host: "app.example.com", path: "/kwok", code: 200, body: "Hello from revision kwok-1 (pod 10.244.0.5 is simulated by kwok; no process serves it)\n"},
		{host: "app.example.com", path: "/gone", code: 502, body: "ferry: revision gone-1: upstream " + closed.Listener.Addr().String() + " failed: "},
	} {
		code, body, _ := get(t, g.externalURL(tc.path), tc.host, nil)
		if code != tc.code || !strings.HasPrefix(body, tc.body) {
			t.Errorf("%s%s: %d %q; want %d %q", tc.host, tc.path, code, body, tc.code, tc.body)
		}
	}
	if got := testutil.ToFloat64(g.metrics.Requests.WithLabelValues("", "404", "", "")); got != 1 {
		t.Errorf("unknown-host requests counted %v times under host=\"\"", got)
	}
	if got := testutil.ToFloat64(g.metrics.Requests.WithLabelValues("app.example.com", "200", "ns", "kwok-1")); got != 1 {
		t.Errorf("simulated-pod requests counted %v times", got)
	}
}

func TestProxyStripsHopByHopHeaders(t *testing.T) {
	g := startGateway(t, Options{})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, h := range []string{"X-Hop", "Keep-Alive", "Proxy-Authorization", "Te"} {
			if v := r.Header.Get(h); v != "" {
				t.Errorf("upstream got hop-by-hop %s: %s", h, v)
			}
		}
		if r.Header.Get("X-End") != "kept" {
			t.Error("upstream lost an end-to-end header")
		}
		w.Header().Set("Connection", "X-Backend-Hop")
		w.Header().Set("X-Backend-Hop", "secret")
		w.Header().Set("Keep-Alive", "timeout=5")
	}))
	t.Cleanup(backend.Close)
	g.serve("hop-1", backend)
	g.program(gatewaytest.NewIngress("hop", 0, gatewaytest.ExternalRule([]string{"hop.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("hop-1", 100)))))

	req, _ := http.NewRequest("GET", g.externalURL("/"), nil)
	req.Host = "hop.example.com"
	req.Header.Set("Connection", "X-Hop")
	req.Header.Set("X-Hop", "secret")
	req.Header.Set("Keep-Alive", "timeout=5")
	req.Header.Set("Proxy-Authorization", "Basic Zm9vOmJhcg==")
	req.Header.Set("X-End", "kept")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("X-Backend-Hop") != "" || res.Header.Get("Keep-Alive") != "" {
		t.Errorf("response %d with headers %v", res.StatusCode, res.Header)
	}
}

func TestProxyWebSocketUpgrade(t *testing.T) {
	g := startGateway(t, Options{RequestTimeout: 400 * time.Millisecond})
	// The backend switches protocols and echoes lines until the revision timeout
	// (RequestTimeout here) ends the connection, as Knative's does.
	backend := httptest.NewServer(echoLinesAfterUpgrade(t))
	t.Cleanup(backend.Close)
	g.serve("ws-1", backend)
	g.program(gatewaytest.NewIngress("ws", 0, gatewaytest.ExternalRule([]string{"ws.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("ws-1", 100)))))

	start := time.Now()
	conn, br := upgrade(t, g.ExternalAddr(), "ws.example.com")
	for _, msg := range []string{"hello", "again"} {
		time.Sleep(60 * time.Millisecond)
		fmt.Fprintln(conn, msg)
		if got, err := br.ReadString('\n'); err != nil || got != "echo "+msg+"\n" {
			t.Fatalf("read %q, %v", got, err)
		}
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := br.ReadString('\n')
	if err == nil {
		t.Fatalf("read %q; want the connection closed at timeoutSeconds", got)
	}
	if took := closedBy(t, err).Sub(start); took < 350*time.Millisecond || took > 2*time.Second {
		t.Errorf("closed after %v; want it closed at timeoutSeconds (400ms)", took)
	}
}

func TestProxyH2C(t *testing.T) {
	g := startGateway(t, Options{})
	g.serve("h2-1", newEchoBackend(t, "h2-1"))
	g.program(gatewaytest.NewIngress("h2", 0, gatewaytest.ExternalRule([]string{"h2.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("h2-1", 100)))))

	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: &http.Transport{Protocols: protocols, TLSClientConfig: &tls.Config{}}}
	req, _ := http.NewRequest("GET", g.externalURL("/"), nil)
	req.Host = "h2.example.com"
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || res.ProtoMajor != 2 {
		t.Errorf("status %d over %s", res.StatusCode, res.Proto)
	}
}

func TestProxyMalformedRequests(t *testing.T) {
	g := startGateway(t, Options{MaxHeaderBytes: 8 << 10})
	g.serve("ok-1", newEchoBackend(t, "ok-1"))
	g.program(gatewaytest.NewIngress("ok", 0, gatewaytest.ExternalRule([]string{"ok.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("ok-1", 100)))))

	for _, tc := range []struct {
		name, request string
		want          int
	}{
		{name: "space in Host", request: "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", want: 400},
		{name: "path in Host", request: "GET / HTTP/1.1\r\nHost: ok.example.com/x\r\n\r\n", want: 400},
		{name: "no Host on HTTP/1.1", request: "GET / HTTP/1.1\r\n\r\n", want: 400},
		{name: "no Host on HTTP/1.0", request: "GET / HTTP/1.0\r\n\r\n", want: 400},
		{name: "port that is not a number", request: "GET / HTTP/1.0\r\nHost: ok.example.com:http\r\n\r\n", want: 400},
		// At least 14 bytes: net/http waits for that many to rule out an h2c preface.
		{name: "garbage request line", request: "HELLO THERE GATEWAY\r\n\r\n", want: 400},
		{name: "huge header", request: "GET / HTTP/1.1\r\nHost: ok.example.com\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n", want: 431},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", g.ExternalAddr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			// The gateway may answer and close before reading the whole request.
			go io.WriteString(conn, tc.request)
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tc.want {
				t.Errorf("status %d, want %d", res.StatusCode, tc.want)
			}
		})
	}
	if code, body, _ := get(t, g.externalURL("/"), "ok.example.com", nil); code != 200 {
		t.Errorf("after malformed requests: %d %q", code, body)
	}
}

func TestProxyRequestTimeout(t *testing.T) {
	g := startGateway(t, Options{RequestTimeout: 100 * time.Millisecond})
	release := make(chan struct{})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); backend.Close() })
	g.serve("slow-1", backend)
	g.program(gatewaytest.NewIngress("slow", 0, gatewaytest.ExternalRule([]string{"slow.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("slow-1", 100)))))

	code, body, _ := get(t, g.externalURL("/"), "slow.example.com", nil)
	if code != http.StatusGatewayTimeout || !strings.HasPrefix(body, "ferry: revision slow-1 did not answer in time") {
		t.Errorf("%d %q", code, body)
	}
}

func TestListenersDrainInFlightRequests(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		io.WriteString(w, "finished")
	}))
	t.Cleanup(backend.Close)

	drained := New(Options{ExternalAddr: "127.0.0.1:0", LocalAddr: "127.0.0.1:0"})
	if err := drained.bind(); err != nil {
		t.Fatal(err)
	}
	tg := &testGateway{Gateway: drained, t: t}
	tg.serve("slow-1", backend)
	tg.program(gatewaytest.NewIngress("slow", 0, gatewaytest.ExternalRule([]string{"slow.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("slow-1", 100)))))
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- drained.servers().Start(ctx) }()

	answer := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest("GET", tg.externalURL("/"), nil)
		req.Host = "slow.example.com"
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			answer <- err.Error()
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		answer <- string(b)
	}()
	<-started
	cancel() // the manager stops while the request is in flight
	time.Sleep(50 * time.Millisecond)
	if _, err := net.DialTimeout("tcp", drained.ExternalAddr(), time.Second); err == nil {
		t.Error("the draining gateway still accepts connections")
	}
	close(release)
	if got := <-answer; got != "finished" {
		t.Errorf("in-flight request got %q", got)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Start: %v", err)
	}
}
