// Package http1 serves the gateway's plain listeners: the common HTTP/1.1 request
// (no body, no upgrade, a head of plain ASCII) on a lean connection loop of its own,
// and every other connection, from its first doubtful byte on, by net/http's server.
// net/http's per-request costs (a goroutine for the background read, a cancellable
// context registered on the connection's, a clone of the header map, the handler's
// response buffers) were about a third of the gateway's CPU besides the system calls
// (docs/gateway.md, "Proxy numbers"); here one goroutine per connection reads, parses
// the head in place and answers, and watches for the client going away only once a
// request runs long (watch.go).
//
// Trust: the lean parser accepts only a strict subset of what net/http accepts and
// builds the same *http.Request from it; anything else (h2c's preface, a body,
// Upgrade, Expect, obsolete line folding, a byte outside printable ASCII, an oversized
// head) goes to net/http with the bytes read so far, which then parses or refuses it
// as it always did. FuzzParse holds the two side by side.
package http1

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Server serves HTTP/1.1 from Fallback's Handler, with its IdleTimeout,
// ReadHeaderTimeout and MaxHeaderBytes, and hands Fallback the connections the lean
// loop does not take. Fallback's Handler may be set until Serve.
type Server struct {
	Fallback *http.Server

	handoff  *handoffListener
	ln       net.Listener
	closing  atomic.Bool
	mu       sync.Mutex
	conns    map[*conn]struct{}
	fallback chan error
	date     dateCache
}

// Serve accepts connections on ln until Shutdown or an accept error.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		ln.Close()
		return http.ErrServerClosed
	}
	s.ln = ln
	s.handoff = &handoffListener{addr: ln.Addr(), conns: make(chan net.Conn), done: make(chan struct{})}
	s.conns = map[*conn]struct{}{}
	s.fallback = make(chan error, 1)
	s.mu.Unlock()
	go func() { s.fallback <- s.Fallback.Serve(s.handoff) }()
	for {
		rwc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return err
		}
		c := newConn(s, rwc)
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		go c.serve()
	}
}

// Shutdown stops accepting, closes the idle connections and waits for the others
// to finish their request, as http.Server.Shutdown does, and shuts Fallback down.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing.Store(true)
	if s.ln != nil {
		s.ln.Close()
	}
	s.mu.Unlock()
	fallbackErr := make(chan error, 1)
	go func() { fallbackErr <- s.Fallback.Shutdown(ctx) }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.closeIdle() {
			return <-fallbackErr
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// closeIdle closes the connections between requests and reports whether none is
// left.
func (s *Server) closeIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.idle.Load() {
			c.rwc.Close()
		}
	}
	return len(s.conns) == 0
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// handOver gives c, with the bytes already read from it, to Fallback.
func (s *Server) handOver(c net.Conn) {
	select {
	case s.handoff.conns <- c:
	case <-s.handoff.done:
		c.Close()
	}
}

// handoffListener is Fallback's listener: the connections handed over.
type handoffListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }

// dateCache is the Date header's value, made once a second rather than per response.
type dateCache struct {
	v atomic.Pointer[cachedDate]
}

type cachedDate struct {
	sec  int64
	text []byte
}

func (d *dateCache) get(now time.Time) []byte {
	sec := now.Unix()
	if c := d.v.Load(); c != nil && c.sec == sec {
		return c.text
	}
	c := &cachedDate{sec: sec, text: now.UTC().AppendFormat(nil, http.TimeFormat)}
	d.v.Store(c)
	return c.text
}
