package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
)

// rawBackend accepts connections on loopback and hands each to serve, for answers
// that net/http would not give.
func rawBackend(t *testing.T, serve func(conn net.Conn, br *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				serve(conn, bufio.NewReader(conn))
			}()
		}
	}()
	return ln.Addr().String()
}

// fetch sends method to the gateway for host and returns status and body.
func fetch(t *testing.T, g *testGateway, method, host, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, g.externalURL("/"), rd)
	req.Host = host
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

func TestUpstreamKeepsConnectionsAlive(t *testing.T) {
	g := startGateway(t, Options{})
	var conns atomic.Int32
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Method)
	}))
	backend.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	backend.Start()
	t.Cleanup(backend.Close)
	g.serve("ka-1", backend)
	g.program(gatewaytest.NewIngress("ka", 0, gatewaytest.ExternalRule([]string{"ka.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("ka-1", 100)))))

	for _, method := range []string{"GET", "HEAD", "OPTIONS", "GET", "GET"} {
		if code, _ := fetch(t, g, method, "ka.example.com", ""); code != 200 {
			t.Fatalf("%s: %d", method, code)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d upstream connections for sequential requests, want 1", n)
	}
	// Requests with a body take http.Transport, and arrive whole.
	for _, method := range []string{"POST", "PUT", "DELETE"} {
		if code, body := fetch(t, g, method, "ka.example.com", "payload"); code != 200 || body != method {
			t.Errorf("%s: %d %q", method, code, body)
		}
	}
}

func TestUpstreamRetriesAConnectionClosedWhileIdle(t *testing.T) {
	g := startGateway(t, Options{})
	// The backend answers one request per connection and hangs up without saying so,
	// as a server does when its idle timeout fires between requests.
	var served atomic.Int32
	addr := rawBackend(t, func(conn net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		served.Add(1)
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	g.serveAddrs("idle-1", addr)
	g.program(gatewaytest.NewIngress("idle", 0, gatewaytest.ExternalRule([]string{"idle.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("idle-1", 100)))))

	for i := range 3 {
		if code, body := fetch(t, g, "GET", "idle.example.com", ""); code != 200 || body != "ok" {
			t.Fatalf("request %d: %d %q", i, code, body)
		}
		time.Sleep(20 * time.Millisecond) // let the hang-up land
	}
	if served.Load() != 3 {
		t.Errorf("backend served %d requests", served.Load())
	}
}

func TestUpstreamResponseFraming(t *testing.T) {
	g := startGateway(t, Options{})
	addr := rawBackend(t, func(conn net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			switch req.URL.Path {
			case "/chunked":
				io.WriteString(conn, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n")
			case "/hints":
				io.WriteString(conn, "HTTP/1.1 103 Early Hints\r\nLink: </style.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal")
			case "/until-close":
				io.WriteString(conn, "HTTP/1.1 200 OK\r\n\r\nread until the backend hangs up")
				return
			}
		}
	})
	g.serveAddrs("framing-1", addr)
	g.program(gatewaytest.NewIngress("framing", 0, gatewaytest.ExternalRule([]string{"framing.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("framing-1", 100)))))

	for _, tc := range []struct{ path, want string }{
		{"/chunked", "abcdef"},
		{"/hints", "final"},
		{"/until-close", "read until the backend hangs up"},
		{"/chunked", "abcdef"},
	} {
		req, _ := http.NewRequest("GET", g.externalURL(tc.path), nil)
		req.Host = "framing.example.com"
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || string(b) != tc.want {
			t.Errorf("%s: %d %q, want %q", tc.path, res.StatusCode, b, tc.want)
		}
	}
}

func TestUpstreamClientCancellationClosesTheUpstream(t *testing.T) {
	g := startGateway(t, Options{})
	gone := make(chan struct{})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		io.WriteString(w, "first chunk\n")
		http.NewResponseController(w).Flush()
		<-r.Context().Done() // the gateway hung up on us
		close(gone)
	}))
	t.Cleanup(backend.Close)
	g.serve("stream-1", backend)
	g.program(gatewaytest.NewIngress("stream", 0, gatewaytest.ExternalRule([]string{"stream.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("stream-1", 100)))))

	req, _ := http.NewRequest("GET", g.externalURL("/"), nil)
	req.Host = "stream.example.com"
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(res.Body).ReadString('\n')
	if err != nil || line != "first chunk\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	res.Body.Close() // the client walks away mid-body
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream connection outlived the client")
	}
}
