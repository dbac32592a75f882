package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ferry-serving/ferry/internal/autoscaler"
	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
)

// A pod's series lasts while the gateways report it: one that drops out of the
// reports, or whose load stops, loses its series, and so does everything once the
// Autoscaler stops.
func TestPodLoadsFollowTheReports(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_000_000, 0))
	a := autoscaler.New(func(types.NamespacedName) {}).WithClock(clk)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ExportPodLoads(ctx, a); close(done) }()
	report := func(pods ...stats.PodStat) {
		a.Report(stats.Report{Source: "gw-1", Time: clk.Now(), Period: time.Second,
			Stats: []stats.Stat{{Namespace: "ns", Revision: "rev-1", AverageConcurrency: 2, Requests: 6, Pods: pods}}})
	}
	compare := func(want string) {
		t.Helper()
		var err error
		for range 100 { // ExportPodLoads registers on its own goroutine
			if err = testutil.CollectAndCompare(podLoads, strings.NewReader(want), "ferry_autoscaler_pod_concurrency"); err == nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal(err)
	}
	const header = `
# HELP ferry_autoscaler_pod_concurrency Time-weighted average number of requests in flight on the pod over the gateways' latest report period, summed over the gateway replicas.
# TYPE ferry_autoscaler_pod_concurrency gauge
`

	report(stats.PodStat{Name: "rev-1-a", AverageConcurrency: 1.5, Requests: 4}, stats.PodStat{Name: "rev-1-b", AverageConcurrency: 0.5, Requests: 2})
	compare(header + `ferry_autoscaler_pod_concurrency{namespace="ns",pod="rev-1-a",revision="rev-1"} 1.5
ferry_autoscaler_pod_concurrency{namespace="ns",pod="rev-1-b",revision="rev-1"} 0.5
`)
	if err := testutil.CollectAndCompare(podLoads, strings.NewReader(`
# HELP ferry_autoscaler_pod_requests_per_second Requests per second the pod got over the gateways' latest report period, summed over the gateway replicas.
# TYPE ferry_autoscaler_pod_requests_per_second gauge
ferry_autoscaler_pod_requests_per_second{namespace="ns",pod="rev-1-a",revision="rev-1"} 4
ferry_autoscaler_pod_requests_per_second{namespace="ns",pod="rev-1-b",revision="rev-1"} 2
`), "ferry_autoscaler_pod_requests_per_second"); err != nil {
		t.Error(err)
	}

	clk.SetTime(clk.Now().Add(time.Second))
	report(stats.PodStat{Name: "rev-1-a", AverageConcurrency: 2, Requests: 6})
	compare(header + `ferry_autoscaler_pod_concurrency{namespace="ns",pod="rev-1-a",revision="rev-1"} 2
`)

	// No report since: the load stopped, and so does the series.
	clk.SetTime(clk.Now().Add(2*time.Second + time.Millisecond))
	if n := testutil.CollectAndCount(podLoads); n != 0 {
		t.Errorf("%d series once the reports stopped, want none", n)
	}

	report(stats.PodStat{Name: "rev-1-a", AverageConcurrency: 1})
	stop()
	<-done
	if n := testutil.CollectAndCount(podLoads); n != 0 {
		t.Errorf("%d series after the Autoscaler stopped, want none", n)
	}
}
