package dashboard

import (
	"reflect"
	"testing"
	"time"
)

// Each recorded split holds until the next, and the last until now: a rollout is a
// staircase per Revision, and a Revision named twice (a tag and the default route)
// adds up.
func TestChartColumns(t *testing.T) {
	t0 := time.Unix(1000, 0)
	h := []Split{
		{At: t0, Targets: []SplitTarget{{Revision: "a", Percent: 100}}},
		{At: t0.Add(10 * time.Second), Targets: []SplitTarget{{Revision: "a", Percent: 80}, {Revision: "b", Percent: 20}, {Revision: "b", Tag: "next"}}},
	}
	got := chart(h, t0.Add(30*time.Second))
	want := trafficChart{Revisions: []string{"a", "b"}, Columns: [][]float64{{1000, 1010, 1030}, {100, 80, 80}, {0, 20, 20}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("chart: %+v, want %+v", got, want)
	}
	if c := chart(nil, t0); len(c.Revisions) != 0 || len(c.Columns) != 1 || len(c.Columns[0]) != 0 {
		t.Errorf("no history: %+v, want no points", c)
	}
}
