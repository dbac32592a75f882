package scale

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Queue waits: how long a change waited in each controller's queue before a worker
// took it, during the run. A slow step is either slow work or a long queue; the
// writes and the CPU tell the first, this tells the second (issue 21: new work waiting
// behind old). controller-runtime measures it for every controller as
// workqueue_queue_duration_seconds; its buckets are powers of ten, so the report gives
// the exact mean and the share over a second and over ten, not percentiles.

// queueWaitMetric is controller-runtime's histogram of the time items spent queued.
const queueWaitMetric = "workqueue_queue_duration_seconds"

// QueueWait is one controller's queue during the run.
type QueueWait struct {
	Controller string `json:"controller"`
	// Items is how many items workers took from the queue.
	Items       uint64  `json:"items"`
	MeanSeconds float64 `json:"meanSeconds"`
	// OverOneSecond and OverTenSeconds are the shares of Items that waited longer.
	OverOneSecond  float64 `json:"overOneSecond"`
	OverTenSeconds float64 `json:"overTenSeconds"`
}

// queueHistogram is one controller's cumulative histogram at one reading.
type queueHistogram struct {
	count   uint64
	sum     float64
	buckets map[float64]uint64 // upper bound → cumulative count
}

// readQueueWaits reads every controller's queue-wait histogram from g; nil without g.
func readQueueWaits(g prometheus.Gatherer) (map[string]queueHistogram, error) {
	if g == nil {
		return nil, nil
	}
	families, err := g.Gather()
	if err != nil {
		return nil, err
	}
	return queueWaitsOf(families), nil
}

func queueWaitsOf(families []*dto.MetricFamily) map[string]queueHistogram {
	out := map[string]queueHistogram{}
	for _, f := range families {
		if f.GetName() != queueWaitMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			if h == nil {
				continue
			}
			name := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" {
					name = l.GetValue()
				}
			}
			q := queueHistogram{count: h.GetSampleCount(), sum: h.GetSampleSum(), buckets: map[float64]uint64{}}
			for _, b := range h.GetBucket() {
				q.buckets[b.GetUpperBound()] = b.GetCumulativeCount()
			}
			out[name] = q
		}
	}
	return out
}

// queueWaitsBetween is each controller's waits from before to after, the busiest
// queue first; controllers that took nothing are left out.
func queueWaitsBetween(before, after map[string]queueHistogram) []QueueWait {
	var out []QueueWait
	for name, a := range after {
		b := before[name]
		items := a.count - b.count
		if items == 0 || a.count < b.count {
			continue
		}
		within := func(bound float64) float64 {
			return float64(cumulative(a.buckets, bound) - cumulative(b.buckets, bound))
		}
		out = append(out, QueueWait{Controller: name, Items: items, MeanSeconds: (a.sum - b.sum) / float64(items),
			OverOneSecond: 1 - within(1)/float64(items), OverTenSeconds: 1 - within(10)/float64(items)})
	}
	slices.SortFunc(out, func(x, y QueueWait) int {
		return cmp.Or(cmp.Compare(y.MeanSeconds*float64(y.Items), x.MeanSeconds*float64(x.Items)), cmp.Compare(x.Controller, y.Controller))
	})
	for i := range out {
		out[i].OverOneSecond = math.Max(0, out[i].OverOneSecond)
		out[i].OverTenSeconds = math.Max(0, out[i].OverTenSeconds)
	}
	return out
}

// cumulative is the count at the largest bucket bound not over bound (allowing for
// rounding in computed bounds): with other buckets than controller-runtime's, a share
// over bound errs high, never low.
func cumulative(buckets map[float64]uint64, bound float64) uint64 {
	best, n := math.Inf(-1), uint64(0)
	for ub, c := range buckets {
		if ub <= bound*(1+1e-9) && ub > best {
			best, n = ub, c
		}
	}
	return n
}

// MetricsAt gathers the metrics a controller in another process serves at url (its
// /metrics), for a run against a cluster where Ferry runs on its own.
func MetricsAt(url string) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s", url, res.Status)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		byName, err := parser.TextToMetricFamilies(res.Body)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", url, err)
		}
		return slices.Collect(maps.Values(byName)), nil
	})
}
