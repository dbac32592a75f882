package integration

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/gateway"
	"github.com/ferry-serving/ferry/internal/loadgen"
)

// TestSimulatedLoadScalesUpAndDown: on ferry up's simulated pods, which the gateway
// answers for after the Revision's service time, `ferry load`'s steady concurrency
// scales a Revision to several pods, no more than its target implies, and to zero once
// the load stops.
func TestSimulatedLoadScalesUpAndDown(t *testing.T) {
	const clients, target = 8, 2
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	_, gw := startAutoscalingWith(t, nil, gateway.Options{SimulatedPods: true, Registry: prometheus.NewRegistry()})
	revision, host := createReady(t, autoscaled(ns, "load", map[string]string{
		"autoscaling.knative.dev/target":                        fmt.Sprint(target),
		"autoscaling.knative.dev/target-utilization-percentage": "100",
		v1.SimulatedServiceTimeAnnotationKey:                    "200ms",
	}))
	want := int32(math.Ceil(float64(clients) / target))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *loadgen.Result, 1)
	go func() {
		res, err := loadgen.Run(ctx, loadgen.Options{URL: "http://" + gw + "/", Host: host, Concurrency: clients, Duration: 8 * time.Second})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	var peak, peakReady int32
	var res *loadgen.Result
	for finished := false; !finished; {
		spec, ready := scaleOf(t, ns, revision)
		peak, peakReady = max(peak, spec), max(peakReady, ready)
		select {
		case res = <-done:
			finished = true
		case <-time.After(200 * time.Millisecond):
		}
	}
	if res == nil {
		t.FailNow() // loadgen.Run said why
	}
	stopped := time.Now()
	t.Logf("%d requests at %.1f/s, codes %v, p50 %v p99 %v; peak %d replicas (%d ready)",
		res.Requests(), res.Rate(), res.Codes, res.Latency.P50, res.Latency.P99, peak, peakReady)
	if res.Codes[200] != res.Requests() {
		t.Errorf("codes %v, errors %v: want every request answered 200", res.Codes, res.Errors)
	}
	if res.Latency.P50 < 200*time.Millisecond {
		t.Errorf("p50 latency %v: the simulated pods did not take their 200ms service time", res.Latency.P50)
	}
	if peakReady < 2 || peak > want {
		t.Errorf("%d clients at target %d: peak %d replicas (%d ready), want 2 to %d ready and never more than %d",
			clients, target, peak, peakReady, want, want)
	}
	eventually(t, 30*time.Second, func() (bool, string) {
		spec, _ := scaleOf(t, ns, revision)
		return spec == 0, fmt.Sprintf("%d replicas %v after the load stopped", spec, time.Since(stopped).Round(time.Second))
	})
	t.Logf("at zero %v after the load stopped", time.Since(stopped).Round(100*time.Millisecond))
}
