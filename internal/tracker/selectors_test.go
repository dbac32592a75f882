package tracker

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"
)

var selectorPool = []string{
	"", "app=a", "app==b", "app in (a)", "app in (a,b)", "app notin (a)", "app",
	"!app", "app=a,tier=web", "tier in (web),app", "tier=web", "tier=db", "env=prod,app=b",
	"app=c", "app in (c)",
}

// TestSelectorIndexMatchesEverySelector compares GetObservers with trying
// every tracked selector, with enough selectors in a scope that the label
// index is used, and through adds and removals.
func TestSelectorIndexMatchesEverySelector(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tr := New(nil, 0).SetScheme(testScheme())
		tracked := make(map[types.NamespacedName]labels.Selector)
		for range rapid.IntRange(0, 60).Draw(rt, "ops") {
			o := nn("ns", fmt.Sprint(rapid.IntRange(0, 30).Draw(rt, "observer")))
			if rapid.IntRange(0, 4).Draw(rt, "forget?") == 0 {
				tr.OnDeletedObserver(o)
				delete(tracked, o)
				continue
			}
			text := rapid.SampledFrom(selectorPool).Draw(rt, "selector")
			ls, err := metav1.ParseToLabelSelector(text)
			if err != nil {
				rt.Fatalf("pool selector %q: %v", text, err)
			}
			if _, ok := tracked[o]; ok {
				continue // one selector per observer keeps the model simple
			}
			if err := tr.Track(selectorRef("ns", ls), o); err != nil {
				rt.Fatal(err)
			}
			sel, _ := metav1.LabelSelectorAsSelector(ls)
			tracked[o] = sel
		}
		for range 20 {
			set := labels.Set{}
			for _, k := range []string{"app", "tier", "env"} {
				if v := rapid.SampledFrom([]string{"", "a", "b", "c", "web", "db", "prod"}).Draw(rt, k); v != "" {
					set[k] = v
				}
			}
			var want []types.NamespacedName
			for o, sel := range tracked {
				if sel.Matches(set) {
					want = append(want, o)
				}
			}
			want = sortUnique(want)
			if got := tr.GetObservers(configMap("ns", "x", set)); !slices.Equal(got, want) {
				rt.Fatalf("labels %v: GetObservers = %v, want %v", set, got, want)
			}
		}
	})
}
