package soak

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// readinessLog keeps every object's Ready spans and the moments something changed
// it: its creation, a new generation, and (for all objects at once) a fault or a
// configuration change. An object may be not Ready for at most the bound after the
// latest such change; a crashing program's Service must instead say so, with Ready
// False, within the bound.
type readinessLog struct {
	mu      sync.Mutex
	objects map[string]*life
	global  []time.Time // faults and configuration changes: they touch every object
}

// life is one object's readiness over time.
type life struct {
	changes       []time.Time
	generation    int64
	ready         bool
	notReadySince time.Time // zero while Ready
	reason        string    // the Ready condition's reason and message while not Ready
	spans         []notReady
	deleted       bool
}

// notReady is a span during which an object was not Ready; to is zero while it lasts.
type notReady struct {
	from, to time.Time
	reason   string
}

// Late is an object that stayed not Ready past the bound after its latest change.
type Late struct {
	Object string        `json:"object"`
	From   time.Time     `json:"from"`
	For    time.Duration `json:"for"`    // how long it had been not Ready when judged
	After  time.Duration `json:"after"`  // how long after the latest change
	Reason string        `json:"reason"` // the Ready condition's reason, message
}

func (l Late) String() string {
	return fmt.Sprintf("%s not Ready for %s from %s, %s after its latest change: %s",
		l.Object, l.For.Round(time.Second), l.From.Format(time.TimeOnly), l.After.Round(time.Second), l.Reason)
}

func newReadinessLog() *readinessLog { return &readinessLog{objects: map[string]*life{}} }

// observe records an object's state as a watch saw it.
func (l *readinessLog) observe(at time.Time, object string, generation int64, ready bool, reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := l.objects[object]
	if o == nil || o.deleted {
		o = &life{ready: true}
		l.objects[object] = o
		o.changes = append(o.changes, at)
	}
	if generation != o.generation {
		o.generation = generation
		o.changes = append(o.changes, at)
	}
	switch {
	case ready && !o.ready:
		o.spans = append(o.spans, notReady{from: o.notReadySince, to: at, reason: o.reason})
		o.notReadySince, o.reason = time.Time{}, ""
	case !ready && o.ready:
		o.notReadySince = at
	}
	if !ready {
		o.reason = reason
	}
	o.ready = ready
}

// changed records a change the soak made to an object (its own write), in case the
// watch delivers the new generation late.
func (l *readinessLog) changed(at time.Time, object string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if o := l.objects[object]; o != nil {
		o.changes = append(o.changes, at)
	}
}

// deletedAt ends an object's life: what is gone is not judged further.
func (l *readinessLog) deletedAt(at time.Time, object string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if o := l.objects[object]; o != nil && !o.deleted {
		if !o.ready {
			o.spans = append(o.spans, notReady{from: o.notReadySince, to: at, reason: o.reason})
		}
		o.deleted = true
	}
}

// struck records a fault or a configuration change: every object's clock starts again.
func (l *readinessLog) struck(at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.global = append(l.global, at)
}

// late judges every object up to now: the spans not Ready for longer than bound
// after the object's latest change before each moment. exempt names objects and
// the spans in which they are expected to fail (a crashing program's Service).
func (l *readinessLog) late(now time.Time, bound time.Duration, exempt func(object string, from, to time.Time) bool) []Late {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Late
	for name, o := range l.objects {
		spans := slices.Clone(o.spans)
		if !o.ready && !o.deleted {
			spans = append(spans, notReady{from: o.notReadySince, to: now, reason: o.reason})
		}
		changes := append(slices.Clone(o.changes), l.global...)
		sort.Slice(changes, func(i, j int) bool { return changes[i].Before(changes[j]) })
		for _, s := range spans {
			if exempt != nil && exempt(name, s.from, s.to) {
				continue
			}
			if worst, after := worstWait(s, changes); after > bound {
				out = append(out, Late{Object: name, From: s.from, For: worst, After: after, Reason: s.reason})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].From.Before(out[j].From) })
	return out
}

// worstWait is, over the moments of a not-Ready span, the longest time since the
// latest change before that moment, and the span's length up to that moment. The
// worst moments are just before each change inside the span and the span's end.
func worstWait(s notReady, changes []time.Time) (spanSoFar, afterChange time.Duration) {
	points := []time.Time{s.to}
	for _, c := range changes {
		if c.After(s.from) && c.Before(s.to) {
			points = append(points, c)
		}
	}
	for _, p := range points {
		var latest time.Time
		for _, c := range changes {
			if c.Before(p) {
				latest = c
			}
		}
		if latest.IsZero() {
			latest = s.from
		}
		if w := p.Sub(latest); w > afterChange {
			afterChange, spanSoFar = w, p.Sub(s.from)
		}
	}
	return spanSoFar, afterChange
}

// allReady says whether every live object is Ready now, and names one that is not.
func (l *readinessLog) allReady() (bool, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, o := range l.objects {
		if !o.deleted && !o.ready {
			return false, name + ": " + o.reason
		}
	}
	return true, ""
}

// count is how many objects the log has seen.
func (l *readinessLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.objects)
}
