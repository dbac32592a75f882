package gateway

import (
	"bufio"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	corev1 "k8s.io/api/core/v1"
)

// newH2CBackend serves HTTP/1.1 and h2c with prior knowledge, as a gRPC pod's Go
// server may; it answers with the protocol it was spoken to in, and a trailer.
func newH2CBackend(t *testing.T) *httptest.Server {
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			conn, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: %s\r\nConnection: Upgrade\r\n\r\nupgraded over %s\n", r.Header.Get("Upgrade"), r.Proto)
			rw.Flush()
			return
		}
		// Streamed, as gRPC answers are: an answer whose length the server
		// computes goes to an HTTP/1.1 client with a Content-Length, and loses an
		// unannounced trailer.
		io.WriteString(w, r.Proto)
		http.NewResponseController(w).Flush()
		w.Header().Set(http.TrailerPrefix+"Grpc-Status", "0")
	}))
	s.Config.Protocols = new(http.Protocols)
	s.Config.Protocols.SetHTTP1(true)
	s.Config.Protocols.SetUnencryptedHTTP2(true)
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// TestProtocolToThePod: a Revision whose port is named h2c is spoken to over h2c,
// trailers passed back; http1 or no name, HTTP/1.1; an upgrade always HTTP/1.1.
func TestProtocolToThePod(t *testing.T) {
	g := startGateway(t, Options{})
	backend := newH2CBackend(t)
	for name, want := range map[string]string{"h2c": "HTTP/2.0", "http1": "HTTP/1.1", "": "HTTP/1.1"} {
		rev := "rev-" + name
		g.serveRevisionSpec(rev, servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{
			Image: "img", Ports: []corev1.ContainerPort{{Name: name}}}}}}, backend)
		g.route(rev+".example.com", rev)
		for _, method := range []string{"GET", "POST"} { // the fast path and http.Transport
			req, _ := http.NewRequest(method, g.externalURL("/"), nil)
			req.Host = rev + ".example.com"
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if string(body) != want || res.Trailer.Get("Grpc-Status") != "0" {
				t.Errorf("port %q, %s: the pod saw %q, trailers %v; want %s and Grpc-Status 0", name, method, body, res.Trailer, want)
			}
		}
	}

	conn, err := net.Dial("tcp", g.ExternalAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET / HTTP/1.1\r\nHost: rev-h2c.example.com\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := br.ReadString('\n')
	if res.StatusCode != http.StatusSwitchingProtocols || line != "upgraded over HTTP/1.1\n" {
		t.Errorf("upgrade to an h2c pod: %d, %q", res.StatusCode, line)
	}
}

// A gRPC pod resets the stream at the deadline its client sent (grpc-timeout), often
// before the client's own timer fires: the client must read DEADLINE_EXCEEDED, not a
// 502. A reset before the deadline, or with no deadline, is still a 502.
func TestGRPCDeadlineReachedByThePod(t *testing.T) {
	g := startGateway(t, Options{})
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := r.Header.Get("X-Wait"); d != "" {
			wait, _ := time.ParseDuration(d)
			time.Sleep(wait)
		}
		panic(http.ErrAbortHandler) // RST_STREAM, as grpc-go at a deadline
	}))
	s.Config.Protocols = new(http.Protocols)
	s.Config.Protocols.SetUnencryptedHTTP2(true)
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.Start()
	t.Cleanup(s.Close)
	g.serveRevisionSpec("grpc-1", servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{
		Image: "img", Ports: []corev1.ContainerPort{{Name: "h2c"}}}}}}, s)
	g.route("grpc.example.com", "grpc-1")
	client := &http.Client{Transport: &http.Transport{Protocols: new(http.Protocols)}}
	client.Transport.(*http.Transport).Protocols.SetUnencryptedHTTP2(true)
	for _, tc := range []struct {
		name, timeout, wait string
		code                int
		status              string
	}{
		{"reset at the deadline", "50m", "60ms", http.StatusOK, "4"},
		{"reset before the deadline", "10S", "", http.StatusBadGateway, ""},
		{"reset with no deadline", "", "60ms", http.StatusBadGateway, ""},
	} {
		req, _ := http.NewRequest("POST", g.externalURL("/grpc.testing.TestService/StreamingOutputCall"), strings.NewReader("x"))
		req.Host = "grpc.example.com"
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("X-Wait", tc.wait)
		if tc.timeout != "" {
			req.Header.Set("Grpc-Timeout", tc.timeout)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != tc.code || res.Header.Get("Grpc-Status") != tc.status {
			t.Errorf("%s: %d, grpc-status %q; want %d, %q", tc.name, res.StatusCode, res.Header.Get("Grpc-Status"), tc.code, tc.status)
		}
	}
}
