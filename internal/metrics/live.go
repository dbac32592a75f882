package metrics

import (
	"context"
	"sync"
)

// live is the set of objects a collector reads at scrape time. Each is in it while
// the runnable that exports it runs, so that a replica that is not the leader exports
// nothing, and tests that run several managers in turn see only the running one's.
type live[T comparable] struct {
	mu  sync.Mutex
	set map[T]struct{}
}

// while keeps v in the set until ctx is done.
func (l *live[T]) while(ctx context.Context, v T) {
	l.mu.Lock()
	if l.set == nil {
		l.set = map[T]struct{}{}
	}
	l.set[v] = struct{}{}
	l.mu.Unlock()
	<-ctx.Done()
	l.mu.Lock()
	delete(l.set, v)
	l.mu.Unlock()
}

// each calls f for every object in the set, which stays as it is meanwhile.
func (l *live[T]) each(f func(T)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for v := range l.set {
		f(v)
	}
}
