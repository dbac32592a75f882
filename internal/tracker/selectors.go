package tracker

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
)

// selectorRefs is one selector of a scope and the observers tracking it.
type selectorRefs struct {
	selector labels.Selector
	// index is a key=value every matching object has, if the selector
	// requires one; indexed says whether it does.
	index   labelPair
	indexed bool
	leases  leases
}

type labelPair struct{ key, value string }

// linearScanMax is how many selectors a scope may hold before events stop
// trying each and look them up by label instead.
const linearScanMax = 8

// scopeSelectors holds the selector references of one scope. Selectors
// that require some key=value (app=x, app in (x)), which are nearly all of
// them, are also filed under that pair, so an event looks up its object's
// labels instead of matching every selector in the scope.
type scopeSelectors struct {
	all       map[string]*selectorRefs // by canonical selector string
	byLabel   map[labelPair][]*selectorRefs
	unindexed []*selectorRefs
}

func newScopeSelectors() *scopeSelectors {
	return &scopeSelectors{all: make(map[string]*selectorRefs), byLabel: make(map[labelPair][]*selectorRefs)}
}

// add returns the entry for the selector, creating it from sel if needed.
func (s *scopeSelectors) add(text string, sel labels.Selector) *selectorRefs {
	if sr := s.all[text]; sr != nil {
		return sr
	}
	sr := &selectorRefs{selector: sel}
	sr.index, sr.indexed = requiredPair(sel)
	s.all[text] = sr
	if sr.indexed {
		s.byLabel[sr.index] = append(s.byLabel[sr.index], sr)
	} else {
		s.unindexed = append(s.unindexed, sr)
	}
	return sr
}

func (s *scopeSelectors) remove(text string) {
	sr := s.all[text]
	if sr == nil {
		return
	}
	delete(s.all, text)
	if !sr.indexed {
		s.unindexed = without(s.unindexed, sr)
		return
	}
	if rest := without(s.byLabel[sr.index], sr); len(rest) > 0 {
		s.byLabel[sr.index] = rest
	} else {
		delete(s.byLabel, sr.index)
	}
}

func (s *scopeSelectors) len() int { return len(s.all) }

// appendMatching appends the live observers of every selector matching set.
func (s *scopeSelectors) appendMatching(out []types.NamespacedName, set labels.Set, now int64) []types.NamespacedName {
	if len(s.all) <= linearScanMax {
		for _, sr := range s.all {
			if sr.selector.Matches(set) {
				out = sr.leases.appendLive(out, now)
			}
		}
		return out
	}
	for k, v := range set {
		for _, sr := range s.byLabel[labelPair{k, v}] {
			if sr.selector.Matches(set) {
				out = sr.leases.appendLive(out, now)
			}
		}
	}
	for _, sr := range s.unindexed {
		if sr.selector.Matches(set) {
			out = sr.leases.appendLive(out, now)
		}
	}
	return out
}

// requiredPair returns a key=value that every object matching sel has.
func requiredPair(sel labels.Selector) (labelPair, bool) {
	reqs, selectable := sel.Requirements()
	if !selectable {
		return labelPair{}, false
	}
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			if vals := r.Values(); vals.Len() == 1 {
				return labelPair{r.Key(), vals.UnsortedList()[0]}, true
			}
		}
	}
	return labelPair{}, false
}

// without removes sr from list, not keeping order.
func without(list []*selectorRefs, sr *selectorRefs) []*selectorRefs {
	for i, x := range list {
		if x == sr {
			last := len(list) - 1
			list[i] = list[last]
			list[last] = nil
			list = list[:last]
			break
		}
	}
	if len(list) == 0 {
		return nil
	}
	return list
}
