package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
	"github.com/ferry-serving/ferry/internal/gateway/routing"
)

// seen is what a backend received.
type seen struct {
	method, uri, host, proto string
	header                   http.Header
}

// twoWays forwards to one backend through the direct path and through ReverseProxy,
// with the same route and split, so that a test sends the same request both ways.
type twoWays struct {
	direct, proxied *httptest.Server
	backend         *httptest.Server
	seen            chan seen
}

func newTwoWays(t *testing.T, rt *routing.Route, sp *routing.Split, answer http.HandlerFunc) *twoWays {
	t.Helper()
	tw := &twoWays{seen: make(chan seen, 1)}
	tw.backend = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case tw.seen <- seen{r.Method, r.RequestURI, r.Host, r.Proto, r.Header.Clone()}:
		default:
		}
		answer(w, r)
	}))
	t.Cleanup(tw.backend.Close)
	f := newForwarder(Config{DialTimeout: 2 * time.Second, DialContext: (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext, IdleTimeout: 90 * time.Second}, NewMetrics())
	if sp.Service == nil {
		sp.Service = &backends.Service{Key: gatewaytest.Key("svc")}
	}
	handler := func(viaDirect bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			rr := &routedRequest{route: rt, split: sp, revision: "rev-1", start: start,
				target: &backends.Target{Addr: tw.backend.Listener.Addr().String(), IP: "127.0.0.1"}}
			rr.timer.limits, rr.timer.start = backends.Timeouts{Total: 10 * time.Second}, start
			rr.begin(r.Context())
			var ctx context.Context = rr
			defer func() {
				rr.timer.stop()
				rr.Cancel()
			}()
			if !viaDirect {
				f.ServeHTTP(w, r.WithContext(ctx))
				return
			}
			if !direct(r, rr) {
				t.Errorf("%s %s: not on the direct path", r.Method, r.RequestURI)
			}
			f.forwardDirect(ctx, w, r, rr)
		}
	}
	tw.direct = httptest.NewServer(handler(true))
	tw.proxied = httptest.NewServer(handler(false))
	t.Cleanup(tw.direct.Close)
	t.Cleanup(tw.proxied.Close)
	return tw
}

// received is what a client received.
type received struct {
	status  int
	header  http.Header
	body    string
	trailer http.Header
}

// send writes raw, a request head, to srv and reads the answer and what the backend saw.
func (tw *twoWays) send(t *testing.T, srv *httptest.Server, raw string) (received, seen) {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	method, _, _ := strings.Cut(raw, " ")
	res, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	res.Header.Del("Date")
	var s seen
	select {
	case s = <-tw.seen:
	case <-time.After(5 * time.Second):
		t.Fatal("the backend saw no request")
	}
	return received{res.StatusCode, res.Header, string(body), res.Trailer}, s
}

func TestDirectRequestHeaders(t *testing.T) {
	rt := &routing.Route{AppendHeaders: []routing.Header{{Name: "K-Original-Host", Value: "a.example.com"}, {Name: "X-Route", Value: "route"}, {Name: "X-Both", Value: "route"}}}
	sp := &routing.Split{AppendHeaders: []routing.Header{{Name: "X-Both", Value: "split"}, {Name: "X-Split", Value: "split"}}}
	echoBack := func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") }
	tw := newTwoWays(t, rt, sp, echoBack)
	rewritten := newTwoWays(t, &routing.Route{RewriteHost: "b.ns.svc.cluster.local"}, &routing.Split{}, echoBack)
	overrides := newTwoWays(t, &routing.Route{AppendHeaders: []routing.Header{
		{Name: "X-Forwarded-Host", Value: "set"}, {Name: "User-Agent", Value: "route-agent"}, {Name: "Te", Value: "gzip"}, {Name: "Host", Value: "no"}, {Name: "Content-Length", Value: "9"},
	}}, &routing.Split{}, echoBack)

	for _, tc := range []struct {
		name string
		tw   *twoWays
		raw  string
		// want and absent check the direct path's request on their own, besides the
		// comparison with ReverseProxy's.
		want   map[string]string
		absent []string
		uri    string
	}{{
		name: "plain",
		tw:   tw,
		raw:  "GET /a/b?q=1&r=%20 HTTP/1.1\r\nHost: a.example.com\r\nUser-Agent: curl/8\r\nAccept: */*\r\nX-Multi: 1\r\nX-Multi: 2\r\n\r\n",
		want: map[string]string{"User-Agent": "curl/8", "X-Forwarded-Host": "a.example.com", "X-Forwarded-Proto": "http",
			"X-Forwarded-For": "127.0.0.1", "X-Route": "route", "X-Split": "split", "X-Both": "split", "K-Original-Host": "a.example.com"},
		uri: "/a/b?q=1&r=%20",
	}, {
		name: "hop-by-hop",
		tw:   tw,
		raw: "GET / HTTP/1.1\r\nHost: a.example.com\r\nConnection: x-hop, keep-alive\r\nConnection: X-Other\r\nX-Hop: 1\r\nX-Other: 2\r\n" +
			"Keep-Alive: 300\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\nProxy-Authenticate: x\r\n" +
			"Te: trailers, deflate\r\nTrailer: X-T\r\nX-Kept: yes\r\n\r\n",
		want:   map[string]string{"Te": "trailers", "X-Kept": "yes"},
		absent: []string{"Connection", "X-Hop", "X-Other", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate", "Trailer", "Transfer-Encoding", "Upgrade"},
	}, {
		name:   "TE without trailers",
		tw:     tw,
		raw:    "GET / HTTP/1.1\r\nHost: a.example.com\r\nTe: deflate\r\n\r\n",
		absent: []string{"Te"},
	}, {
		name: "X-Forwarded spoofed",
		tw:   tw,
		raw: "GET / HTTP/1.1\r\nHost: a.example.com\r\nX-Forwarded-For: 6.6.6.6\r\nX-Forwarded-Host: evil\r\n" +
			"X-Forwarded-Proto: https\r\nForwarded: for=6.6.6.6\r\n\r\n",
		// The client's Forwarded goes; the gateway's says what it saw (the runtime
		// contract's MUST, which Knative's queue-proxy fills in).
		want: map[string]string{"X-Forwarded-For": "127.0.0.1", "X-Forwarded-Host": "a.example.com", "X-Forwarded-Proto": "http",
			"Forwarded": "for=127.0.0.1;host=a.example.com;proto=http"},
	}, {
		name:   "no User-Agent",
		tw:     tw,
		raw:    "GET / HTTP/1.1\r\nHost: a.example.com\r\n\r\n",
		absent: []string{"User-Agent"},
	}, {
		name:   "empty User-Agent",
		tw:     tw,
		raw:    "GET / HTTP/1.1\r\nHost: a.example.com\r\nUser-Agent: \r\n\r\n",
		absent: []string{"User-Agent"},
	}, {
		name: "two User-Agents",
		tw:   tw,
		raw:  "GET / HTTP/1.1\r\nHost: a.example.com\r\nUser-Agent: one\r\nUser-Agent: two\r\n\r\n",
		want: map[string]string{"User-Agent": "one"},
	}, {
		name:   "User-Agent named by Connection",
		tw:     tw,
		raw:    "GET / HTTP/1.1\r\nHost: a.example.com\r\nConnection: user-agent\r\nUser-Agent: one\r\n\r\n",
		absent: []string{"User-Agent"},
	}, {
		name:   "client Connection: close",
		tw:     tw,
		raw:    "GET / HTTP/1.1\r\nHost: a.example.com\r\nConnection: close\r\n\r\n",
		absent: []string{"Connection"},
	}, {
		name:   "HEAD",
		tw:     tw,
		raw:    "HEAD /h HTTP/1.1\r\nHost: a.example.com\r\n\r\n",
		absent: []string{"Content-Length"},
	}, {
		name: "OPTIONS",
		tw:   tw,
		raw:  "OPTIONS /o HTTP/1.1\r\nHost: a.example.com\r\n\r\n",
	}, {
		name: "HTTP/1.0",
		tw:   tw,
		raw:  "GET / HTTP/1.0\r\nHost: a.example.com\r\n\r\n",
	}, {
		name: "rewriteHost",
		tw:   rewritten,
		raw:  "GET / HTTP/1.1\r\nHost: a.example.com\r\n\r\n",
		want: map[string]string{"X-Forwarded-Host": "a.example.com"},
	}, {
		name:   "appendHeaders override",
		tw:     overrides,
		raw:    "GET / HTTP/1.1\r\nHost: a.example.com\r\nUser-Agent: client\r\nTe: trailers\r\n\r\n",
		want:   map[string]string{"X-Forwarded-Host": "set", "User-Agent": "route-agent", "Te": "gzip"},
		absent: []string{"Content-Length"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			gotAnswer, got := tc.tw.send(t, tc.tw.direct, tc.raw)
			wantAnswer, want := tc.tw.send(t, tc.tw.proxied, tc.raw)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the backend saw\n%+v\non the direct path, and through ReverseProxy\n%+v", got, want)
			}
			if !reflect.DeepEqual(gotAnswer, wantAnswer) {
				t.Errorf("the client got\n%+v\non the direct path, and through ReverseProxy\n%+v", gotAnswer, wantAnswer)
			}
			for name, value := range tc.want {
				if v := got.header[name]; len(v) != 1 || v[0] != value {
					t.Errorf("%s: %q, want %q", name, v, value)
				}
			}
			for _, name := range tc.absent {
				if v, ok := got.header[name]; ok {
					t.Errorf("%s: %q, want none", name, v)
				}
			}
			if tc.uri != "" && got.uri != tc.uri {
				t.Errorf("request URI %q, want %q", got.uri, tc.uri)
			}
		})
	}
}

// TestDirectResponses compares the answers the client gets both ways.
func TestDirectResponses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		answer http.HandlerFunc
	}{{
		name: "hop-by-hop in the response",
		answer: func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Connection", "X-Bar")
			h.Set("X-Bar", "1")
			h.Set("Keep-Alive", "timeout=5")
			h.Set("Proxy-Authenticate", "Basic")
			h.Set("Upgrade", "h2c")
			h["X-Multi"] = []string{"1", "2"}
			io.WriteString(w, "body\n")
		},
	}, {
		name:   "204",
		answer: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) },
	}, {
		name: "304",
		answer: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Etag", `"x"`)
			w.WriteHeader(http.StatusNotModified)
		},
	}, {
		name:   "HEAD",
		method: http.MethodHead,
		answer: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1234")
		},
	}, {
		name: "chunked with trailers",
		answer: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "X-Sum")
			io.WriteString(w, "part one\n")
			w.(http.Flusher).Flush()
			io.WriteString(w, "part two\n")
			w.Header().Set("X-Sum", "42")
			w.Header().Set(http.TrailerPrefix+"X-Late", "late")
		},
	}, {
		name: "large",
		answer: func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, strings.Repeat("0123456789", 20000))
		},
	}, {
		name: "error status",
		answer: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "nope", http.StatusServiceUnavailable)
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tw := newTwoWays(t, &routing.Route{}, &routing.Split{}, tc.answer)
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			raw := method + " / HTTP/1.1\r\nHost: a.example.com\r\n\r\n"
			got, _ := tw.send(t, tw.direct, raw)
			want, _ := tw.send(t, tw.proxied, raw)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the client got\n%+v\non the direct path, and through ReverseProxy\n%+v", got, want)
			}
		})
	}
}

func TestDirectSelection(t *testing.T) {
	rr := &routedRequest{route: &routing.Route{}, split: &routing.Split{}, target: &backends.Target{}}
	for _, tc := range []struct {
		raw  string
		h2c  bool
		want bool
	}{
		{raw: "GET /?a=1&b=%41 HTTP/1.1\r\nHost: a\r\n\r\n", want: !reencodeQueries},
		{raw: "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n", want: true},
		{raw: "OPTIONS / HTTP/1.1\r\nHost: a\r\n\r\n", want: true},
		{raw: "GET / HTTP/1.1\r\nHost: a\r\n\r\n", h2c: true},
		{raw: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx"},
		{raw: "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx"},
		{raw: "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{raw: "GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"},
		{raw: "GET /?a=1;b=2 HTTP/1.1\r\nHost: a\r\n\r\n"},
		{raw: "GET /?a=%zz HTTP/1.1\r\nHost: a\r\n\r\n"},
		{raw: "GET / HTTP/1.1\r\nHost: [fe80::1%25eth0]\r\n\r\n"},
	} {
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(tc.raw)))
		if err != nil {
			t.Fatal(err)
		}
		rr.target.H2C = tc.h2c
		if got := direct(r, rr); got != tc.want {
			t.Errorf("%q (h2c %v): direct %v, want %v", tc.raw, tc.h2c, got, tc.want)
		}
	}
}

// TestDirectEventStream checks that each event reaches the client as the pod writes
// it, of known length or not, and that any body of unknown length is flushed as it
// comes too.
func TestDirectEventStream(t *testing.T) {
	for _, tc := range []struct{ contentType, length string }{
		{"text/event-stream; charset=utf-8", "27"},
		{" Text/Event-Stream", ""},
		{"application/octet-stream", ""},
	} {
		t.Run(tc.contentType+" "+tc.length, func(t *testing.T) {
			next := make(chan struct{})
			tw := newTwoWays(t, &routing.Route{}, &routing.Split{}, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				if tc.length != "" {
					w.Header().Set("Content-Length", tc.length)
				}
				for i := range 3 {
					fmt.Fprintf(w, "data: %d\n\n", i)
					w.(http.Flusher).Flush()
					<-next
				}
			})
			res, err := http.Get(tw.direct.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			br := bufio.NewReader(res.Body)
			for i := range 3 {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if want := fmt.Sprintf("data: %d\n", i); line != want {
					t.Fatalf("read %q, want %q", line, want)
				}
				br.ReadString('\n')
				next <- struct{}{}
			}
		})
	}
}

// TestDirectBackendBreaksOff checks that a body cut off by the pod is cut off for the
// client too, not ended as if complete.
func TestDirectBackendBreaksOff(t *testing.T) {
	tw := newTwoWays(t, &routing.Route{}, &routing.Split{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		io.WriteString(w, "only ten b")
		w.(http.Flusher).Flush()
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.Close()
		}
	})
	// The gateway's server buffers the short start of the body, so the client sees
	// the break before the headers, as it does through ReverseProxy.
	for _, srv := range []*httptest.Server{tw.direct, tw.proxied} {
		res, err := http.Get(srv.URL)
		if err == nil {
			var body []byte
			body, err = io.ReadAll(res.Body)
			res.Body.Close()
			if err == nil {
				t.Errorf("read %q and no error, want the break", body)
			}
		}
	}
}

// TestDirectClientCancel checks that a client going away closes the connection to the
// pod, which sees its request's context end.
func TestDirectClientCancel(t *testing.T) {
	ended := make(chan struct{})
	tw := newTwoWays(t, &routing.Route{}, &routing.Split{}, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "started\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(ended)
	})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tw.direct.URL, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(res.Body).ReadString('\n')
	if err != nil || line != "started\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	cancel()
	res.Body.Close()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the pod's request did not end with the client's")
	}
}
