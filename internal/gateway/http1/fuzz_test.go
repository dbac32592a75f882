package http1

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// parseSeeds are request streams at the edges of what the lean loop takes: the
// request line, fields, Content-Length and Transfer-Encoding, pipelining, oversized
// heads.
var parseSeeds = []string{
	"GET / HTTP/1.1\r\nHost: a.example.com\r\n\r\n",
	"GET /p?q=1&r=%41 HTTP/1.1\r\nHost: a.example.com:8080\r\nUser-Agent: x\r\nAccept: */*\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: b\r\n\r\nHEAD /3 HTTP/1.1\r\nHost: c\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nGET /2 HTTP/1.1\r\nHost: b\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Close\r\n\r\n",
	"GET / HTTP/1.1\r\nhost: a\r\ncontent-type: x\r\nx-FOO-bar: 1\r\nX-Foo-Bar: 2\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX: \t v \t\r\nY:\r\nZ:z\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX_Under: 1\r\nX!#$%&'*+-.^`|~: 2\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
	"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n folded\r\n\r\n",
	"GET / HTTP/1.1\nHost: a\n\n",
	"GET / HTTP/1.1\r\nHost: a\nX: 1\r\n\r\n",
	"GET / HTTP/1.1\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
	"GET http://a.example.com/x HTTP/1.1\r\nHost: b\r\n\r\n",
	"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
	"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n",
	"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	"GET / HTTP/1.0\r\nHost: a\r\n\r\n",
	"GET / http/1.1\r\nHost: a\r\n\r\n",
	"GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1 \r\nHost: a\r\n\r\n",
	"GET /\x00 HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX: caf\xc3\xa9\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX : 1\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\n: 1\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nPragma: no-cache\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
	"GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n",
	"G@T / HTTP/1.1\r\nHost: a\r\n\r\n",
	"get / HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTT",
	"GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("v", 9000) + "\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("v", 70<<10) + "\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\n" + strings.Repeat("X: 1\r\n", 150) + "\r\n",
	"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
}

// FuzzParse feeds the same bytes, cut into reads of the same sizes, to net/http's
// server and to the lean loop, each serving a handler that records every request,
// and requires the same requests (method, target, host, headers, body) and the same
// status codes back, or a 400 more (a refusal). The lean loop hands net/http what it does not take, so this
// holds its own parser to net/http's on what it does take. CI runs the seeds;
// `make fuzz` runs it longer.
func FuzzParse(f *testing.F) {
	for i, s := range parseSeeds {
		f.Add([]byte(s), uint8(i*7))
	}
	f.Fuzz(func(t *testing.T, input []byte, chunk uint8) {
		want, wantCodes := serveBytes(t, false, input, int(chunk))
		got, gotCodes := serveBytes(t, true, input, int(chunk))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("input %q:\nlean:     %+v\nnet/http: %+v", input, got, want)
		}
		// A refusal where net/http stays silent is allowed: net/http drops a
		// one-byte fragment after a request that its background read took, and
		// answers 400 to any longer one.
		refusedMore := slicesEqual(gotCodes, append(wantCodes[:len(wantCodes):len(wantCodes)], "HTTP/1.1 400"))
		if !slicesEqual(gotCodes, wantCodes) && !refusedMore {
			t.Fatalf("input %q: status codes %v, net/http's %v", input, gotCodes, wantCodes)
		}
	})
}

// seen is what a handler saw of a request.
type seen struct {
	Method, RequestURI, URL, Proto, Host, Body string
	Header                                     http.Header
	ContentLength                              int64
	Close                                      bool
	TransferEncoding                           []string
}

// serveBytes serves input on one connection, with net/http's server or the lean
// loop, and returns the requests the handler saw and the status codes written.
func serveBytes(t *testing.T, lean bool, input []byte, chunk int) ([]seen, []string) {
	var mu sync.Mutex
	var requests []seen
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		requests = append(requests, seen{Method: r.Method, RequestURI: r.RequestURI, URL: r.URL.String(), Proto: r.Proto,
			Host: r.Host, Body: string(body), Header: r.Header, ContentLength: r.ContentLength, Close: r.Close,
			TransferEncoding: r.TransferEncoding})
		mu.Unlock()
		io.WriteString(w, "ok")
	})
	c := &scriptedConn{input: input, chunk: chunk%64 + 1, closed: make(chan struct{})}
	ln := &oneConnListener{conn: c, done: make(chan struct{})}
	srv := &http.Server{Handler: handler, ErrorLog: discardLog}
	served := make(chan struct{})
	var shutdown func()
	if lean {
		s := &Server{Fallback: srv}
		go func() { s.Serve(ln); close(served) }()
		shutdown = func() { s.Shutdown(context.Background()) }
	} else {
		go func() { srv.Serve(ln); close(served) }()
		shutdown = func() { srv.Shutdown(context.Background()) }
	}
	select {
	case <-c.closed:
	case <-time.After(10 * time.Second):
		t.Fatalf("input %q: the connection was not closed", input)
	}
	shutdown()
	<-served
	mu.Lock()
	defer mu.Unlock()
	return requests, statusCodes.FindAllString(c.output(), -1)
}

var statusCodes = regexp.MustCompile(`HTTP/1\.1 \d\d\d`)

func slicesEqual(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

// scriptedConn reads input chunk bytes at a time, then EOF, and keeps what is
// written.
type scriptedConn struct {
	mu        sync.Mutex
	input     []byte
	chunk     int
	out       bytes.Buffer
	closed    chan struct{}
	closeOnce sync.Once
	deadline  time.Time
}

func (c *scriptedConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.deadline.IsZero() && time.Now().After(c.deadline) {
		return 0, timeoutError{}
	}
	if len(c.input) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.chunk)], c.input)
	c.input = c.input[n:]
	return n, nil
}

func (c *scriptedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(p)
}

func (c *scriptedConn) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

func (c *scriptedConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (c *scriptedConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return nil
}

func (c *scriptedConn) SetDeadline(t time.Time) error    { return c.SetReadDeadline(t) }
func (c *scriptedConn) SetWriteDeadline(time.Time) error { return nil }
func (c *scriptedConn) LocalAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}
}
func (c *scriptedConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 40000}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// oneConnListener accepts its connection once, then waits for Close.
type oneConnListener struct {
	conn  net.Conn
	taken bool
	done  chan struct{}
	once  sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	if !l.taken {
		l.taken = true
		return l.conn, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }

var discardLog = log.New(io.Discard, "", 0)
