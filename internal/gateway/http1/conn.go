package http1

import (
	"bufio"
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-serving/ferry/internal/gateway/requestctx"
)

// readSize is what a connection reads at a time; leanHeadLimit bounds the head the
// lean loop parses (a larger one goes to net/http, which applies MaxHeaderBytes).
const (
	readSize      = 4 << 10
	leanHeadLimit = 8 << 10
)

// conn is one client connection on the lean loop. One goroutine reads, parses and
// answers, as fasthttp's server does: a second goroutine per connection that watched
// for the client going away (net/http's background read) cost a hand-off per request,
// 0.58x nginx against 0.73x without (docs/gateway.md). A request still running after
// watchDelay gets that watch (watch.go).
type conn struct {
	s        *Server
	rwc      net.Conn
	buf      []byte // read and not yet served
	deadline time.Time
	bw       *bufio.Writer
	res      response // reused: the handler has let go of it when it returns
	header   http.Header
	body     []byte // reused for response.pending
	base     context.Context
	remote   string
	idle     atomic.Bool // between requests, nothing buffered: Shutdown may close it

	mu   sync.Mutex
	dead bool                // the client's side is closed
	ctx  *requestctx.Context // the request's in flight
	watcher
}

func newConn(s *Server, rwc net.Conn) *conn {
	c := &conn{s: s, rwc: rwc, buf: make([]byte, 0, readSize), remote: rwc.RemoteAddr().String(),
		header: make(http.Header), body: make([]byte, 0, bufferBeforeCommit)}
	c.bw = bufio.NewWriterSize(connWriter{c}, readSize)
	c.watchTimer = time.AfterFunc(time.Hour, c.watch)
	c.watchTimer.Stop()
	ctx := context.WithValue(context.Background(), http.ServerContextKey, s.Fallback)
	c.base = context.WithValue(ctx, http.LocalAddrContextKey, rwc.LocalAddr())
	return c
}

// gone cancels the request in flight and those to come: the client cannot be
// answered any more.
func (c *conn) gone() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dead = true
	if c.ctx != nil {
		c.ctx.Cancel()
	}
}

// connWriter is the responses' way out; a failed write ends the request, as in
// net/http.
type connWriter struct{ c *conn }

func (w connWriter) Write(p []byte) (int, error) {
	n, err := w.c.rwc.Write(p)
	if err != nil {
		w.c.gone()
	}
	return n, err
}

func (c *conn) serve() {
	handedOver := false
	defer func() {
		if !handedOver {
			c.rwc.Close()
		}
		c.s.forget(c)
	}()
	srv := c.s.Fallback
	for {
		if c.s.closing.Load() {
			return
		}
		var req http.Request
		n, v := c.readHead(srv, &req)
		switch v {
		case closed:
			return
		case declined:
			handedOver = true
			c.handOver()
			return
		}
		if !c.serveOne(srv.Handler, &req, len(c.buf) > n) {
			return
		}
		c.consume(n)
	}
}

// readHead reads until the buffer starts with a complete head the lean loop takes,
// or one it declines, or the connection ends or times out.
func (c *conn) readHead(srv *http.Server, req *http.Request) (int, verdict) {
	inHead := false
	// Never more than net/http would take: it refuses a head over MaxHeaderBytes.
	limit := leanHeadLimit
	if srv.MaxHeaderBytes > 0 {
		limit = min(limit, srv.MaxHeaderBytes)
	}
	for {
		if len(c.buf) > 0 {
			if n, v := parseRequest(req, c.buf, limit); v != incomplete {
				return n, v
			}
			// A head in parts: from its first byte, ReadHeaderTimeout bounds it.
			if !inHead && srv.ReadHeaderTimeout > 0 {
				c.setReadDeadline(time.Now().Add(srv.ReadHeaderTimeout))
			}
			inHead = true
		} else {
			c.idle.Store(true)
			c.keepIdleDeadline(srv.IdleTimeout)
		}
		err := c.read()
		c.idle.Store(false)
		if err != nil {
			var ne net.Error
			if len(c.buf) == 0 || errors.As(err, &ne) && ne.Timeout() {
				return 0, closed
			}
			// A head cut short by the client's close: net/http says what it says
			// of that.
			return 0, declined
		}
	}
}

// read appends what the connection has to the buffer.
func (c *conn) read() error {
	if cap(c.buf)-len(c.buf) < readSize/4 {
		c.buf = slices.Grow(c.buf, readSize)
	}
	for {
		n, err := c.rwc.Read(c.buf[len(c.buf):cap(c.buf)])
		c.buf = c.buf[:len(c.buf)+n]
		if n > 0 {
			return nil // an error comes back on the next read
		}
		if err != nil {
			return err
		}
	}
}

// keepIdleDeadline keeps the read deadline between half of idle and idle away, so
// that most requests move no timer for it: a connection idle for longer than idle is
// closed, one idle for half of it may be.
func (c *conn) keepIdleDeadline(idle time.Duration) {
	if idle <= 0 {
		if !c.deadline.IsZero() {
			c.setReadDeadline(time.Time{})
		}
		return
	}
	now := time.Now()
	if left := c.deadline.Sub(now); c.deadline.IsZero() || left < idle/2 || left > idle {
		c.setReadDeadline(now.Add(idle))
	}
}

func (c *conn) setReadDeadline(t time.Time) {
	c.deadline = t
	c.rwc.SetReadDeadline(t)
}

// consume drops the n bytes of the request served.
func (c *conn) consume(n int) {
	rest := copy(c.buf, c.buf[n:])
	c.buf = c.buf[:rest]
}

// serveOne runs the handler for the request parsed into head and reports whether the
// connection stays open.
func (c *conn) serveOne(h http.Handler, head *http.Request, pipelined bool) (keep bool) {
	ctx := requestctx.New(c.base)
	c.mu.Lock()
	c.ctx = ctx
	if c.dead {
		ctx.Cancel()
	}
	c.mu.Unlock()
	if !pipelined {
		// Another request read already: the client is not watched (as in net/http).
		c.startWatch()
	}
	defer func() {
		c.stopWatch()
		c.mu.Lock()
		c.ctx = nil
		c.mu.Unlock()
		ctx.Cancel()
	}()
	r := head.WithContext(ctx)
	r.RemoteAddr = c.remote
	clear(c.header)
	c.res = response{c: c, req: r, header: c.header, contentLength: -1, pending: c.body[:0], closeAfter: r.Close}
	w := &c.res
	if !c.run(h, w, r) {
		return false
	}
	if err := w.finish(); err != nil {
		return false
	}
	// A client that went away after sending more requests still gets them served,
	// as net/http does, with their contexts cancelled.
	return !w.closeAfter
}

// run calls the handler, and reports false when it aborted the response with a
// panic, as net/http's server recovers it.
func (c *conn) run(h http.Handler, w *response, req *http.Request) (ok bool) {
	defer func() {
		if err := recover(); err != nil {
			if err != http.ErrAbortHandler {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				log.Printf("http: panic serving %v: %v\n%s", c.remote, err, buf)
			}
			ok = false
		}
	}()
	h.ServeHTTP(w, req)
	return true
}

// handOver gives the connection, with every byte read and not yet served, to
// net/http, which sets read deadlines of its own.
func (c *conn) handOver() {
	c.setReadDeadline(time.Time{})
	c.s.handOver(&replayConn{Conn: c.rwc, pending: c.buf})
}

// replayConn reads the bytes the lean loop read before it handed the connection over,
// then the connection.
type replayConn struct {
	net.Conn
	pending []byte
}

func (r *replayConn) Read(p []byte) (int, error) {
	if len(r.pending) > 0 {
		n := copy(p, r.pending)
		r.pending = r.pending[n:]
		return n, nil
	}
	return r.Conn.Read(p)
}
