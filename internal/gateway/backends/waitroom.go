package backends

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// WaitRoom is where a Service's held requests wait. waiting is read on every release
// of a slot, so that releases cost one atomic load while nobody waits.
type WaitRoom struct {
	// Waiting counts the held requests of the Service, for its bound and its poke.
	Waiting atomic.Int64

	mu sync.Mutex
	// lines are the waiters by the split port they route to: a slot freed on one
	// port's endpoint is of no use to the others', so each line gets its own token.
	lines []*WaitLine
}

// WaitLine is the requests waiting for one port of a Service. tokens holds at most
// one wake-up: a release that finds the line waiting leaves one, and the waiter that
// takes it and gets a slot passes another on if others still wait, so that no freed
// slot goes unnoticed while none is wasted on a herd.
type WaitLine struct {
	port    intstr.IntOrString
	waiters int // guarded by waitRoom.mu
	Tokens  chan struct{}
}

func (wr *WaitRoom) Join(port intstr.IntOrString) *WaitLine {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	for _, l := range wr.lines {
		if l.port == port {
			l.waiters++
			return l
		}
	}
	l := &WaitLine{port: port, waiters: 1, Tokens: make(chan struct{}, 1)}
	wr.lines = append(wr.lines, l)
	return l
}

// Leave takes a waiter out of its line; one that got a limited slot wakes the next
// (passOn), since more slots may have been freed than tokens left.
func (wr *WaitRoom) Leave(l *WaitLine, passOn bool) {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	l.waiters--
	if l.waiters > 0 {
		if passOn {
			wake(l)
		}
		return
	}
	for i, other := range wr.lines {
		if other == l {
			wr.lines = append(wr.lines[:i], wr.lines[i+1:]...)
			break
		}
	}
}

// SlotFreed wakes one waiter of each line; a release calls it after giving back its
// slot, when waiting says someone waits.
func (wr *WaitRoom) SlotFreed() {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	for _, l := range wr.lines {
		wake(l)
	}
}

func wake(l *WaitLine) {
	select {
	case l.Tokens <- struct{}{}:
	default: // a token is already there
	}
}
