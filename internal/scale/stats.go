package scale

import (
	"cmp"
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

// CreationOrder says whether Services became Ready in the order they were created,
// which a user who creates one Service during a burst notices: in a convoy every
// Service waits for the end of the burst, whatever its place in it.
type CreationOrder struct {
	// P50OverTotal is the median time-to-Ready over the run's total: near 1 in a
	// convoy, near 1/2 or below when each Service takes about as long as any other.
	P50OverTotal float64 `json:"p50OverTotal"`
	// RankCorrelation is Spearman's ρ between the order of the create requests and the
	// order in which Services became Ready: 1 when exactly in creation order, 0 when
	// unrelated. Only Services that became Ready count.
	RankCorrelation float64 `json:"rankCorrelation"`
}

// CreationOrder measures the run's creation order; zero without two Ready Services.
func (r *Result) CreationOrder() CreationOrder {
	var created, ready []float64
	for _, s := range r.Samples {
		if s.Ready > 0 {
			created = append(created, s.Start.Seconds())
			ready = append(ready, (s.Start + s.Ready).Seconds())
		}
	}
	if len(ready) < 2 || r.Total <= 0 {
		return CreationOrder{}
	}
	return CreationOrder{
		P50OverTotal:    Summarize(r.ReadyTimes()).P50.Seconds() / r.Total.Seconds(),
		RankCorrelation: spearman(created, ready),
	}
}

// spearman is Spearman's rank correlation of xs and ys (of equal length ≥ 2): the
// Pearson correlation of their ranks, ties given their mean rank.
func spearman(xs, ys []float64) float64 {
	rx, ry := ranks(xs), ranks(ys)
	n := float64(len(rx))
	var mx, my float64
	for i := range rx {
		mx += rx[i] / n
		my += ry[i] / n
	}
	var cov, vx, vy float64
	for i := range rx {
		dx, dy := rx[i]-mx, ry[i]-my
		cov += dx * dy
		vx += dx * dx
		vy += dy * dy
	}
	if vx == 0 || vy == 0 {
		return 0
	}
	return cov / math.Sqrt(vx*vy)
}

// ranks gives each value its 1-based rank in vs, equal values their mean rank.
func ranks(vs []float64) []float64 {
	idx := make([]int, len(vs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(vs[a], vs[b]) })
	out := make([]float64, len(vs))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && vs[idx[j+1]] == vs[idx[i]] {
			j++
		}
		mean := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			out[idx[k]] = mean
		}
		i = j + 1
	}
	return out
}
