package requestctx

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestCancelClosesDoneAndSetsErr(t *testing.T) {
	before := New(context.Background())
	done := before.Done()
	if closed(done) || before.Err() != nil {
		t.Fatal("a new Context is done")
	}
	before.Cancel()
	if !closed(done) || before.Err() != context.Canceled {
		t.Fatalf("after Cancel: done closed %v, Err %v", closed(done), before.Err())
	}
	after := New(context.Background())
	after.Cancel()
	if !closed(after.Done()) {
		t.Fatal("Done asked for after Cancel is open")
	}
	after.Cancel() // a second Cancel does nothing
}

func TestChildFollowsParentAndLeavesIt(t *testing.T) {
	parent := New(context.Background())
	type routed struct {
		Context
		name string
	}
	var child routed
	child.Init(parent)
	parent.Cancel()
	if child.Err() != context.Canceled {
		t.Fatal("the child was not cancelled with its parent")
	}

	parent = New(context.Background())
	child = routed{}
	child.Init(parent)
	child.Cancel()
	if n := len(parent.after); n != 0 {
		t.Fatalf("a cancelled child is still registered on its parent (%d entries)", n)
	}
	if parent.Err() != nil {
		t.Fatal("the child's cancel reached its parent")
	}

	cancelled := New(context.Background())
	cancelled.Cancel()
	if New(cancelled).Err() != context.Canceled {
		t.Fatal("a child of a cancelled Context is not cancelled")
	}
}

func TestAfterFunc(t *testing.T) {
	c := New(context.Background())
	var ran, stopped atomic.Int32
	c.AfterFunc(func() { ran.Add(1) })
	stop := c.AfterFunc(func() { stopped.Add(1) })
	if !stop() {
		t.Fatal("stop of a registered function reported false")
	}
	if stop() {
		t.Fatal("a second stop reported true")
	}
	c.Cancel()
	if ran.Load() != 1 || stopped.Load() != 0 {
		t.Fatalf("ran %d (want 1), stopped one ran %d (want 0)", ran.Load(), stopped.Load())
	}
	late := make(chan struct{})
	if c.AfterFunc(func() { close(late) })() {
		t.Fatal("stop of a function registered after Cancel reported true")
	}
	select {
	case <-late:
	case <-time.After(10 * time.Second):
		t.Fatal("a function registered after Cancel did not run")
	}
}

func TestOverStandardContexts(t *testing.T) {
	parent, cancelParent := context.WithCancelCause(context.WithValue(context.Background(), "k", "v"))
	c := New(parent)
	if c.Value("k") != "v" {
		t.Fatal("the parent's value is lost")
	}
	c.Cancel()
	// Cause must not find the parent's cancelCtx: net/http's Transport returns the
	// cause of a cancelled request as its error.
	if err := context.Cause(c); err != context.Canceled {
		t.Fatalf("Cause of a cancelled Context over a running cancelCtx = %v, want context.Canceled", err)
	}

	c = New(parent)
	cause := errors.New("client left")
	cancelParent(cause)
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("not cancelled with a standard parent")
	}

	// The standard library's children of a Context: WithCancel and AfterFunc use its
	// AfterFunc method.
	c = New(context.Background())
	child, cancelChild := context.WithTimeout(c, time.Hour)
	defer cancelChild()
	ran := make(chan struct{})
	context.AfterFunc(c, func() { close(ran) })
	if len(c.after) != 2 {
		t.Fatalf("standard children registered %d functions on the Context, want 2", len(c.after))
	}
	c.Cancel()
	<-child.Done()
	<-ran
	if child.Err() != context.Canceled {
		t.Fatalf("WithTimeout's child: Err %v", child.Err())
	}
}

// TestUnderValues: a Context, or an AfterFunc, over a context that only adds values
// to a Context registers on that Context, starting no goroutine; over one that adds a
// cancellation of its own, it follows that one.
func TestUnderValues(t *testing.T) {
	type key struct{}
	parent := New(context.Background())
	valued := context.WithValue(parent, key{}, "span")
	child := New(valued)
	ran := make(chan struct{})
	AfterFunc(valued, func() { close(ran) })
	if n := len(parent.after); n != 2 {
		t.Fatalf("%d registrations on the Context under the values, want 2 (the child and the AfterFunc)", n)
	}
	if child.Value(key{}) != "span" {
		t.Fatal("the value is lost")
	}
	parent.Cancel()
	<-ran
	if child.Err() != context.Canceled {
		t.Fatal("the child was not cancelled with the Context under the values")
	}

	parent = New(context.Background())
	between, cancelBetween := context.WithCancel(parent)
	child = New(between)
	if n := len(parent.after); n != 1 {
		t.Fatalf("%d registrations on the Context, want 1 (WithCancel's)", n)
	}
	cancelBetween()
	select {
	case <-child.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a child under a cancellation of its own was not cancelled with it")
	}
	if parent.Err() != nil {
		t.Fatal("the cancellation between reached the Context")
	}
}

// TestAllocations holds the point of the package: a request's Context, a routed
// request's inside it and the exchange's AfterFunc, then the end of the request.
func TestAllocations(t *testing.T) {
	type routed struct {
		Context
		n int
	}
	f := func() {}
	allocs := testing.AllocsPerRun(100, func() {
		c := New(context.Background())
		rr := &routed{}
		rr.Init(c)
		stop := rr.AfterFunc(f)
		stop()
		rr.Cancel()
		c.Cancel()
	})
	// New, the routed struct, AfterFunc's stop.
	if allocs > 3 {
		t.Fatalf("%v allocations per request, want at most 3", allocs)
	}
}

func TestConcurrentCancel(t *testing.T) {
	for range 100 {
		parent := New(context.Background())
		child := New(parent)
		var wg sync.WaitGroup
		wg.Add(4)
		go func() { defer wg.Done(); parent.Cancel() }()
		go func() { defer wg.Done(); child.Cancel() }()
		go func() { defer wg.Done(); <-child.Done() }()
		go func() { defer wg.Done(); child.AfterFunc(func() {})() }()
		wg.Wait()
		if parent.Err() == nil || child.Err() == nil {
			t.Fatal("not cancelled")
		}
	}
}
