package http1

import (
	"bufio"
	"context"
	"log"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// readSize is the size of each of a connection's two read buffers; leanHeadLimit
// bounds the head the lean loop parses (a larger one goes to net/http, which applies
// MaxHeaderBytes).
const (
	readSize      = 4 << 10
	leanHeadLimit = 8 << 10
)

// conn is one client connection on the lean loop. Its reader goroutine reads into
// two buffers that circulate through chunks and free; the serving goroutine parses
// and answers. The reader is always in a Read, so a client that goes away cancels
// the request in flight at once, as net/http's background read does, without a
// goroutine started and stopped per request.
type conn struct {
	s      *Server
	rwc    net.Conn
	chunks chan []byte // read by the reader, to parse; closed when it stops
	free   chan []byte // back to the reader
	buf    []byte      // read and not yet parsed
	bw     *bufio.Writer
	res    response // reused: the handler has let go of it when it returns
	header http.Header
	body   []byte // reused for response.pending
	timer  *time.Timer
	base   context.Context
	remote string

	idle     atomic.Bool // between requests, nothing buffered: Shutdown may close it
	stopping atomic.Bool // the reader is being stopped for a handover
	mu       sync.Mutex
	dead     bool               // the client's side is closed
	cancel   context.CancelFunc // the request's in flight
}

func newConn(s *Server, rwc net.Conn) *conn {
	c := &conn{s: s, rwc: rwc, chunks: make(chan []byte, 2), free: make(chan []byte, 2),
		buf: make([]byte, 0, readSize), remote: rwc.RemoteAddr().String(), header: make(http.Header), body: make([]byte, 0, bufferBeforeCommit)}
	c.bw = bufio.NewWriterSize(connWriter{c}, readSize)
	c.free <- make([]byte, readSize)
	c.free <- make([]byte, readSize)
	ctx := context.WithValue(context.Background(), http.ServerContextKey, s.Fallback)
	c.base = context.WithValue(ctx, http.LocalAddrContextKey, rwc.LocalAddr())
	return c
}

func (c *conn) readLoop() {
	defer close(c.chunks)
	for {
		b := <-c.free
		n, err := c.rwc.Read(b[:cap(b)])
		if n > 0 {
			c.chunks <- b[:n]
		} else {
			c.free <- b
		}
		if err != nil {
			if !c.stopping.Load() {
				c.gone()
			}
			return
		}
	}
}

// gone cancels the request in flight and those to come: the client cannot be
// answered any more.
func (c *conn) gone() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dead = true
	if c.cancel != nil {
		c.cancel()
	}
}

// isDead reports whether the client's side is closed.
func (c *conn) isDead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead
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

// fill waits up to timeout (0: without end) for more bytes, and reports whether
// it got any.
func (c *conn) fill(timeout time.Duration) bool {
	select {
	case b, ok := <-c.chunks:
		return c.take(b, ok)
	default:
	}
	if timeout <= 0 {
		b, ok := <-c.chunks
		return c.take(b, ok)
	}
	c.timer.Reset(timeout)
	select {
	case b, ok := <-c.chunks:
		c.timer.Stop()
		return c.take(b, ok)
	case <-c.timer.C:
		return false
	}
}

func (c *conn) take(b []byte, ok bool) bool {
	if !ok {
		return false
	}
	c.idle.Store(false)
	c.buf = append(c.buf, b...)
	c.free <- b
	return true
}

func (c *conn) serve() {
	handedOver := false
	defer func() {
		if !handedOver {
			c.rwc.Close()
		}
		c.s.forget(c)
	}()
	c.timer = time.NewTimer(time.Hour)
	c.timer.Stop()
	go c.readLoop()
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
		if !c.serveOne(srv.Handler, &req) {
			return
		}
		c.consume(n)
	}
}

// readHead reads until the buffer starts with a complete head the lean loop takes,
// or one it declines, or the connection ends or times out.
func (c *conn) readHead(srv *http.Server, req *http.Request) (int, verdict) {
	var headerDeadline time.Time
	for {
		if len(c.buf) > 0 {
			if headerDeadline.IsZero() && srv.ReadHeaderTimeout > 0 {
				headerDeadline = time.Now().Add(srv.ReadHeaderTimeout)
			}
			if n, v := parseRequest(req, c.buf, leanHeadLimit); v != incomplete {
				return n, v
			}
		}
		timeout := srv.IdleTimeout
		if len(c.buf) > 0 {
			c.idle.Store(false)
			timeout = 0
			if !headerDeadline.IsZero() {
				if timeout = time.Until(headerDeadline); timeout <= 0 {
					return 0, closed
				}
			}
		} else {
			c.idle.Store(true)
		}
		if !c.fill(timeout) {
			if len(c.buf) > 0 && !c.isDead() {
				return 0, closed // the header timeout
			}
			if len(c.buf) > 0 {
				// A head cut short by the client's close: net/http says what it
				// says of that.
				return 0, declined
			}
			return 0, closed
		}
	}
}

// consume drops the n bytes of the request served.
func (c *conn) consume(n int) {
	rest := copy(c.buf, c.buf[n:])
	c.buf = c.buf[:rest]
}

// serveOne runs the handler for the request parsed into head and reports whether the
// connection stays open.
func (c *conn) serveOne(h http.Handler, head *http.Request) (keep bool) {
	ctx, cancel := context.WithCancel(c.base)
	c.mu.Lock()
	c.cancel = cancel
	if c.dead {
		cancel()
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.cancel = nil
		c.mu.Unlock()
		cancel()
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
	// as net/http does; their contexts are cancelled already.
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

// handOver stops the reader and gives the connection, with every byte read and not
// yet served, to net/http.
func (c *conn) handOver() {
	c.stopping.Store(true)
	c.rwc.SetReadDeadline(time.Unix(1, 0))
	for b := range c.chunks {
		c.buf = append(c.buf, b...)
	}
	c.rwc.SetReadDeadline(time.Time{})
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
