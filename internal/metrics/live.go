package metrics

import (
	"context"
	"iter"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// liveCollector exports what collect reads, at scrape time, from the live objects of
// one kind. An object is live while the runnable that exports it runs, so that a
// replica that is not the leader exports nothing, and tests that run several managers
// in turn see only the running one's.
type liveCollector[T comparable] struct {
	descs []*prometheus.Desc
	// collect sends the metrics of the live objects, which stay as they are meanwhile.
	collect func(ch chan<- prometheus.Metric, live iter.Seq[T])

	mu  sync.Mutex
	set map[T]struct{}
}

// while keeps v live until ctx is done.
func (c *liveCollector[T]) while(ctx context.Context, v T) {
	c.mu.Lock()
	if c.set == nil {
		c.set = map[T]struct{}{}
	}
	c.set[v] = struct{}{}
	c.mu.Unlock()
	<-ctx.Done()
	c.mu.Lock()
	delete(c.set, v)
	c.mu.Unlock()
}

func (c *liveCollector[T]) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *liveCollector[T]) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.collect(ch, func(yield func(T) bool) {
		for v := range c.set {
			if !yield(v) {
				return
			}
		}
	})
}
