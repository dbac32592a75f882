package http1

import (
	"time"
)

// watchDelay is how long a request runs before the connection is watched for the
// client going away. Nearly every request is answered sooner and pays only a timer's
// reset and stop; a longer one (held for a pod, a long poll, a stream) has its
// context cancelled at most this late after the client left, where net/http cancels
// it at once with a read started and stopped around every request.
const watchDelay = 100 * time.Millisecond

// watcher is a conn's watch over a request: a Read on the connection while the
// handler runs, whose EOF or error cancels the request.
type watcher struct {
	watchTimer *time.Timer
	// Under conn.mu.
	watchStop bool
	watchDone chan struct{} // a watch runs until closed
	watchBuf  []byte        // what it read: the client's next request
	watched   int
}

// startWatch has the connection watched once the request runs for watchDelay.
func (c *conn) startWatch() {
	c.mu.Lock()
	c.watchStop = false
	c.mu.Unlock()
	c.watchTimer.Reset(watchDelay)
}

// watch runs on the timer's goroutine.
func (c *conn) watch() {
	c.mu.Lock()
	if c.watchStop || c.watchDone != nil {
		c.mu.Unlock()
		return
	}
	done := make(chan struct{})
	c.watchDone = done
	if c.watchBuf == nil {
		c.watchBuf = make([]byte, readSize)
	}
	c.rwc.SetReadDeadline(time.Time{})
	c.mu.Unlock()
	n, err := c.rwc.Read(c.watchBuf)
	c.mu.Lock()
	c.watched = n
	if err != nil && !c.watchStop {
		c.dead = true
		if c.ctx != nil {
			c.ctx.Cancel()
		}
	}
	c.mu.Unlock()
	close(done)
}

// stopWatch ends the watch, if one began, and keeps what it read.
func (c *conn) stopWatch() {
	c.watchTimer.Stop()
	c.mu.Lock()
	c.watchStop = true
	done := c.watchDone
	c.watchDone = nil
	c.mu.Unlock()
	if done == nil {
		return
	}
	c.rwc.SetReadDeadline(time.Unix(1, 0))
	<-done
	c.buf = append(c.buf, c.watchBuf[:c.watched]...)
	c.watched = 0
	c.setReadDeadline(time.Time{})
}
