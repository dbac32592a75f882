package gateway

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Requests through the gateway, held ones included, are what the reporter reports.
func TestGatewayReportsItsRequests(t *testing.T) {
	sink := &recordingSink{}
	g := startGatewayReporting(t, Options{Stats: sink, Source: "gw-test"}, false)
	start := time.Now()
	g.reporter.Collect(start) // the period starts now
	backend := newCountingBackend(t, "acct", 100*time.Millisecond)
	g.serveRevision(revisionService("acct-1", 0, 0), backend.Server)
	g.serveRevision(revisionService("cold-1", 0, 0))
	g.route("acct.example.com", "acct-1")
	g.route("cold.example.com", "cold-1")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held := g.send(ctx, "cold.example.com", "/")
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if a := <-g.send(context.Background(), "acct.example.com", "/"); a.code != 200 {
				t.Errorf("%d %q", a.code, a.body)
			}
		})
	}
	wg.Wait()
	cold := g.service("cold-1")
	eventually(t, "the held request", func() bool { return cold.Room.Waiting.Load() == 1 })
	report := g.reporter.Collect(time.Now())
	period := report.Period.Seconds()
	got := map[string]stats.Stat{}
	for _, s := range report.Stats {
		got[s.Revision] = s
	}
	// Two requests of at least 100ms: at least 0.2 request-seconds over the period.
	if area := got["acct-1"].AverageConcurrency * period; got["acct-1"].Requests != 2 || area < 0.2 || area > 0.2+period/2 {
		t.Errorf("acct-1: %+v over %v (area %.3fs)", got["acct-1"], report.Period, area)
	}
	// The held request has been in flight since it arrived, after start.
	if c := got["cold-1"]; c.Requests != 1 || c.AverageConcurrency <= 0 || c.AverageConcurrency > 1 {
		t.Errorf("cold-1: %+v", c)
	}
	if report.Source != "gw-test" || report.Time.Before(start) {
		t.Errorf("report %+v", report)
	}

	// Next period: the held request is still demand; acct-1 was idle.
	time.Sleep(20 * time.Millisecond)
	report = g.reporter.Collect(time.Now())
	if len(report.Stats) != 1 || report.Stats[0].Revision != "cold-1" || !near(report.Stats[0].AverageConcurrency, 1) {
		t.Errorf("second period: %+v", report.Stats)
	}
	cancel()
	<-held
	eventually(t, "the held request to end", func() bool { return cold.Room.Waiting.Load() == 0 })
}

func TestReporterRunsEveryInterval(t *testing.T) {
	sink := &recordingSink{}
	g := startGateway(t, Options{Stats: sink, ReportInterval: 20 * time.Millisecond})
	g.services.Update(gatewaytest.Key("sim-1"), backends.BuildEndpoints(gatewaytest.ServiceWithPort("sim-1"),
		[]discoveryv1.EndpointSlice{gatewaytest.SliceFor("sim-1", 8012, "10.244.0.5")}, func(string) bool { return true }))
	g.route("sim.example.com", "sim-1")
	if a := <-g.send(context.Background(), "sim.example.com", "/"); a.code != 200 {
		t.Fatalf("%d %q", a.code, a.body)
	}
	eventually(t, "a report of the request", func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		for _, r := range sink.reports {
			for _, s := range r.Stats {
				if s.Revision == "sim-1" && s.Requests == 1 {
					return true
				}
			}
		}
		return false
	})
	if g.reporter.NeedLeaderElection() {
		t.Error("the reporter waits for leader election")
	}
}

func near(got, want float64) bool { return math.Abs(got-want) < 1e-6 }
