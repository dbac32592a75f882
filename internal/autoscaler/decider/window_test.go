package decider

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Unix(1_000_000, 0)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

type rec struct {
	at float64 // seconds after t0
	v  float64
}

func TestWindowAverage(t *testing.T) {
	tests := []struct {
		name string
		recs []rec
		now  float64
		d    time.Duration
		want float64
	}{{
		name: "empty",
		now:  10, d: 60 * time.Second,
		want: 0,
	}, {
		name: "a missing second counts as 0",
		// seconds 0, 1, 2 hold 10, 0, 10: 20/3
		recs: []rec{{0, 10}, {2, 10}},
		now:  2, d: 3 * time.Second,
		want: 6.666667,
	}, {
		name: "a partial window is averaged over the seconds since the first Record",
		// 3 seconds of 6 in a 60s window: 18/3, not 18/60
		recs: []rec{{0, 6}, {1, 6}, {2, 6}},
		now:  2, d: 60 * time.Second,
		want: 6,
	}, {
		name: "seconds after the last Record count, since the first Record",
		// first Record at 0, now 5: seconds 0..5, 6/6
		recs: []rec{{0, 6}},
		now:  5, d: 60 * time.Second,
		want: 1,
	}, {
		name: "a full window",
		// one 60 at second 0, window (−1, 59] reaches back to the first Record: 60/60
		recs: []rec{{0, 60}},
		now:  59, d: 60 * time.Second,
		want: 1,
	}, {
		name: "the window is (now-d, now]: second 0 has left it at 60",
		recs: []rec{{0, 60}, {30, 30}},
		now:  60, d: 60 * time.Second, // seconds 1..60: 30/60
		want: 0.5,
	}, {
		name: "nothing in the window",
		recs: []rec{{0, 60}},
		now:  119, d: 60 * time.Second,
		want: 0,
	}, {
		name: "sources reporting the same second are summed",
		// 3 + 4 in second 0, 5 in second 1: 12/2
		recs: []rec{{0, 3}, {0.5, 4}, {1.2, 5}},
		now:  1, d: 2 * time.Second,
		want: 6,
	}, {
		name: "a late report lands in its own second",
		// seconds 10, 11, 12 = 2, 4, 6 with 11 reported last: (2+4+6)/3
		recs: []rec{{10, 2}, {12, 6}, {11, 4}},
		now:  12, d: 3 * time.Second,
		want: 4,
	}, {
		name: "a late report into an existing second adds to it",
		recs: []rec{{10, 2}, {12, 6}, {10, 4}}, // 6, 0, 6
		now:  12, d: 3 * time.Second,
		want: 4,
	}, {
		name: "now inside a second: the window ends with now's second",
		// now 12.9, d 2s: seconds 11 and 12 = 4, 6
		recs: []rec{{10, 2}, {11, 4}, {12, 6}},
		now:  12.9, d: 2 * time.Second,
		want: 5,
	}, {
		name: "a partial second of d counts as a whole bucket",
		// d 1.5s → 2 buckets: seconds 11, 12
		recs: []rec{{10, 2}, {11, 4}, {12, 6}},
		now:  12, d: 1500 * time.Millisecond,
		want: 5,
	}, {
		name: "records after now are not counted",
		recs: []rec{{10, 2}, {11, 4}, {12, 6}},
		now:  11, d: 60 * time.Second, // seconds 10, 11
		want: 3,
	}, {
		name: "now before the first Record",
		recs: []rec{{10, 2}},
		now:  5, d: 60 * time.Second,
		want: 0,
	}, {
		name: "rounded to 6 decimals: 0.1+0.2 is 0.3",
		recs: []rec{{0, 0.1}, {0, 0.2}},
		now:  0, d: time.Second,
		want: 0.3,
	}, {
		name: "d of 0",
		recs: []rec{{0, 1}},
		now:  0, d: 0,
		want: 0,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w Window
			for _, r := range tt.recs {
				w.Record(at(r.at), r.v)
			}
			if got := w.Average(at(tt.now), tt.d); got != tt.want {
				t.Errorf("Average = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWindowIsEmpty(t *testing.T) {
	var w Window
	if !w.IsEmpty(at(0), time.Minute) {
		t.Error("a new Window is not empty")
	}
	w.Record(at(0), 0) // a Record of 0 is data
	for _, tt := range []struct {
		now  float64
		d    time.Duration
		want bool
	}{
		{0, time.Second, false},
		{5, 6 * time.Second, false}, // (−1, 5] holds 0
		{6, 6 * time.Second, true},  // (0, 6] does not
		{-1, time.Minute, true},     // before the Record
	} {
		if got := w.IsEmpty(at(tt.now), tt.d); got != tt.want {
			t.Errorf("IsEmpty(%v, %v) = %v, want %v", tt.now, tt.d, got, tt.want)
		}
	}
}

func TestWindowRetention(t *testing.T) {
	t.Run("NewWindow keeps its retention", func(t *testing.T) {
		w := NewWindow(10 * time.Second)
		for s := 0; s < 100; s++ {
			w.Record(at(float64(s)), 1)
		}
		// newest 99, kept: 90..99
		if got := len(w.secs); got != 10 {
			t.Errorf("kept %d seconds, want 10", got)
		}
		if got := w.Average(at(99), 10*time.Second); got != 1 {
			t.Errorf("Average = %v, want 1", got)
		}
		w.Record(at(50), 100) // older than the retention: dropped
		if got := len(w.secs); got != 10 {
			t.Errorf("kept %d seconds after a stale Record, want 10", got)
		}
		if got := w.Average(at(99), 10*time.Second); got != 1 {
			t.Errorf("Average after a stale Record = %v, want 1", got)
		}
	})
	t.Run("the zero value keeps an hour until asked", func(t *testing.T) {
		var w Window
		for s := 0; s < 4000; s++ {
			w.Record(at(float64(s)), 1)
		}
		if got := len(w.secs); got != 3600 {
			t.Errorf("kept %d seconds, want 3600", got)
		}
	})
	t.Run("the zero value keeps the longest window asked for", func(t *testing.T) {
		var w Window
		w.Average(at(0), 6*time.Second)
		w.Average(at(0), 60*time.Second)
		for s := 0; s < 1000; s++ {
			w.Record(at(float64(s)), 2)
		}
		if got := len(w.secs); got != 60 {
			t.Errorf("kept %d seconds, want 60", got)
		}
		// 60 seconds of 2 since the first Record long ago: 120/60
		if got := w.Average(at(999), time.Minute); got != 2 {
			t.Errorf("Average = %v, want 2", got)
		}
		if got := w.Average(at(999), 6*time.Second); got != 2 {
			t.Errorf("panic Average = %v, want 2", got)
		}
	})
	t.Run("an idle Window holds nothing", func(t *testing.T) {
		var w Window
		w.Average(at(0), time.Minute)
		w.Record(at(0), 5)
		w.Record(at(1000), 5) // prunes second 0
		if got := len(w.secs); got != 1 {
			t.Errorf("kept %d seconds, want 1", got)
		}
	})
}

func TestWindowReset(t *testing.T) {
	var w, reset Window
	for _, x := range []*Window{&w, &reset} {
		x.Record(at(0), 1)
	}
	reset.Reset()
	for _, x := range []*Window{&w, &reset} {
		x.Record(at(100), 10)
	}
	// Without Reset the first Record is at 0: the window (40, 100] is 60 seconds,
	// 10/60. After Reset the first Record is at 100: 10/1.
	if got, want := w.Average(at(100), time.Minute), 0.166667; got != want {
		t.Errorf("Average without Reset = %v, want %v", got, want)
	}
	if got, want := reset.Average(at(100), time.Minute), 10.0; got != want {
		t.Errorf("Average after Reset = %v, want %v", got, want)
	}
}

// Knative's weighted-exponential average over a 6 s window: sc = max(1 − 0.0001^(1/6),
// 0.2) ≈ 0.7846, the newest second weighs sc, each older one (1 − sc) times the next,
// and a second with no Record counts as 0.
func TestWeightedAverage(t *testing.T) {
	var w Window
	w.Record(t0, 10)
	w.Record(t0.Add(2*time.Second), 4)
	sc := 1 - math.Pow(0.0001, 1.0/6)
	now := t0.Add(2 * time.Second)
	want := 4*sc + 10*sc*(1-sc)*(1-sc)
	if got := w.WeightedAverage(now, 6*time.Second); math.Abs(got-want) > 1e-12 {
		t.Errorf("WeightedAverage = %v, want %v", got, want)
	}
	// A long window's coefficient is floored at 0.2, so old seconds still fade fast.
	want = 4*0.2 + 10*0.2*0.8*0.8
	if got := w.WeightedAverage(now, time.Hour); math.Abs(got-want) > 1e-12 {
		t.Errorf("WeightedAverage over 1h = %v, want %v", got, want)
	}
	if got := w.WeightedAverage(t0.Add(20*time.Second), 6*time.Second); got != 0 {
		t.Errorf("WeightedAverage after the window = %v, want 0", got)
	}
}
