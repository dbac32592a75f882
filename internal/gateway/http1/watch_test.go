package http1

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// serveLean serves h with the lean loop on a loopback port until the test ends.
func serveLean(t *testing.T, h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Fallback: &http.Server{Handler: h, ErrorLog: discardLog}}
	served := make(chan struct{})
	go func() { s.Serve(ln); close(served) }()
	t.Cleanup(func() { s.Shutdown(context.Background()); <-served })
	return ln.Addr().String()
}

// A client that leaves while its request runs past watchDelay cancels it.
func TestClientLeavingCancelsALongRequest(t *testing.T) {
	ended := make(chan struct{})
	addr := serveLean(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		close(ended)
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	time.Sleep(2 * watchDelay)
	c.Close()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the request's context was not cancelled when its client left")
	}
}

// What the watch reads, the client's next request, is served next.
func TestWatchKeepsTheNextRequest(t *testing.T) {
	addr := serveLean(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(3 * watchDelay)
		}
		io.WriteString(w, r.URL.Path)
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
	time.Sleep(2 * watchDelay) // the watch is reading now
	io.WriteString(c, "GET /next HTTP/1.1\r\nHost: a\r\n\r\n")
	br := bufio.NewReader(c)
	for _, want := range []string{"/slow", "/next"} {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		if string(body) != want {
			t.Errorf("body %q, want %q", body, want)
		}
	}
}
