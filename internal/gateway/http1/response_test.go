package http1

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestResponsesAsNetHTTP serves each handler with net/http's server and with the lean
// loop and requires the client to read the same answer: status, headers (but Date),
// body, trailers, and whether the connection stays open.
func TestResponsesAsNetHTTP(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 300)
	handlers := map[string]http.HandlerFunc{
		"nothing": func(w http.ResponseWriter, r *http.Request) {},
		"short": func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "<html>hello")
		},
		"typed": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, "{}")
		},
		"no sniffing": func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = nil
			io.WriteString(w, "x")
		},
		"big": func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, big)
		},
		"declared": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "5")
			io.WriteString(w, "hello")
		},
		"short of declared": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "10")
			io.WriteString(w, "hello")
		},
		"flushed": func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "a")
			w.(http.Flusher).Flush()
			io.WriteString(w, "b")
		},
		"trailers": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "X-Sum")
			io.WriteString(w, "body")
			w.Header().Set("X-Sum", "1")
			w.Header().Set(http.TrailerPrefix+"X-Late", "2")
		},
		"no content": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent)
			io.WriteString(w, "ignored")
		},
		"not modified": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Etag", `"1"`)
			w.WriteHeader(http.StatusNotModified)
		},
		"odd status": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(599)
		},
		"closing": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			io.WriteString(w, "bye")
		},
		"dated": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Date", "Mon, 02 Jan 2006 15:04:05 GMT")
			w.Header().Add("Set-Cookie", "a=1")
			w.Header().Add("Set-Cookie", "b=2")
			w.Header().Set("X-Multi", "a\r\nb")
		},
	}
	for name, h := range handlers {
		for _, method := range []string{"GET", "HEAD"} {
			t.Run(name+"/"+method, func(t *testing.T) {
				want := fetchTwice(t, false, h, method)
				got := fetchTwice(t, true, h, method)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("lean loop:\n%+v\nnet/http:\n%+v", got, want)
				}
			})
		}
	}
}

type answer struct {
	Status        string
	Header        http.Header
	Body          string
	Trailer       http.Header
	ContentLength int64
	Chunked       bool
	Err           string
	Reused        bool // the second request went over the same connection
}

// fetchTwice sends two requests on one connection and returns what the client read
// of the first, and whether the second could follow it.
func fetchTwice(t *testing.T, lean bool, h http.Handler, method string) answer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ErrorLog: discardLog}
	served := make(chan struct{})
	if lean {
		s := &Server{Fallback: srv}
		go func() { s.Serve(ln); close(served) }()
		defer func() { s.Shutdown(context.Background()); <-served }()
	} else {
		go func() { srv.Serve(ln); close(served) }()
		defer func() { srv.Shutdown(context.Background()); <-served }()
	}
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	req, _ := http.NewRequest(method, "http://a.example.com/", nil)
	var a answer
	if err := req.Write(c); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		a.Err = err.Error()
	}
	res.Header.Del("Date")
	a.Status, a.Header, a.Body, a.Trailer, a.ContentLength = res.Status, res.Header, string(body), res.Trailer, res.ContentLength
	a.Chunked = len(res.TransferEncoding) > 0
	if req.Write(c) == nil {
		if res2, err := http.ReadResponse(br, req); err == nil {
			a.Reused = true
			res2.Body.Close()
		}
	}
	return a
}

// A head over a small MaxHeaderBytes goes to net/http, which refuses it.
func TestHeadOverMaxHeaderBytesIsRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Fallback: &http.Server{Handler: http.NotFoundHandler(), MaxHeaderBytes: 100, ErrorLog: discardLog}}
	served := make(chan struct{})
	go func() { s.Serve(ln); close(served) }()
	defer func() { s.Shutdown(context.Background()); <-served }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\nX: "+strings.Repeat("v", 4200+100)+"\r\n\r\n")
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("status %d, want 431", res.StatusCode)
	}
}
