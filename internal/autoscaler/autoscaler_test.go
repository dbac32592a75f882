package autoscaler

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ferry-serving/ferry/internal/autoscaler/decider"
	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
	"github.com/ferry-serving/ferry/internal/config"
)

type notified struct {
	mu   sync.Mutex
	keys []types.NamespacedName
}

func (n *notified) add(k types.NamespacedName) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.keys = append(n.keys, k)
}

func (n *notified) take() []types.NamespacedName {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := n.keys
	n.keys = nil
	return k
}

var key = types.NamespacedName{Namespace: "ns", Name: "hello-00001"}

// testAutoscaler has a clock the test moves; the settings are Knative's defaults with
// a 6 s window and a per-pod target of 10 (utilization 100 %).
func testAutoscaler() (*Autoscaler, *notified, *time.Time, decider.Settings) {
	n := &notified{}
	a := New(n.add)
	now := time.Unix(1_000_000, 0)
	a.now = func() time.Time { return now }
	s := decider.SettingsFor(config.DefaultAutoscaler(), map[string]string{
		"autoscaling.knative.dev/window":                        "6s",
		"autoscaling.knative.dev/target":                        "10",
		"autoscaling.knative.dev/target-utilization-percentage": "100",
	}, 0)
	return a, n, &now, s
}

func report(at time.Time, concurrency float64) stats.Report {
	return stats.Report{Source: "gw", Time: at, Period: time.Second,
		Stats: []stats.Stat{{Namespace: key.Namespace, Revision: key.Name, AverageConcurrency: concurrency, Requests: concurrency}}}
}

// Until a stable window has passed with no load recorded, nothing is known: a
// restarted controller must not scale a busy Revision down before the gateways report.
func TestNoDecisionUntilAWindowOfHistory(t *testing.T) {
	a, _, now, s := testAutoscaler()
	a.Watch(key, s, 1, true)
	if d := a.Decision(key); d.DesiredPods != NoDecision {
		t.Fatalf("fresh: desired %d, want NoDecision", d.DesiredPods)
	}
	*now = now.Add(7 * time.Second)
	a.decideAll()
	if d := a.Decision(key); d.DesiredPods != 0 {
		t.Fatalf("after a window of no load: desired %d, want 0", d.DesiredPods)
	}
}

// Reports from two gateways add up, and a changed decision notifies once.
func TestReportsFromReplicasAddUp(t *testing.T) {
	a, n, now, s := testAutoscaler()
	a.Watch(key, s, 1, true)
	for range 6 {
		*now = now.Add(time.Second)
		a.Report(report(*now, 15))
		a.Report(report(*now, 15))
	}
	changed := a.decideAll()
	// 30 in flight at 10 per pod: 3 pods.
	if d := a.Decision(key); d.DesiredPods != 3 || len(changed) != 1 {
		t.Fatalf("desired %d (changed %v), want 3, one change", d.DesiredPods, changed)
	}
	if changed := a.decideAll(); len(changed) != 0 {
		t.Errorf("the same decision notified again: %v", changed)
	}
	if got := n.take(); len(got) != 0 {
		t.Errorf("decideAll notified directly: %v (Start does)", got)
	}
}

// A poke for a Revision at zero decides at once, without waiting for a tick.
func TestPokeWakesARevisionAtZero(t *testing.T) {
	a, n, now, s := testAutoscaler()
	a.Watch(key, s, 0, true)
	*now = now.Add(7 * time.Second)
	a.decideAll()
	if d := a.Decision(key); d.DesiredPods != 0 {
		t.Fatalf("idle: desired %d, want 0", d.DesiredPods)
	}
	n.take()
	a.Poke(key.Namespace, key.Name)
	if got := n.take(); len(got) != 1 || got[0] != key {
		t.Fatalf("poke notified %v, want %v", got, key)
	}
	if d := a.Decision(key); d.DesiredPods < 1 {
		t.Fatalf("after a poke: desired %d, want at least 1", d.DesiredPods)
	}
	// A second poke while the decision already wants pods changes nothing.
	a.Poke(key.Namespace, key.Name)
	if got := n.take(); len(got) != 0 {
		t.Errorf("a second poke notified %v", got)
	}
}

// An idle Revision at zero is not decided at all on a tick.
func TestIdleRevisionsAreSkipped(t *testing.T) {
	a, _, now, s := testAutoscaler()
	for i := range 1000 {
		k := types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("rev-%d", i)}
		a.Watch(k, s, 0, true)
	}
	*now = now.Add(7 * time.Second)
	a.decideAll() // every one decides 0 once
	a.mu.Lock()
	for _, r := range a.revs {
		r.last.StableValue = -1 // a decision would overwrite it
	}
	a.mu.Unlock()
	*now = now.Add(2 * time.Second)
	a.decideAll()
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, r := range a.revs {
		if r.last.StableValue != -1 {
			t.Fatalf("%v was decided again while idle at zero", k)
		}
	}
}

// Load for a Revision nobody watches is kept for a while (its PodAutoscaler may be
// on its way), then dropped.
func TestUnwatchedLoadIsForgotten(t *testing.T) {
	a, _, now, _ := testAutoscaler()
	a.Report(report(*now, 1))
	*now = now.Add(idleForget + time.Second)
	a.decideAll()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.revs) != 0 {
		t.Errorf("%d entries left for unwatched, idle Revisions", len(a.revs))
	}
}
