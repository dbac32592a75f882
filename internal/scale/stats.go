package scale

import (
	"math"
	"slices"
	"time"
)

// Percentile is the p-th percentile (0 < p ≤ 100) of ds by the nearest-rank method:
// the smallest value that at least p % of the values do not exceed. ds need not be
// sorted; it is not modified. It is 0 for no values.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return percentileSorted(s, p)
}

func percentileSorted(s []time.Duration, p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// Distribution summarises a set of durations.
type Distribution struct {
	Count int           `json:"count"`
	Min   time.Duration `json:"-"`
	Mean  time.Duration `json:"-"`
	P50   time.Duration `json:"-"`
	P90   time.Duration `json:"-"`
	P95   time.Duration `json:"-"`
	P99   time.Duration `json:"-"`
	Max   time.Duration `json:"-"`
}

// Summarize computes the distribution of ds.
func Summarize(ds []time.Duration) Distribution {
	if len(ds) == 0 {
		return Distribution{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Distribution{
		Count: len(s),
		Min:   s[0],
		Mean:  sum / time.Duration(len(s)),
		P50:   percentileSorted(s, 50),
		P90:   percentileSorted(s, 90),
		P95:   percentileSorted(s, 95),
		P99:   percentileSorted(s, 99),
		Max:   s[len(s)-1],
	}
}

// TimelinePoint counts, at At since the run started, how many Services had been
// created, had become Ready and had been routed.
type TimelinePoint struct {
	At      time.Duration
	Created int
	Ready   int
	Routed  int
}

// Timeline samples the cumulative created/ready/routed counts at points+1 evenly
// spaced instants from 0 to the last event.
func Timeline(samples []Sample, points int) []TimelinePoint {
	var created, ready, routed []time.Duration
	var end time.Duration
	for _, s := range samples {
		if s.Created > 0 {
			created = append(created, s.Start+s.Created)
		}
		if s.Ready > 0 {
			ready = append(ready, s.Start+s.Ready)
		}
		if s.Routed > 0 {
			routed = append(routed, s.Start+s.Routed)
		}
	}
	for _, l := range [][]time.Duration{created, ready, routed} {
		slices.Sort(l)
		if len(l) > 0 {
			end = max(end, l[len(l)-1])
		}
	}
	if points < 1 {
		points = 1
	}
	out := make([]TimelinePoint, 0, points+1)
	for i := 0; i <= points; i++ {
		at := end * time.Duration(i) / time.Duration(points)
		out = append(out, TimelinePoint{At: at, Created: countUpTo(created, at), Ready: countUpTo(ready, at), Routed: countUpTo(routed, at)})
	}
	return out
}

// countUpTo is the number of values in sorted s that are ≤ at.
func countUpTo(s []time.Duration, at time.Duration) int {
	i, found := slices.BinarySearch(s, at)
	for found && i < len(s) && s[i] == at {
		i++
	}
	return i
}
