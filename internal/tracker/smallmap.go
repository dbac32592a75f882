package tracker

// smallMapMax is how many entries a smallMap keeps in a slice before it
// switches to a map. Almost every reference has one or two observers and
// almost every observer reads a handful of references, so a slice scan beats
// a map (and costs a tenth of the memory) for the overwhelmingly common case.
const smallMapMax = 8

// smallMap is a map that stays a slice while it is small.
// The zero value is empty and ready to use.
type smallMap[K comparable, V any] struct {
	pairs []smallPair[K, V]
	big   map[K]V
}

type smallPair[K comparable, V any] struct {
	key K
	val V
}

func (m *smallMap[K, V]) len() int {
	if m.big != nil {
		return len(m.big)
	}
	return len(m.pairs)
}

func (m *smallMap[K, V]) get(k K) (V, bool) {
	if m.big != nil {
		v, ok := m.big[k]
		return v, ok
	}
	for i := range m.pairs {
		if m.pairs[i].key == k {
			return m.pairs[i].val, true
		}
	}
	var zero V
	return zero, false
}

func (m *smallMap[K, V]) set(k K, v V) {
	if m.big != nil {
		m.big[k] = v
		return
	}
	for i := range m.pairs {
		if m.pairs[i].key == k {
			m.pairs[i].val = v
			return
		}
	}
	if len(m.pairs) < smallMapMax {
		m.pairs = append(m.pairs, smallPair[K, V]{k, v})
		return
	}
	m.big = make(map[K]V, 2*smallMapMax)
	for _, p := range m.pairs {
		m.big[p.key] = p.val
	}
	m.big[k] = v
	m.pairs = nil
}

func (m *smallMap[K, V]) delete(k K) {
	if m.big != nil {
		delete(m.big, k)
		// Going back to a slice when the map empties out releases its buckets.
		if len(m.big) == 0 {
			m.big = nil
		}
		return
	}
	for i := range m.pairs {
		if m.pairs[i].key == k {
			last := len(m.pairs) - 1
			m.pairs[i] = m.pairs[last]
			m.pairs[last] = smallPair[K, V]{} // drop references for the GC
			m.pairs = m.pairs[:last]
			if len(m.pairs) == 0 {
				m.pairs = nil
			}
			return
		}
	}
}

// each calls f for every entry; f must not modify m.
func (m *smallMap[K, V]) each(f func(K, V)) {
	if m.big != nil {
		for k, v := range m.big {
			f(k, v)
		}
		return
	}
	for _, p := range m.pairs {
		f(p.key, p.val)
	}
}

// deleteIf removes every entry for which drop returns true.
func (m *smallMap[K, V]) deleteIf(drop func(K, V) bool) {
	if m.big != nil {
		for k, v := range m.big {
			if drop(k, v) {
				delete(m.big, k)
			}
		}
		if len(m.big) == 0 {
			m.big = nil
		}
		return
	}
	kept := m.pairs[:0]
	for _, p := range m.pairs {
		if !drop(p.key, p.val) {
			kept = append(kept, p)
		}
	}
	clear(m.pairs[len(kept):])
	m.pairs = kept
	if len(m.pairs) == 0 {
		m.pairs = nil
	}
}
