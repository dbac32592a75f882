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
	a.DecideAll()
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
	changed := a.DecideAll()
	// 30 in flight at 10 per pod: 3 pods.
	if d := a.Decision(key); d.DesiredPods != 3 || len(changed) != 1 {
		t.Fatalf("desired %d (changed %v), want 3, one change", d.DesiredPods, changed)
	}
	if changed := a.DecideAll(); len(changed) != 0 {
		t.Errorf("the same decision notified again: %v", changed)
	}
	if got := n.take(); len(got) != 0 {
		t.Errorf("DecideAll notified directly: %v (Start does)", got)
	}
}

// A poke for a Revision at zero decides at once, without waiting for a tick.
func TestPokeWakesARevisionAtZero(t *testing.T) {
	a, n, now, s := testAutoscaler()
	a.Watch(key, s, 0, true)
	*now = now.Add(7 * time.Second)
	a.DecideAll()
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

// The request that poked is in the gateway's next report too: it counts once, as
// Knative's activator takes its first-request stat out of its next report.
func TestPokedRequestCountsOnce(t *testing.T) {
	a, _, now, s := testAutoscaler()
	a.Watch(key, s, 0, true)
	*now = now.Add(7 * time.Second)
	a.DecideAll()
	a.Poke(key.Namespace, key.Name)
	a.Report(report(*now, 3)) // the poked request and two more, over the same second
	a.DecideAll()
	if d := a.Decision(key); d.StableValue != 3 || d.PanicValue != 3 {
		t.Errorf("after a poke and a report of 3: stable %v, panic %v; want 3 (the poked request once)", d.StableValue, d.PanicValue)
	}
	*now = now.Add(time.Second)
	a.Report(report(*now, 3)) // the next report is taken as it is
	a.DecideAll()
	if d := a.Decision(key); d.StableValue != 3 {
		t.Errorf("the report after: stable %v, want 3", d.StableValue)
	}
}

// Reaching zero pods starts the windows afresh only when the last stable window had no
// load: a request that came after the decision to scale to zero stays in the window.
func TestZeroStartsAfreshOnlyAfterAQuietWindow(t *testing.T) {
	for _, tc := range []struct {
		name       string
		lateReport bool
		want       float64 // the stable average after a report of 6 at zero
	}{
		{"quiet window: afresh", false, 6},
		{"load after the decision: kept", true, 4}, // (2 + 6) over the 2 s since the first
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _, now, s := testAutoscaler()
			a.Watch(key, s, 1, true)
			*now = now.Add(7 * time.Second)
			a.DecideAll()
			if d := a.Decision(key); d.DesiredPods != 0 {
				t.Fatalf("idle: desired %d, want 0", d.DesiredPods)
			}
			if tc.lateReport {
				*now = now.Add(time.Second)
				a.Report(report(*now, 2))
			}
			*now = now.Add(time.Second)
			a.Watch(key, s, 0, true) // the pod is gone
			a.Report(report(*now, 6))
			a.DecideAll()
			if got := a.Decision(key).StableValue; got != tc.want {
				t.Errorf("stable %v, want %v", got, tc.want)
			}
		})
	}
}

// A decision for fewer pods goes to the background callback, one for more to notify:
// a request may be waiting for the latter, none for the former.
func TestFewerPodsInTheBackground(t *testing.T) {
	a, n, now, s := testAutoscaler()
	bg := &notified{}
	a.WithBackground(bg.add)
	a.Watch(key, s, 1, true)
	for range 6 {
		*now = now.Add(time.Second)
		a.Report(report(*now, 30))
	}
	for _, c := range a.DecideAll() {
		a.tell(c)
	}
	if up, down := n.take(), bg.take(); len(up) != 1 || len(down) != 0 {
		t.Fatalf("scale up: notified %v, background %v; want one notification", up, down)
	}
	*now = now.Add(10 * time.Second) // the load has left the window
	a.Watch(key, s, 3, true)
	for _, c := range a.DecideAll() {
		a.tell(c)
	}
	if up, down := n.take(), bg.take(); len(up) != 0 || len(down) != 1 {
		t.Fatalf("scale down: notified %v, background %v; want it in the background", up, down)
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
	a.DecideAll() // every one decides 0 once
	a.mu.Lock()
	for _, r := range a.revs {
		r.last.StableValue = -1 // a decision would overwrite it
	}
	a.mu.Unlock()
	*now = now.Add(2 * time.Second)
	a.DecideAll()
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
	a.DecideAll()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.revs) != 0 {
		t.Errorf("%d entries left for unwatched, idle Revisions", len(a.revs))
	}
}

// Each pod's load is the sum of the gateway replicas' latest reports: a replica's
// next report replaces its own, a replica that stops reporting the Revision drops out
// after two periods, and a pod nobody reports any more is gone.
func TestPodLoadsSumTheReplicasLatest(t *testing.T) {
	a, _, now, _ := testAutoscaler()
	podReport := func(source string, pods ...stats.PodStat) stats.Report {
		r := report(*now, 3)
		r.Source, r.Period, r.Stats[0].Pods = source, 2*time.Second, pods
		return r
	}
	byPod := func() map[string]PodLoad {
		got := map[string]PodLoad{}
		for _, p := range a.PodLoads() {
			if p.Revision != key {
				t.Errorf("pod %s of %s", p.Pod, p.Revision)
			}
			got[p.Pod] = p
		}
		return got
	}

	a.Report(podReport("gw-1", stats.PodStat{Name: "pod-a", AverageConcurrency: 1, Requests: 4},
		stats.PodStat{Name: "pod-b", AverageConcurrency: 0.5, Requests: 2}))
	a.Report(podReport("gw-2", stats.PodStat{Name: "pod-a", AverageConcurrency: 0.25, Requests: 1}))
	got := byPod()
	if len(got) != 2 || got["pod-a"].AverageConcurrency != 1.25 || got["pod-a"].RequestsPerSecond != 2.5 ||
		got["pod-b"].AverageConcurrency != 0.5 || got["pod-b"].RequestsPerSecond != 1 {
		t.Errorf("two replicas: %+v", got)
	}

	// gw-1's next period replaces its last: pod-b is no longer in it.
	*now = now.Add(2 * time.Second)
	a.Report(podReport("gw-1", stats.PodStat{Name: "pod-a", AverageConcurrency: 2, Requests: 2}))
	if got = byPod(); len(got) != 1 || got["pod-a"].AverageConcurrency != 2.25 {
		t.Errorf("after gw-1's next report: %+v", got)
	}
	if _, ok := got["pod-b"]; ok {
		t.Errorf("pod-b is still there: %+v", got)
	}

	// gw-2 had nothing more to say: two of its periods later, it no longer counts.
	*now = now.Add(2*time.Second + time.Millisecond)
	if got = byPod(); len(got) != 1 || got["pod-a"].AverageConcurrency != 2 {
		t.Errorf("after gw-2 went stale: %+v", got)
	}
	// An older gateway reports no pods: the Revision's load counts, nothing per pod.
	a.Report(report(*now, 1))
	if got = byPod(); len(got) != 1 || got["pod-a"].AverageConcurrency != 2 {
		t.Errorf("after a report without pods: %+v", got)
	}

	a.Forget(key)
	if loads := a.PodLoads(); len(loads) != 0 {
		t.Errorf("a forgotten Revision's pods: %+v", loads)
	}
}

// Numbers show the dashboard the decider's view: the load, the decision and a
// wake-up from zero with its wait.
func TestNumbersFollowLoadAndWakeUps(t *testing.T) {
	a, _, now, s := testAutoscaler()
	if _, ok := a.Numbers(key); ok {
		t.Fatal("numbers for a Revision no PodAutoscaler watches")
	}
	a.Watch(key, s, 0, true)
	*now = now.Add(7 * time.Second)
	a.DecideAll()
	a.Poke(key.Namespace, key.Name)
	if n, _ := a.Numbers(key); !n.Waking || n.DesiredPods < 1 {
		t.Fatalf("after a poke: %+v, want waking with a pod desired", n)
	}
	*now = now.Add(300 * time.Millisecond)
	a.Woken(key)
	a.Watch(key, s, 1, true)
	for range 6 {
		*now = now.Add(time.Second)
		a.Report(report(*now, 25))
	}
	a.DecideAll()
	n, ok := a.Numbers(key)
	if !ok || n.Waking || n.Activations != 1 || n.LastActivationWait != 0.3 {
		t.Errorf("after the wake-up: %+v, want one activation of 0.3 s, not waking", n)
	}
	if n.Concurrency != 25 || n.DesiredPods != 3 || n.ReadyPods != 1 || n.Target != 10 {
		t.Errorf("under 25 in flight at target 10: %+v, want concurrency 25, 3 desired, 1 ready", n)
	}
}
