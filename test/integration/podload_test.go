package integration

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/gateway"
	"github.com/ferry-serving/ferry/internal/loadgen"
	"github.com/ferry-serving/ferry/internal/manager"
)

// TestPodLoadIsExported: under steady load through the gateway, the controller's
// metrics show each of a Revision's two pods with its share of the load, the shares
// adding up to the clients' concurrency; once the load stops, the series go.
func TestPodLoadIsExported(t *testing.T) {
	const clients = 4
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	metricsAddr := freeAddr(t)
	f, err := manager.New(rest.CopyConfig(testConfig), manager.Options{
		Reconcilers: true,
		Gateway: &gateway.Options{ExternalAddr: "127.0.0.1:0", LocalAddr: "127.0.0.1:0",
			SimulatedPods: true, Registry: prometheus.NewRegistry()},
		MetricsAddr:        metricsAddr,
		SkipNameValidation: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	runManager(t, f)
	revision, host := createReady(t, autoscaled(ns, "podload", map[string]string{
		"autoscaling.knative.dev/min-scale":  "2",
		v1.SimulatedServiceTimeAnnotationKey: "100ms",
	}))
	eventually(t, time.Minute, func() (bool, string) {
		_, ready := scaleOf(t, ns, revision)
		return ready == 2, fmt.Sprintf("%d pods ready", ready)
	})
	var pods corev1.PodList
	if err := testClient.List(context.Background(), &pods, client.InNamespace(ns),
		client.MatchingLabels{v1.RevisionLabelKey: revision}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	sort.Strings(names)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Long enough for the check below; cancelled once it passes.
		if _, err := loadgen.Run(ctx, loadgen.Options{URL: "http://" + f.Gateway.ExternalAddr() + "/", Host: host,
			Concurrency: clients, Duration: time.Minute}); err != nil && ctx.Err() == nil {
			t.Error(err)
		}
	}()
	series := func() map[string]float64 {
		got := map[string]float64{}
		for _, s := range scrape(t, metricsAddr) {
			if s.name == "ferry_autoscaler_pod_concurrency" && s.labels["namespace"] == ns && s.labels["revision"] == revision {
				got[s.labels["pod"]] = s.value
			}
		}
		return got
	}
	// The revision's concurrency is the clients': each always has a request in
	// flight, on one pod or the other (nothing is held), but for the moments between
	// its requests. A period in which the load started has less: wait for a full one.
	var seen string
	eventually(t, 30*time.Second, func() (bool, string) {
		got := series()
		sum := 0.0
		for _, name := range names {
			if got[name] <= 0 {
				return false, fmt.Sprintf("pods %v: %v", names, got)
			}
			sum += got[name]
		}
		seen = fmt.Sprintf("pods %v: %v, sum %.2f", names, got, sum)
		return len(got) == 2 && sum > 0.9*clients && sum < clients+0.5, seen
	})
	t.Log(seen)
	cancel()
	<-done
	stopped := time.Now()

	eventually(t, 30*time.Second, func() (bool, string) {
		got := series()
		return len(got) == 0, fmt.Sprintf("after the load stopped: %v", got)
	})
	t.Logf("series gone %v after the load stopped", time.Since(stopped).Round(100*time.Millisecond))
}
