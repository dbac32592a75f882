package backpressure

import (
	"context"
	"sync"
	"time"

	"github.com/ferry-serving/ferry/api/duck"
	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// DefaultLimit is how many Services may be in progress before creates are held. A
// Service in a burst waits for those ahead of it, so the limit sets its time to Ready
// (about the limit ÷ throughput: 10–20 s on two cores). At N=2000, 150 gave half the
// p50 of 300 (20 s against 43 s) and no less throughput, one run after the other.
const DefaultLimit = 150

// FreshFor is how long a Service's change counts as new: Quiet stays open while a
// change less than this old is on its way to Ready. A change takes well under a second
// on an idle cluster; one still in progress after FreshFor is slow or stuck (an image
// that never pulls), and background work must not wait on it for good.
const FreshFor = 30 * time.Second

// Backlog is the set of Services in progress, kept from informer events.
type Backlog struct {
	limit int

	mu         sync.Mutex
	inProgress map[types.NamespacedName]struct{}
	busy       bool
	calm       chan struct{} // closed while no burst is on; an open one while one is
	finished   chan struct{} // closed and replaced whenever a Service leaves the set
	// fresh holds when each change less than FreshFor old came in; quiet is closed
	// while it is empty.
	fresh map[types.NamespacedName]time.Time
	quiet chan struct{}
	clock clock.WithDelayedExecution
}

// New returns a Backlog that holds creates while limit Services are in progress.
func New(limit int) *Backlog {
	calm, quiet := make(chan struct{}), make(chan struct{})
	close(calm)
	close(quiet)
	return &Backlog{limit: limit, inProgress: map[types.NamespacedName]struct{}{}, calm: calm, finished: make(chan struct{}),
		fresh: map[types.NamespacedName]time.Time{}, quiet: quiet, clock: clock.RealClock{}}
}

// WithClock sets the clock that ages changes (FreshFor); tests use a fake one.
func (b *Backlog) WithClock(c clock.WithDelayedExecution) *Backlog {
	b.clock = c
	return b
}

// Limit is the number of Services in progress at which creates are held.
func (b *Backlog) Limit() int { return b.limit }

// Full reports whether the limit is reached: a create would be held.
func (b *Backlog) Full() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.inProgress) >= b.limit
}

// Calm returns a channel that is closed when no burst is on: at once if none is, else
// when the current one ends. Work that can wait, such as scaling idle Revisions to
// zero, waits on it, so that it comes due when the burst ends rather than at its next
// poll. A burst begins when a quarter of the limit is in progress (a few Services
// stuck on their way to Ready do not make one) and ends only when its tail is down to
// a thirtieth: postponed work all comes due when a burst ends, and must not land on
// the burst's last Services.
func (b *Backlog) Calm() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calm
}

// Quiet returns a channel that is closed when no user's change is on its way: no
// Service entered the in-progress set less than FreshFor ago and is still in it. Work
// that no user waits for (scaling idle Revisions to zero) yields to a single new
// change, not only to bursts: a new Service's dozen writes otherwise queue in the
// API server behind those of scale-downs (docs/scale.md, the starvation guard).
func (b *Backlog) Quiet() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.quiet
}

// InProgress reports whether a Service is on its way to Ready: its status has not
// observed its generation yet, or its Ready condition is neither True nor False. A
// Service being deleted is not.
func InProgress(s *servingv1.Service) bool {
	if s.DeletionTimestamp != nil {
		return false
	}
	return s.Status.ObservedGeneration != s.Generation || s.Status.GetCondition(duck.ConditionReady).IsUnknown()
}

// Hold waits while the backlog is at its limit, at most max or until ctx ends. It
// returns how long it waited and the number in progress when it was called.
func (b *Backlog) Hold(ctx context.Context, max time.Duration) (time.Duration, int) {
	start := time.Now()
	timeout := time.NewTimer(max)
	defer timeout.Stop()
	first := -1
	for {
		b.mu.Lock()
		n, finished := len(b.inProgress), b.finished
		b.mu.Unlock()
		if first < 0 {
			first = n
		}
		if n < b.limit {
			return time.Since(start), first
		}
		select {
		case <-finished:
		case <-timeout.C:
			return time.Since(start), first
		case <-ctx.Done():
			return time.Since(start), first
		}
	}
}

// OnAdd, OnUpdate and OnDelete keep the set from a Service informer.
func (b *Backlog) OnAdd(obj any, _ bool) { b.observe(obj) }

func (b *Backlog) OnUpdate(_, obj any) { b.observe(obj) }

func (b *Backlog) OnDelete(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if s, ok := obj.(*servingv1.Service); ok {
		b.set(types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, false)
	}
}

var _ toolscache.ResourceEventHandler = (*Backlog)(nil)

func (b *Backlog) observe(obj any) {
	if s, ok := obj.(*servingv1.Service); ok {
		b.set(types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, InProgress(s))
	}
}

func (b *Backlog) set(key types.NamespacedName, inProgress bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, was := b.inProgress[key]
	switch {
	case inProgress && !was:
		b.inProgress[key] = struct{}{}
		b.freshLocked(key)
	case !inProgress && was:
		delete(b.inProgress, key)
		close(b.finished)
		b.finished = make(chan struct{})
		b.staleLocked(key, time.Time{})
	}
	switch n := len(b.inProgress); {
	case n >= max(1, b.limit/4) && !b.busy:
		b.busy, b.calm = true, make(chan struct{})
	case n <= b.limit/30 && b.busy:
		b.busy = false
		close(b.calm)
	}
}

// freshLocked records a change of key that came in now, and ages it after FreshFor.
func (b *Backlog) freshLocked(key types.NamespacedName) {
	now := b.clock.Now()
	if len(b.fresh) == 0 {
		b.quiet = make(chan struct{})
	}
	b.fresh[key] = now
	b.clock.AfterFunc(FreshFor, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.staleLocked(key, now)
	})
}

// staleLocked forgets key's change (the one that came in at since, if since is set:
// a later change of the same Service stays fresh), and closes quiet after the last.
func (b *Backlog) staleLocked(key types.NamespacedName, since time.Time) {
	at, ok := b.fresh[key]
	if !ok || !since.IsZero() && !at.Equal(since) {
		return
	}
	delete(b.fresh, key)
	if len(b.fresh) == 0 {
		close(b.quiet)
	}
}
