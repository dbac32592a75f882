package scale

import (
	"math"
	"testing"
	"time"
)

func ms(n ...int) []time.Duration {
	out := make([]time.Duration, len(n))
	for i, v := range n {
		out[i] = time.Duration(v) * time.Millisecond
	}
	return out
}

func TestPercentile(t *testing.T) {
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100..1, unsorted
	}
	for _, tc := range []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", ms(7), 99, 7 * time.Millisecond},
		{"median of odd", ms(3, 1, 2), 50, 2 * time.Millisecond},
		{"median of even is the lower", ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{"p50 of 1..100", ms(hundred...), 50, 50 * time.Millisecond},
		{"p90 of 1..100", ms(hundred...), 90, 90 * time.Millisecond},
		{"p95 of 1..100", ms(hundred...), 95, 95 * time.Millisecond},
		{"p99 of 1..100", ms(hundred...), 99, 99 * time.Millisecond},
		{"p100 is the max", ms(hundred...), 100, 100 * time.Millisecond},
		{"p99 of 10 is the max", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"tiny p is the min", ms(5, 9, 1), 0.001, time.Millisecond},
	} {
		if got := Percentile(tc.ds, tc.p); got != tc.want {
			t.Errorf("%s: Percentile(p%v) = %v, want %v", tc.name, tc.p, got, tc.want)
		}
	}
	in := ms(3, 1, 2)
	Percentile(in, 50)
	if in[0] != 3*time.Millisecond {
		t.Error("Percentile sorted its input in place")
	}
}

func TestSummarize(t *testing.T) {
	d := Summarize(ms(10, 20, 30, 40))
	want := Distribution{Count: 4, Min: 10 * time.Millisecond, Mean: 25 * time.Millisecond, P50: 20 * time.Millisecond,
		P90: 40 * time.Millisecond, P95: 40 * time.Millisecond, P99: 40 * time.Millisecond, Max: 40 * time.Millisecond}
	if d != want {
		t.Errorf("Summarize = %+v, want %+v", d, want)
	}
	if (Summarize(nil) != Distribution{}) {
		t.Error("Summarize(nil) is not zero")
	}
}

func TestTimeline(t *testing.T) {
	s := time.Second
	samples := []Sample{
		{Start: 0, Created: s, Ready: 2 * s, Routed: 3 * s},
		{Start: s, Created: s, Ready: 3 * s}, // created at 2s, Ready at 4s, never routed
		{Start: 2 * s, Error: "boom"},        // never created
		{Start: 2 * s, Created: 2 * s},       // created at 4s, never Ready
	}
	tl := Timeline(samples, 4) // points at 0, 1, 2, 3, 4 s
	want := []TimelinePoint{
		{At: 0},
		{At: s, Created: 1},
		{At: 2 * s, Created: 2, Ready: 1},
		{At: 3 * s, Created: 2, Ready: 1, Routed: 1},
		{At: 4 * s, Created: 3, Ready: 2, Routed: 1},
	}
	if len(tl) != len(want) {
		t.Fatalf("%d points, want %d: %+v", len(tl), len(want), tl)
	}
	for i := range want {
		if tl[i] != want[i] {
			t.Errorf("point %d = %+v, want %+v", i, tl[i], want[i])
		}
	}
}

func TestCreationOrder(t *testing.T) {
	s := time.Second
	// Four Services created a second apart; Ready times are absolute (Start + Ready).
	run := func(readyAt ...time.Duration) *Result {
		r := &Result{}
		for i, at := range readyAt {
			start := time.Duration(i) * s
			r.Samples = append(r.Samples, Sample{Index: i, Start: start, Ready: at - start})
			r.Total = max(r.Total, at)
		}
		return r
	}
	tests := []struct {
		name     string
		r        *Result
		rho, p50 float64
	}{
		// Each Ready 2 s after its create: in order, p50 2 s of a 5 s total.
		{"in order", run(2*s, 3*s, 4*s, 5*s), 1, 0.4},
		// A convoy: all Ready at the end, in reverse; the median waited 2.8 s of 5.
		{"reversed convoy", run(5*s, 4900*time.Millisecond, 4800*time.Millisecond, 4700*time.Millisecond), -1, 0.56},
		// Ties share their mean rank.
		{"ties", run(5*s, 5*s, 6*s, 6*s), 0.8944, 4.0 / 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.r.CreationOrder()
			if math.Abs(got.RankCorrelation-tc.rho) > 1e-3 || math.Abs(got.P50OverTotal-tc.p50) > 1e-3 {
				t.Errorf("got %+v, want ρ %.4f p50/total %.2f", got, tc.rho, tc.p50)
			}
		})
	}
	if (&Result{Samples: []Sample{{Ready: s}}, Total: s}).CreationOrder() != (CreationOrder{}) {
		t.Error("one Service has no order")
	}
}
