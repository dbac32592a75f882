package localcluster

import (
	"errors"
	"net"
	"sync"
)

// joinedListener accepts on several listeners as one: the API server serves one
// listener, and listens on loopback for ferry up's clients and on the host's address
// for the pods. Addr is the first one's.
type joinedListener struct {
	all      []net.Listener
	accepted chan net.Conn
	closed   chan struct{}
	once     sync.Once
}

func joinListeners(all ...net.Listener) net.Listener {
	if len(all) == 1 {
		return all[0]
	}
	j := &joinedListener{all: all, accepted: make(chan net.Conn), closed: make(chan struct{})}
	for _, ln := range all {
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return // closed: Close closes them all
				}
				select {
				case j.accepted <- c:
				case <-j.closed:
					c.Close()
					return
				}
			}
		}()
	}
	return j
}

func (j *joinedListener) Accept() (net.Conn, error) {
	select {
	case c := <-j.accepted:
		return c, nil
	case <-j.closed:
		return nil, net.ErrClosed
	}
}

func (j *joinedListener) Close() error {
	var errs []error
	j.once.Do(func() {
		close(j.closed)
		for _, ln := range j.all {
			errs = append(errs, ln.Close())
		}
	})
	return errors.Join(errs...)
}

func (j *joinedListener) Addr() net.Addr { return j.all[0].Addr() }
