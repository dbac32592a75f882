package soak

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// SlowProxy is a TCP proxy in front of the API server for the controller's
// connections: while slowed, every chunk either way waits a delay, as an overloaded
// API server or a congested network answers. It sees only TLS bytes, so the
// controller's kubeconfig names it instead of the API server and nothing else changes.
type SlowProxy struct {
	ln     net.Listener
	target string
	delay  atomic.Int64 // nanoseconds; 0: not slowed
	wg     sync.WaitGroup
}

// NewSlowProxy listens on a free loopback port and forwards to target (host:port).
func NewSlowProxy(target string) (*SlowProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &SlowProxy{ln: ln, target: target}
	p.wg.Go(p.serve)
	return p, nil
}

// Addr is the proxy's host:port.
func (p *SlowProxy) Addr() string { return p.ln.Addr().String() }

// Slow delays traffic by delay for d, then returns.
func (p *SlowProxy) Slow(ctx context.Context, delay, d time.Duration) error {
	p.delay.Store(int64(delay))
	defer p.delay.Store(0)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// Close stops listening; connections end with their peers.
func (p *SlowProxy) Close() error {
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *SlowProxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(in)
	}
}

func (p *SlowProxy) forward(in net.Conn) {
	defer in.Close()
	out, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer out.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if d := time.Duration(p.delay.Load()); d > 0 {
					time.Sleep(d)
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				if err == io.EOF {
					if c, ok := dst.(*net.TCPConn); ok {
						_ = c.CloseWrite()
					}
				}
				return
			}
		}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
}
