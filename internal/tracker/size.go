package tracker

// Size is how much a Tracker holds, for monitoring. Pairs whose lease has
// expired count until the next sweep drops them.
type Size struct {
	// Observers is the number of observers tracking at least one reference.
	Observers int
	// References is the number of distinct objects and label selectors
	// tracked, however many observers track each.
	References int
}

// Size counts what t holds. It reads map lengths (and one per selector
// scope), not entries, so a scrape costs little at any scale.
func (t *Tracker) Size() Size {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s := Size{Observers: len(t.observers), References: len(t.exact)}
	for _, ss := range t.selectors {
		s.References += ss.len()
	}
	return s
}
