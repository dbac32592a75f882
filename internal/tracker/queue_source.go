package tracker

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// QueueSource connects New's enqueue callback to a controller-runtime
// controller's queue, which only exists once the controller starts. It is a
// source.Source that emits no events of its own: its Start just keeps the
// queue, and Enqueue adds to it.
//
//	src := tracker.NewQueueSource()
//	t := tracker.New(src.Enqueue, 0)
//	builder.WatchesRawSource(src)
//
// Controllers start their sources before their workers, so every Track made
// in a reconcile finds the queue; observers enqueued before Start are kept
// and added when it comes.
type QueueSource struct {
	mu      sync.Mutex
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]
	pending map[types.NamespacedName]struct{}
}

var _ source.Source = (*QueueSource)(nil)

// NewQueueSource returns a QueueSource not yet started.
func NewQueueSource() *QueueSource {
	return &QueueSource{pending: make(map[types.NamespacedName]struct{})}
}

// Enqueue adds observer to the controller's queue, or remembers it until
// the controller starts.
func (s *QueueSource) Enqueue(observer types.NamespacedName) {
	s.mu.Lock()
	q := s.queue
	if q == nil {
		s.pending[observer] = struct{}{}
	}
	s.mu.Unlock()
	if q != nil {
		q.Add(reconcile.Request{NamespacedName: observer})
	}
}

// EnqueueAt adds observer at priority when the controller's queue is a priority queue
// (as Enqueue otherwise, or before the controller starts).
func (s *QueueSource) EnqueueAt(observer types.NamespacedName, priority int) {
	s.mu.Lock()
	pq, ok := s.queue.(priorityqueue.PriorityQueue[reconcile.Request])
	s.mu.Unlock()
	if !ok {
		s.Enqueue(observer)
		return
	}
	pq.AddWithOpts(priorityqueue.AddOpts{Priority: &priority}, reconcile.Request{NamespacedName: observer})
}

// Start implements source.Source.
func (s *QueueSource) Start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.mu.Lock()
	s.queue = q
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	for o := range pending {
		q.Add(reconcile.Request{NamespacedName: o})
	}
	return nil
}

func (s *QueueSource) String() string { return "tracker.QueueSource" }
