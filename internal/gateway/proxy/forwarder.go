package proxy

import (
	"bufio"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"time"
)

// forwarder is the reverse proxy both listeners share, and with it the pool of
// upstream connections. A request comes in by one of two doors: ReverseProxy's
// ServeHTTP, whose hooks are rewrite, received and failed, or, for the requests that
// direct (direct.go) lets through, forwardDirect. Both note the answer in receivedBy
// and report a failure with failed; the file follows them in that order.
type forwarder struct {
	httputil.ReverseProxy
	// upstream is ReverseProxy's Transport, which the direct path uses itself.
	upstream *upstream
	metrics  *Metrics
}

func newForwarder(opts Config, m *Metrics) *forwarder {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		// The deadline ends the dial only; an established connection outlives it.
		ctx, cancel := context.WithTimeout(ctx, opts.DialTimeout)
		defer cancel()
		return opts.DialContext(ctx, network, addr)
	}
	f := &forwarder{metrics: m, upstream: &upstream{
		fallback:    newFallbackTransport(opts, dial),
		h2c:         newH2CTransport(opts, dial),
		dial:        dial,
		idleTimeout: opts.IdleTimeout,
	}}
	f.ReverseProxy = httputil.ReverseProxy{
		Rewrite:        f.rewrite,
		ModifyResponse: f.received,
		ErrorHandler:   f.failed,
		BufferPool:     newBufferPool(),
		Transport:      f.upstream,
	}
	return f
}

func newFallbackTransport(opts Config, dial func(context.Context, string, string) (net.Conn, error)) *http.Transport {
	return &http.Transport{
		// Never an environment proxy: endpoints are pod addresses.
		Proxy:       nil,
		DialContext: dial,
		// The default of 2 idle connections per endpoint makes every burst beyond
		// that pay a TCP handshake.
		MaxIdleConnsPerHost: maxIdlePerAddr,
		IdleConnTimeout:     opts.IdleTimeout,
		// No ResponseHeaderTimeout: the revision timeouts differ per revision, and
		// each request's timer enforces them.
		// Pass the client's Accept-Encoding through instead of negotiating gzip
		// and decompressing on the client's behalf.
		DisableCompression:    true,
		ExpectContinueTimeout: time.Second,
	}
}

// newH2CTransport speaks HTTP/2 without TLS, with prior knowledge, to pods whose
// port says h2c: net/http's own HTTP/2, many streams over one connection per pod.
func newH2CTransport(opts Config, dial func(context.Context, string, string) (net.Conn, error)) *http.Transport {
	t := &http.Transport{
		Proxy:              nil,
		DialContext:        dial,
		IdleConnTimeout:    opts.IdleTimeout,
		DisableCompression: true,
		Protocols:          new(http.Protocols),
	}
	t.Protocols.SetUnencryptedHTTP2(true)
	return t
}

func (f *forwarder) rewrite(pr *httputil.ProxyRequest) {
	rr := pr.In.Context().Value(routedRequestKey{}).(*routedRequest)
	pr.Out.URL.Scheme = "http"
	pr.Out.URL.Host = rr.target.Addr
	if rr.route.RewriteHost != "" {
		pr.Out.Host = rr.route.RewriteHost
	}
	// The gateway is the edge: Rewrite has dropped any X-Forwarded-* the client sent,
	// and these are set from what the gateway itself saw.
	pr.SetXForwarded()
	clientIP, _, _ := net.SplitHostPort(pr.In.RemoteAddr)
	pr.Out.Header.Set("Forwarded", string(appendForwarded(nil, clientIP, pr.In.Host, pr.Out.Header.Get("X-Forwarded-Proto"))))
	for _, h := range rr.route.AppendHeaders {
		pr.Out.Header.Set(h.Name, h.Value)
	}
	for _, h := range rr.split.AppendHeaders {
		pr.Out.Header.Set(h.Name, h.Value)
	}
	if rr.timer.limits.Idle > 0 && pr.Out.Body != nil && pr.Out.Body != http.NoBody {
		pr.Out.Body = &activeBody{ReadCloser: pr.Out.Body, rt: &rr.timer}
	}
	rr.sent = time.Now()
}

// appendForwarded appends RFC 7239's Forwarded header value for what the gateway saw,
// `for=<client>;host=<host>;proto=<http|https>` (an IPv6 client quoted in brackets),
// as Knative's queue-proxy makes it from the X-Forwarded-* headers: the runtime
// contract says a container MUST get it, and Ferry has no queue-proxy. It appends so
// that the direct path writes it into its buffer without an allocation.
func appendForwarded(b []byte, clientIP, host, proto string) []byte {
	if clientIP != "" {
		b = append(b, "for="...)
		if strings.Contains(clientIP, ":") {
			b = append(b, `"[`...)
			b = append(b, clientIP...)
			b = append(b, `]"`...)
		} else {
			b = append(b, clientIP...)
		}
		b = append(b, ';')
	}
	b = append(b, "host="...)
	b = append(b, host...)
	b = append(b, ";proto="...)
	return append(b, proto...)
}

func (f *forwarder) received(res *http.Response) error {
	f.receivedBy(res.Request.Context().Value(routedRequestKey{}).(*routedRequest), res)
	return nil
}

// forwardDirect forwards r to rr's pod on the direct path and copies the answer
// back, with ReverseProxy's handling of the response (ServeHTTP after RoundTrip).
// ctx is r's context with rr's timer and rr.
func (f *forwarder) forwardDirect(ctx context.Context, w http.ResponseWriter, r *http.Request, rr *routedRequest) {
	rr.sent = time.Now()
	h := w.Header()
	res, err := f.upstream.send(ctx, rr.target.Addr, r, true, func(bw *bufio.Writer) error {
		return writeRequest(bw, r, rr)
	}, h)
	if err != nil {
		f.failed(w, r.WithContext(ctx), err)
		return
	}
	f.receivedBy(rr, res)
	// http.ReadResponse keeps the Trailer header as res.Trailer's keys.
	announcedTrailers := len(res.Trailer)
	if announcedTrailers > 0 {
		trailerKeys := make([]string, 0, len(res.Trailer))
		for k := range res.Trailer {
			trailerKeys = append(trailerKeys, k)
		}
		h.Add("Trailer", strings.Join(trailerKeys, ", "))
	}
	w.WriteHeader(res.StatusCode)
	if err := f.copyResponse(w, res); err != nil {
		defer res.Body.Close()
		// The answer is under way: all that is left is to abort it, as ReverseProxy
		// does when it runs under an http.Server.
		if r.Context().Value(http.ServerContextKey) == nil {
			return
		}
		panic(http.ErrAbortHandler)
	}
	res.Body.Close() // now, to populate res.Trailer
	if len(res.Trailer) > 0 {
		// Chunked, so that net/http does not compute a length and drop the trailers.
		http.NewResponseController(w).Flush()
	}
	if len(res.Trailer) == announcedTrailers {
		for k, vv := range res.Trailer {
			for _, v := range vv {
				h.Add(k, v)
			}
		}
		return
	}
	for k, vv := range res.Trailer {
		k = http.TrailerPrefix + k
		for _, v := range vv {
			h.Add(k, v)
		}
	}
}

// copyResponse copies the body with a pooled buffer, flushing after every write when
// ReverseProxy would flush immediately: server-sent events and bodies of unknown
// length (its FlushInterval is 0 here, no flushing otherwise).
func (f *forwarder) copyResponse(w http.ResponseWriter, res *http.Response) error {
	var flush func() error
	if res.ContentLength == -1 || eventStream(res.Header.Get("Content-Type")) {
		flush = http.NewResponseController(w).Flush
		// ReverseProxy's first flush, of the headers, comes before any body.
		flush()
	}
	buf := f.BufferPool.Get()
	defer f.BufferPool.Put(buf)
	for {
		nr, rerr := res.Body.Read(buf)
		if rerr != nil && rerr != io.EOF && rerr != context.Canceled {
			log.Printf("httputil: ReverseProxy read error during body copy: %v", rerr)
		}
		if nr > 0 {
			nw, werr := w.Write(buf[:nr])
			if flush != nil {
				flush()
			}
			if werr != nil {
				return werr
			}
			if nr != nw {
				return io.ErrShortWrite
			}
		}
		if rerr != nil {
			if rerr == io.EOF {
				return nil
			}
			return rerr
		}
	}
}

// eventStream reports whether mime.ParseMediaType(ct) would return
// "text/event-stream", as ReverseProxy checks, without its allocations: that media
// type is 17 ASCII bytes, so an exact length makes EqualFold an ASCII comparison.
func eventStream(ct string) bool {
	base, _, _ := strings.Cut(ct, ";")
	base = strings.TrimSpace(base)
	return len(base) == len("text/event-stream") && strings.EqualFold(base, "text/event-stream")
}

// removeHopByHop removes hop-by-hop headers from a response, as ReverseProxy does.
func removeHopByHop(h http.Header) {
	for _, f := range h["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			if sf = textproto.TrimString(sf); sf != "" {
				h.Del(sf)
			}
		}
	}
	for _, f := range hopHeaders {
		delete(h, f) // Header.Del without canonicalizing names that are canonical
	}
}

// receivedBy notes the response headers' arrival for rr and wraps the body for the
// idle timeout. A 101 does not start the response as the timeouts count it: an
// upgraded connection stays bounded by timeoutSeconds and responseStartTimeoutSeconds
// from its arrival, as in Knative (timeouts.go).
func (f *forwarder) receivedBy(rr *routedRequest, res *http.Response) {
	rr.code = res.StatusCode
	if res.StatusCode == http.StatusSwitchingProtocols {
		rr.timer.touch()
	} else {
		rr.timer.responseStarted()
	}
	if rr.timer.limits.Idle > 0 {
		if rwc, ok := res.Body.(io.ReadWriteCloser); ok && res.StatusCode == http.StatusSwitchingProtocols {
			res.Body = &activeConn{ReadWriteCloser: rwc, rt: &rr.timer}
		} else {
			res.Body = &activeBody{ReadCloser: res.Body, rt: &rr.timer}
		}
	}
	f.metrics.observeUpstream(rr.split.Service, rr.revision, time.Since(rr.sent).Seconds())
}

func (f *forwarder) failed(w http.ResponseWriter, r *http.Request, err error) {
	rr := r.Context().Value(routedRequestKey{}).(*routedRequest)
	switch kind := rr.timer.fired(); {
	case kind != running:
		rr.code = http.StatusGatewayTimeout
		writeError(w, rr.code, "ferry: revision %s did not answer in time: %s (%s) passed (pod %s)\n",
			rr.revision, timeoutNames[kind], rr.timer.limit(kind), rr.target.IP)
	case r.Context().Err() != nil:
		// The client went away; nobody reads an answer. 499 is nginx's code for it.
		rr.code = 499
	case grpcDeadlinePassed(r.Header.Get("Grpc-Timeout"), rr.start, time.Now()):
		// A gRPC server ends a call at the deadline its client sent (grpc-timeout) by
		// resetting the stream, often a moment before the client's own timer fires:
		// the client gets what the pod would have said, not a 502 it cannot read.
		rr.code = http.StatusOK
		h := w.Header()
		h.Set("Content-Type", "application/grpc")
		h.Set("Grpc-Status", "4") // DEADLINE_EXCEEDED
		h.Set("Grpc-Message", "ferry: revision "+rr.revision+" ended the call at its deadline")
		w.WriteHeader(http.StatusOK)
	default:
		rr.code = http.StatusBadGateway
		writeError(w, rr.code, "ferry: revision %s: upstream %s failed: %v\n", rr.revision, rr.target.Addr, err)
	}
}

// grpcTimeoutUnits are the units of gRPC's grpc-timeout header.
var grpcTimeoutUnits = map[byte]time.Duration{'H': time.Hour, 'M': time.Minute, 'S': time.Second,
	'm': time.Millisecond, 'u': time.Microsecond, 'n': time.Nanosecond}

// grpcDeadlinePassed says a gRPC call with the grpc-timeout header timeout, sent at
// start, is past its deadline at now. The header is at most 8 digits and a unit.
func grpcDeadlinePassed(timeout string, start, now time.Time) bool {
	if len(timeout) < 2 || len(timeout) > 9 {
		return false
	}
	n, err := strconv.ParseInt(timeout[:len(timeout)-1], 10, 64)
	if err != nil || n < 0 {
		return false
	}
	unit, ok := grpcTimeoutUnits[timeout[len(timeout)-1]]
	if !ok {
		return false
	}
	return !now.Before(start.Add(time.Duration(n) * unit))
}

// bufferPool recycles the ReverseProxy's copy buffers, which would otherwise be
// allocated per request.
type bufferPool struct{ pool sync.Pool }

func newBufferPool() *bufferPool {
	return &bufferPool{pool: sync.Pool{New: func() any { return new([32 << 10]byte) }}}
}

func (b *bufferPool) Get() []byte { return b.pool.Get().(*[32 << 10]byte)[:] }

func (b *bufferPool) Put(buf []byte) {
	if len(buf) == 32<<10 {
		b.pool.Put((*[32 << 10]byte)(buf))
	}
}
