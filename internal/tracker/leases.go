package tracker

import "k8s.io/apimachinery/pkg/types"

// leases records who tracks one reference, each with the Unix-nanosecond
// expiry of its lease. Nearly every reference has exactly one observer (a
// Route's Configuration, a Service's Route), so the first is stored inline
// in the index's map slot: looking it up costs no pointer chase, which at
// 100k references is a cache miss saved on every event.
// The zero value is empty.
type leases struct {
	first       types.NamespacedName
	firstExpiry int64 // 0 when first is unused
	more        *smallMap[types.NamespacedName, int64]
}

func (l *leases) len() int {
	n := 0
	if l.firstExpiry != 0 {
		n = 1
	}
	if l.more != nil {
		n += l.more.len()
	}
	return n
}

func (l *leases) get(o types.NamespacedName) (int64, bool) {
	if l.firstExpiry != 0 && l.first == o {
		return l.firstExpiry, true
	}
	if l.more != nil {
		return l.more.get(o)
	}
	return 0, false
}

// set records o's expiry, which must not be 0.
func (l *leases) set(o types.NamespacedName, expiry int64) {
	switch {
	case l.firstExpiry != 0 && l.first == o:
		l.firstExpiry = expiry
	case l.more != nil:
		if _, ok := l.more.get(o); ok || l.firstExpiry != 0 {
			l.more.set(o, expiry)
			return
		}
		l.first, l.firstExpiry = o, expiry
	case l.firstExpiry == 0:
		l.first, l.firstExpiry = o, expiry
	default:
		l.more = &smallMap[types.NamespacedName, int64]{}
		l.more.set(o, expiry)
	}
}

func (l *leases) delete(o types.NamespacedName) {
	if l.firstExpiry != 0 && l.first == o {
		l.first, l.firstExpiry = types.NamespacedName{}, 0
		l.refill()
		return
	}
	if l.more != nil {
		l.more.delete(o)
		if l.more.len() == 0 {
			l.more = nil
		}
	}
}

// refill moves an entry of more into the empty first slot.
func (l *leases) refill() {
	if l.more == nil {
		return
	}
	var moved bool
	l.more.each(func(o types.NamespacedName, expiry int64) {
		if !moved {
			l.first, l.firstExpiry, moved = o, expiry, true
		}
	})
	l.more.delete(l.first)
	if l.more.len() == 0 {
		l.more = nil
	}
}

// deleteIf removes every lease for which drop returns true.
func (l *leases) deleteIf(drop func(types.NamespacedName, int64) bool) {
	if l.more != nil {
		l.more.deleteIf(drop)
		if l.more.len() == 0 {
			l.more = nil
		}
	}
	if l.firstExpiry != 0 && drop(l.first, l.firstExpiry) {
		l.first, l.firstExpiry = types.NamespacedName{}, 0
		l.refill()
	}
}

// appendLive appends the observers whose lease outlives now.
func (l *leases) appendLive(out []types.NamespacedName, now int64) []types.NamespacedName {
	if l.firstExpiry > now {
		out = append(out, l.first)
	}
	if l.more == nil {
		return out
	}
	if l.more.big != nil {
		for o, expiry := range l.more.big {
			if expiry > now {
				out = append(out, o)
			}
		}
		return out
	}
	for _, p := range l.more.pairs {
		if p.val > now {
			out = append(out, p.key)
		}
	}
	return out
}
