package tracker

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"
)

// TestLeasesActLikeAMap checks leases (and the smallMap under it, across its
// switch to a map and back) against a plain map.
func TestLeasesActLikeAMap(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var l leases
		model := make(map[types.NamespacedName]int64)
		name := func() types.NamespacedName {
			return nn("ns", fmt.Sprint(rapid.IntRange(0, 2*smallMapMax+2).Draw(rt, "observer")))
		}
		for range rapid.IntRange(0, 200).Draw(rt, "ops") {
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0, 1:
				o, expiry := name(), rapid.Int64Range(1, 10).Draw(rt, "expiry")
				l.set(o, expiry)
				model[o] = expiry
			case 2:
				o := name()
				l.delete(o)
				delete(model, o)
			case 3:
				cut := rapid.Int64Range(0, 10).Draw(rt, "cut")
				l.deleteIf(func(_ types.NamespacedName, expiry int64) bool { return expiry <= cut })
				maps.DeleteFunc(model, func(_ types.NamespacedName, expiry int64) bool { return expiry <= cut })
			}
			if l.len() != len(model) {
				rt.Fatalf("len = %d, model has %d", l.len(), len(model))
			}
			for o, want := range model {
				if got, ok := l.get(o); !ok || got != want {
					rt.Fatalf("get(%v) = %d, %v; want %d", o, got, ok, want)
				}
			}
			live := sortUnique(l.appendLive(nil, 5))
			var want []types.NamespacedName
			for o, expiry := range model {
				if expiry > 5 {
					want = append(want, o)
				}
			}
			if want = sortUnique(want); !slices.Equal(live, want) {
				rt.Fatalf("appendLive = %v, want %v", live, want)
			}
			if len(model) == 0 && (l.more != nil || l.firstExpiry != 0) {
				rt.Fatalf("empty leases still hold storage: %+v", l)
			}
		}
	})
}
