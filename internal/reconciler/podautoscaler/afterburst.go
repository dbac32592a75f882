package podautoscaler

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// afterBurst holds the PodAutoscalers whose scale to zero waits for a burst of
// Services to end, and puts them back in the controller's queue when it does: one
// reconcile each at the burst's end, where polling would look at every one of them
// again and again while thousands of Services are on their way, and find them due up
// to a poll late. It is the controller's source of those requests.
type afterBurst struct {
	mu sync.Mutex
	// ctx and queue are the controller's, from Start: reconciles, and so postpone,
	// come only after it.
	ctx     context.Context
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]
	waiting map[types.NamespacedName]struct{}
	// calm is the channel the waiting keys wait on, nil when none wait.
	calm <-chan struct{}
}

var _ source.Source = (*afterBurst)(nil)

func newAfterBurst() *afterBurst {
	return &afterBurst{waiting: map[types.NamespacedName]struct{}{}}
}

// Start implements source.Source.
func (a *afterBurst) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	a.mu.Lock()
	a.ctx, a.queue = ctx, q
	a.mu.Unlock()
	return nil
}

// postpone reports whether calm is still open, a burst on; if it is, key is queued
// when calm closes. A key is queued at least once after the burst it waited for, and
// may be queued early if another burst begins meanwhile: its reconcile then postpones
// it again.
func (a *afterBurst) postpone(key types.NamespacedName, calm <-chan struct{}) bool {
	select {
	case <-calm:
		return false
	default:
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.waiting[key] = struct{}{}
	if a.calm != calm {
		a.calm = calm
		go a.wake(a.ctx, calm)
	}
	return true
}

func (a *afterBurst) wake(ctx context.Context, calm <-chan struct{}) {
	select {
	case <-calm:
	case <-ctx.Done():
		return
	}
	a.mu.Lock()
	keys, q := a.waiting, a.queue
	a.waiting = map[types.NamespacedName]struct{}{}
	if a.calm == calm {
		a.calm = nil
	}
	a.mu.Unlock()
	for key := range keys {
		q.Add(reconcile.Request{NamespacedName: key})
	}
}
