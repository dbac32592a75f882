package scale

import (
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
