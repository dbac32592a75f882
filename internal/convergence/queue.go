package convergence

import (
	"sort"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// queue is a controller's work queue with client-go's guarantees — a request is in the
// queue at most once, never handed to two workers at once, and one added while it is
// processed is handed out again after Done — and none of its order: the simulation
// picks any ready request, which covers every order priority queues and concurrent
// workers produce. Delays run on the simulation's clock.
type queue struct {
	sim  *Sim
	proc *process
	// ready are the requests waiting, in no order (take sorts them).
	ready      []reconcile.Request
	queued     map[reconcile.Request]bool
	processing map[reconcile.Request]bool
	again      map[reconcile.Request]bool
	failures   map[reconcile.Request]int
}

var _ workqueue.TypedRateLimitingInterface[reconcile.Request] = (*queue)(nil)

func newQueue(s *Sim, p *process) *queue {
	return &queue{sim: s, proc: p, queued: map[reconcile.Request]bool{}, processing: map[reconcile.Request]bool{},
		again: map[reconcile.Request]bool{}, failures: map[reconcile.Request]int{}}
}

func (q *queue) Add(item reconcile.Request) {
	switch {
	case q.processing[item]:
		q.again[item] = true
	case !q.queued[item]:
		q.queued[item] = true
		q.ready = append(q.ready, item)
	}
}

// take hands out the i-th ready request, in the order of their names: handlers may
// add requests in map order (the tracker's observers), which must not make a run
// depend on more than its seed.
func (q *queue) take(i int) reconcile.Request {
	sort.Slice(q.ready, func(a, b int) bool { return q.ready[a].String() < q.ready[b].String() })
	item := q.ready[i]
	q.ready = append(q.ready[:i:i], q.ready[i+1:]...)
	delete(q.queued, item)
	q.processing[item] = true
	return item
}

func (q *queue) Done(item reconcile.Request) {
	delete(q.processing, item)
	if q.again[item] {
		delete(q.again, item)
		q.Add(item)
	}
}

func (q *queue) AddAfter(item reconcile.Request, d time.Duration) {
	if d <= 0 {
		q.Add(item)
		return
	}
	q.sim.after(q.proc, d, "requeue "+item.String(), func() { q.Add(item) })
}

// AddRateLimited backs off as controller-runtime's default rate limiter does per
// item: 5 ms doubling up to 1000 s.
func (q *queue) AddRateLimited(item reconcile.Request) {
	n := q.failures[item]
	q.failures[item] = n + 1
	d := 5 * time.Millisecond
	for i := 0; i < n && d < 1000*time.Second; i++ {
		d *= 2
	}
	q.AddAfter(item, min(d, 1000*time.Second))
}

func (q *queue) Forget(item reconcile.Request)          { delete(q.failures, item) }
func (q *queue) NumRequeues(item reconcile.Request) int { return q.failures[item] }
func (q *queue) Len() int                               { return len(q.ready) }
func (q *queue) Get() (reconcile.Request, bool) {
	panic("the simulation hands out requests itself")
}
func (q *queue) ShutDown()          {}
func (q *queue) ShutDownWithDrain() {}
func (q *queue) ShuttingDown() bool { return false }
