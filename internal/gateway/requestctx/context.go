package requestctx

import (
	"context"
	"sync"
	"time"
)

// Context is a cancellable context.Context. The zero value is not usable: make one
// with New, or Init one that lives inside another struct.
type Context struct {
	parent context.Context
	// onParent is the parent when it is a Context (registered by pointer); otherwise
	// stopParent ends the registration made with context.AfterFunc.
	onParent *Context

	mu         sync.Mutex
	stopParent func() bool
	done       chan struct{} // made by the first Done
	err        error
	after      []entry // to run on cancellation; starts in inline
	inline     [2]entry
	lastID     uint64
}

// entry is a function registered with AfterFunc (id > 0), or a child Context (id 0).
type entry struct {
	id    uint64
	f     func()
	child *Context
}

// New returns a Context that is cancelled by Cancel or when parent is.
func New(parent context.Context) *Context {
	c := new(Context)
	c.Init(parent)
	return c
}

// Init makes c, a zero Context inside another struct, a Context under parent, as New
// does without its allocation. c must not be in use.
func (c *Context) Init(parent context.Context) {
	c.parent = parent
	c.after = c.inline[:0]
	if p := of(parent); p != nil {
		c.onParent = p
		p.adopt(c)
		return
	}
	if a, ok := parent.(afterFuncer); ok {
		c.follow(a.AfterFunc)
	} else if parent.Done() != nil {
		c.follow(func(f func()) func() bool { return context.AfterFunc(parent, f) })
	}
}

// AfterFunc is context.AfterFunc(ctx, f), but registered on the Context that ctx is,
// embeds or only adds values to (a span's context over a request's), where
// context.AfterFunc, finding no afterFuncer on a value context, would start a
// goroutine to wait for it. f runs as Context.AfterFunc runs it.
func AfterFunc(ctx context.Context, f func()) (stop func() bool) {
	if c := of(ctx); c != nil {
		return c.AfterFunc(f)
	}
	return context.AfterFunc(ctx, f)
}

// embedder is a Context, or a struct that embeds one.
type embedder interface{ requestContext() *Context }

func (c *Context) requestContext() *Context { return c }

// contextKey finds the Context under a context that adds values to it.
type contextKey struct{}

// of returns the Context that ctx is, embeds, or only adds values to (its Done is
// that Context's), or nil.
func of(ctx context.Context) *Context {
	if e, ok := ctx.(embedder); ok {
		return e.requestContext()
	}
	if c, ok := ctx.Value(contextKey{}).(*Context); ok && ctx.Done() == c.Done() {
		return c
	}
	return nil
}

// afterFuncer is what context.AfterFunc looks for on a parent, and what a Context is.
type afterFuncer interface {
	AfterFunc(func()) func() bool
}

// follow registers c's cancellation on a parent that is not a Context. The parent
// may call it at once (and on another goroutine), so stopParent is set under the lock.
func (c *Context) follow(afterFunc func(func()) func() bool) {
	stop := afterFunc(c.Cancel)
	c.mu.Lock()
	c.stopParent = stop
	c.mu.Unlock()
}

// adopt registers child, to be cancelled with c.
func (c *Context) adopt(child *Context) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		child.Cancel()
		return
	}
	c.after = append(c.after, entry{child: child})
	c.mu.Unlock()
}

// Cancel cancels c, its children and the functions registered with AfterFunc, which
// run on this goroutine; Err becomes context.Canceled. Later calls do nothing.
func (c *Context) Cancel() {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = context.Canceled
	if c.done != nil {
		close(c.done)
	}
	after, stop := c.after, c.stopParent
	c.after, c.stopParent = nil, nil
	c.mu.Unlock()
	if c.onParent != nil {
		c.onParent.remove(entry{child: c})
	} else if stop != nil {
		stop()
	}
	for _, e := range after {
		if e.child != nil {
			e.child.Cancel()
		} else {
			e.f()
		}
	}
}

// remove unregisters e and reports whether it was still registered.
func (c *Context) remove(e entry) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.after {
		if c.after[i].id == e.id && c.after[i].child == e.child {
			last := len(c.after) - 1
			c.after[i] = c.after[last]
			c.after[last] = entry{}
			c.after = c.after[:last]
			return true
		}
	}
	return false
}

// AfterFunc arranges for f to run when c is cancelled, on the goroutine that cancels
// it, so f must not block; if c already is, f runs at once on a goroutine of its own,
// as context.AfterFunc does (its caller may hold a lock f takes). stop unregisters f
// and reports whether that stopped it from running.
func (c *Context) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return notRegistered
	}
	c.lastID++
	e := entry{id: c.lastID, f: f}
	c.after = append(c.after, e)
	c.mu.Unlock()
	return func() bool { return c.remove(e) }
}

func notRegistered() bool { return false }

// Done returns a channel closed when c is cancelled; it is made on the first call.
func (c *Context) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	return c.done
}

// Err is nil until c is cancelled, then context.Canceled.
func (c *Context) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Deadline is the parent's: a Context has none of its own.
func (c *Context) Deadline() (time.Time, bool) { return c.parent.Deadline() }

// Value is the parent's value for key, except that c hides the standard library's
// cancelCtx beneath it, and answers for itself to of.
func (c *Context) Value(key any) any {
	switch key {
	case contextKey{}:
		return c
	case cancelCtxKey:
		return nil
	}
	return c.parent.Value(key)
}

func (c *Context) String() string { return "requestctx.Context" }

// cancelCtxKey is the key under which context.Cause looks for the standard library's
// cancelCtx of a context (found by asking it once, below). A Context answers nil:
// otherwise Cause of a Context over a net/http request's context would be that
// parent's cause, nil while the parent runs, even after the Context was cancelled,
// and net/http's Transport returns the cause of a cancelled request as its error.
var cancelCtxKey = func() any {
	p := keyProbe{Context: context.Background()}
	_ = context.Cause(&p)
	return p.key
}()

// keyProbe records the key its Value is asked for.
type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Value(key any) any {
	p.key = key
	return nil
}
