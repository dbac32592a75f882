package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/ferry-serving/ferry/internal/gateway/requestctx"
)

// upstream is the forwarder's round tripper. Replayable requests without a body (GET,
// HEAD, OPTIONS: most traffic) are written and read on the handler's own goroutine over
// a pooled keep-alive connection. http.Transport, which passes every request through
// two more goroutines per connection, takes the rest: bodies, upgrades, other
// methods. On a small machine the goroutine handoffs cost as much as the proxying
// (docs/gateway.md). Pods that speak h2c get everything but upgrades over h2c. The
// direct path (direct.go) uses the pooled exchange itself, through send.
// Timeouts are the request's timer's, which cancels the request's context.
type upstream struct {
	fallback    *http.Transport
	h2c         *http.Transport
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	idleTimeout time.Duration

	mu        sync.Mutex
	idle      map[string][]*upstreamConn // by address, most recently used last
	lastSweep time.Time
}

// maxIdlePerAddr bounds the idle connections kept per endpoint.
const maxIdlePerAddr = 256

type upstreamConn struct {
	net.Conn
	addr      string
	br        *bufio.Reader
	bw        *bufio.Writer
	idleSince time.Time
	// abort ends the exchange under way: made once, registered on every request's
	// context in turn.
	abort func()
}

func (u *upstream) RoundTrip(req *http.Request) (*http.Response, error) {
	if rr, ok := req.Context().Value(routedRequestKey{}).(*routedRequest); ok && rr.target.H2C &&
		req.Header.Get("Upgrade") == "" {
		// An upgrade is HTTP/1.1's; a pod serving h2c with net/http takes both.
		return u.h2c.RoundTrip(req)
	}
	if !fastPath(req) {
		return u.fallback.RoundTrip(req)
	}
	return u.send(req.Context(), req.URL.Host, req, !req.Close, func(bw *bufio.Writer) error { return req.Write(bw) }, nil)
}

// send writes a replayable request with write over a pooled connection to addr and
// reads the response headers; req gives the method to ReadResponse. The connection
// goes back to the pool after the body if reusable and the pod keeps it alive. With
// into (the client's answer's header), the answer's fields are added to into less
// the hop-by-hop ones, as ReverseProxy adds them, and res.Header is into.
func (u *upstream) send(ctx context.Context, addr string, req *http.Request, reusable bool, write func(*bufio.Writer) error, into http.Header) (*http.Response, error) {
	for {
		c, reused, err := u.conn(ctx, addr)
		if err != nil {
			return nil, err
		}
		res, err := u.exchange(ctx, c, req, reusable, write, into)
		if err == nil {
			return res, nil
		}
		c.Close()
		// A kept-alive connection that the backend closed while it sat idle fails
		// before any answer; the request is replayable, so a fresh connection gets it.
		if !reused || !closedWhileIdle(err) || ctx.Err() != nil {
			return nil, err
		}
	}
}

// fastPath selects the requests that need neither a concurrent body writer nor
// the upgrade machinery, and that may be retried.
func fastPath(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		return false
	}
	return (req.Body == nil || req.Body == http.NoBody) && req.ContentLength == 0 &&
		len(req.TransferEncoding) == 0 && req.Header.Get("Upgrade") == "" && req.URL.Scheme == "http"
}

// closedWhileIdle recognizes a connection that failed before any byte of an answer:
// a write error, or EOF or a reset on the first read.
func closedWhileIdle(err error) bool {
	return err == io.EOF || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// conn returns an idle connection to addr, or dials one.
func (u *upstream) conn(ctx context.Context, addr string) (c *upstreamConn, reused bool, err error) {
	u.mu.Lock()
	for conns := u.idle[addr]; len(conns) > 0; conns = u.idle[addr] {
		c = conns[len(conns)-1]
		conns[len(conns)-1] = nil
		u.setIdleLocked(addr, conns[:len(conns)-1])
		if time.Since(c.idleSince) < u.idleTimeout {
			u.mu.Unlock()
			return c, true, nil
		}
		c.Close()
	}
	u.mu.Unlock()
	conn, err := u.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, false, err
	}
	c = &upstreamConn{Conn: conn, addr: addr, br: bufio.NewReader(conn), bw: bufio.NewWriter(conn)}
	c.abort = func() { c.SetDeadline(time.Unix(1, 0)) }
	return c, false, nil
}

// put keeps c for the next request to its address.
func (u *upstream) put(c *upstreamConn) {
	now := time.Now()
	c.idleSince = now
	u.mu.Lock()
	defer u.mu.Unlock()
	if now.Sub(u.lastSweep) > u.idleTimeout {
		u.sweepLocked(now)
	}
	if len(u.idle[c.addr]) >= maxIdlePerAddr {
		c.Close()
		return
	}
	u.setIdleLocked(c.addr, append(u.idle[c.addr], c))
}

// sweepLocked closes the connections idle for longer than idleTimeout, such as those
// to pods that are gone. It runs from put, at most once per idleTimeout, so that
// keeping a connection costs no timer.
func (u *upstream) sweepLocked(now time.Time) {
	u.lastSweep = now
	for addr, conns := range u.idle {
		fresh := conns[:0]
		for _, c := range conns {
			if now.Sub(c.idleSince) < u.idleTimeout {
				fresh = append(fresh, c)
			} else {
				c.Close()
			}
		}
		clear(conns[len(fresh):])
		u.setIdleLocked(addr, fresh)
	}
}

func (u *upstream) setIdleLocked(addr string, conns []*upstreamConn) {
	if len(conns) == 0 {
		delete(u.idle, addr)
		return
	}
	if u.idle == nil {
		u.idle = map[string][]*upstreamConn{}
	}
	u.idle[addr] = conns
}

// exchange writes req and reads the response headers; the body streams from c until
// the caller closes it.
func (u *upstream) exchange(ctx context.Context, c *upstreamConn, req *http.Request, reusable bool, write func(*bufio.Writer) error, into http.Header) (*http.Response, error) {
	// A client that goes away aborts the exchange, body included.
	stop := requestctx.AfterFunc(ctx, c.abort)
	res, err := u.writeAndRead(c, req, write, into)
	if err != nil {
		stop()
		return nil, err
	}
	body := &upstreamBody{ReadCloser: res.Body, conn: c, upstream: u, stop: stop,
		reusable: !res.Close && reusable, eof: res.Body == http.NoBody}
	res.Body = body
	return res, nil
}

func (u *upstream) writeAndRead(c *upstreamConn, req *http.Request, write func(*bufio.Writer) error, into http.Header) (*http.Response, error) {
	if err := write(c.bw); err != nil {
		return nil, err
	}
	if err := c.bw.Flush(); err != nil {
		return nil, err
	}
	// The first byte tells a backend that hung up on an idle connection (EOF before
	// any answer, which closedWhileIdle retries) from one that broke off its answer.
	if _, err := c.br.Peek(1); err != nil {
		return nil, err
	}
	for {
		res, merged, err := readResponse(c.br, req, into)
		if err != nil {
			return nil, err
		}
		switch {
		case res.StatusCode == http.StatusSwitchingProtocols:
			res.Body.Close()
			return nil, fmt.Errorf("upstream switched protocols without being asked")
		case res.StatusCode >= 100 && res.StatusCode < 200:
			// Informational answers (103 Early Hints) are not forwarded.
			continue
		}
		if into != nil && !merged {
			addAnswerHeader(into, res.Header)
			res.Header = into
		}
		return res, nil
	}
}

// addAnswerHeader adds the pod's answer's header to the client's, less the
// hop-by-hop fields, as ReverseProxy does value by value, without copying the values
// the answer no longer needs.
func addAnswerHeader(into, answer http.Header) {
	removeHopByHop(answer)
	for k, vv := range answer {
		if _, ok := into[k]; !ok && len(vv) > 0 {
			into[k] = vv
			continue
		}
		for _, v := range vv {
			into.Add(k, v)
		}
	}
}

// upstreamBody hands its connection back once the body was read to the end.
type upstreamBody struct {
	io.ReadCloser
	conn     *upstreamConn
	upstream *upstream
	stop     func() bool
	reusable bool
	eof      bool
	closed   bool
}

func (b *upstreamBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *upstreamBody) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	err := b.ReadCloser.Close()
	// stop reports false when the client's cancellation already poisoned the deadline.
	if b.stop() && b.eof && b.reusable && err == nil {
		b.upstream.put(b.conn)
		return nil
	}
	b.conn.Close()
	return err
}
