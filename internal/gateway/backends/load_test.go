package backends

import (
	"math"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const second = uint64(time.Second / time.Microsecond)

func TestLoadAreaIsTheIntegralOfConcurrency(t *testing.T) {
	var l RevisionLoad
	// Concurrency 1 on [1s, 1.25s), 2 on [1.25s, 1.5s), 1 on [1.5s, 2s), then 1.
	l.Begin(1*second, nil)
	l.Begin(1*second+second/4, nil)
	l.End(1*second + second/2)
	area, n := l.Read(2 * second)
	if want := second + second/4; area != want || n != 1 {
		t.Errorf("A(2s) = %dµs with %d in flight; want %dµs with 1", area, n, want)
	}
	if a3, _ := l.Read(3 * second); a3-area != second {
		t.Errorf("one request in flight for a second grew A by %dµs", a3-area)
	}
	l.End(3 * second)
	if a4, n := l.Read(10 * second); a4 != 2*second+second/4 || n != 0 {
		t.Errorf("after the end: A = %dµs, %d in flight", a4, n)
	}
	if got := l.arrivals.Load(); got != 2 {
		t.Errorf("%d arrivals", got)
	}
}

// The area is kept modulo 2^44µs (203 days); differences stay exact across the wrap.
func TestLoadAreaWraps(t *testing.T) {
	var l RevisionLoad
	const wrap = uint64(1) << 44
	before, _ := l.Read(wrap - second)
	l.Begin(wrap-second/2, nil)
	l.Begin(wrap-second/2, nil)
	after, n := l.Read(wrap + second)
	if grown := (after - before) & loadAreaMask; grown != 3*second || n != 2 {
		t.Errorf("two requests for 1.5s across the wrap: %dµs, %d in flight", grown, n)
	}
}

// The reporter turns the area into average concurrency over its period, for the
// revisions that had load, and forgets the idle ones.
func TestReporterAveragesOverThePeriod(t *testing.T) {
	services := NewRegistry()
	for _, name := range []string{"busy-1", "idle-1"} {
		services.Update(gatewaytest.Key(name), BuildEndpoints(gatewaytest.ServiceWithPort(name), nil, gatewaytest.NotSimulated))
	}
	plain := gatewaytest.ServiceWithPort("plain")
	plain.Labels = nil // not a revision's Service
	services.Update(gatewaytest.Key("plain"), BuildEndpoints(plain, nil, gatewaytest.NotSimulated))
	busy, idle, notRevision := services.services[gatewaytest.Key("busy-1")], services.services[gatewaytest.Key("idle-1")], services.services[gatewaytest.Key("plain")]

	set := &ActiveSet{}
	r := NewReporter(discardSink{}, "gw-1", time.Second, set)
	t0 := clockBase.Add(time.Hour)
	at := func(d time.Duration) uint64 { return Micros(t0.Add(d)) }
	r.last = t0

	// Period 1 (2s): busy-1 has requests of 1.5s and 1s, and one in flight since
	// 1.5s: 3 request-seconds in 2s. idle-1 has one request of 2ms. plain has
	// traffic but names no revision.
	busy.Load.Begin(at(0), set)
	busy.Load.Begin(at(500*time.Millisecond), set)
	busy.Load.End(at(1500 * time.Millisecond))
	busy.Load.End(at(1500 * time.Millisecond))
	busy.Load.Begin(at(1500*time.Millisecond), set)
	idle.Load.Begin(at(time.Second), set)
	idle.Load.End(at(time.Second + 2*time.Millisecond))
	notRevision.Load.Begin(at(0), set)
	notRevision.Load.End(at(time.Second))

	report := r.Collect(t0.Add(2 * time.Second))
	if report.Source != "gw-1" || report.Period != 2*time.Second || !report.Time.Equal(t0.Add(2*time.Second)) {
		t.Errorf("report header %+v", report)
	}
	got := map[string]stats.Stat{}
	for _, s := range report.Stats {
		got[s.Namespace+"/"+s.Revision] = s
	}
	if len(got) != 2 || !near(got["ns/busy-1"].AverageConcurrency, 1.5) || got["ns/busy-1"].Requests != 3 ||
		!near(got["ns/idle-1"].AverageConcurrency, 0.001) || got["ns/idle-1"].Requests != 1 {
		t.Errorf("period 1: %+v", report.Stats)
	}

	// Period 2 (1s): busy-1's request runs on to 2.5s; idle-1 has nothing.
	busy.Load.End(at(2500 * time.Millisecond))
	report = r.Collect(t0.Add(3 * time.Second))
	if len(report.Stats) != 1 || report.Stats[0].Revision != "busy-1" || !near(report.Stats[0].AverageConcurrency, 0.5) ||
		report.Stats[0].Requests != 0 {
		t.Errorf("period 2: %+v", report.Stats)
	}
	if len(r.tracked) != 1 || idle.Load.active.Load() {
		t.Errorf("idle-1 is still tracked (%d tracked)", len(r.tracked))
	}

	// Period 3: nothing at all. Period 4: idle-1 wakes up and is reported again.
	if report = r.Collect(t0.Add(4 * time.Second)); len(report.Stats) != 0 || len(r.tracked) != 0 {
		t.Errorf("period 3: %+v, %d tracked", report.Stats, len(r.tracked))
	}
	idle.Load.Begin(at(4*time.Second), set)
	idle.Load.End(at(4500 * time.Millisecond))
	if report = r.Collect(t0.Add(5 * time.Second)); len(report.Stats) != 1 || report.Stats[0].Revision != "idle-1" ||
		!near(report.Stats[0].AverageConcurrency, 0.5) {
		t.Errorf("period 4: %+v", report.Stats)
	}
}

// A request that began a little after the reporter's reading time (its clock read
// after the reporter's, its count added before the reporter looked) makes the area
// shrink for that reading: the period reports no load, not the wrapped difference,
// 17 million requests in flight, and the next period counts the request.
func TestReporterRequestAfterItsReading(t *testing.T) {
	services := NewRegistry()
	services.Update(gatewaytest.Key("quiet-1"), BuildEndpoints(gatewaytest.ServiceWithPort("quiet-1"),
		[]discoveryv1.EndpointSlice{gatewaytest.SliceFor("quiet-1", 8012, "10.0.0.1")}, gatewaytest.NotSimulated))
	svc := services.services[gatewaytest.Key("quiet-1")]
	set := &ActiveSet{}
	r := NewReporter(discardSink{}, "gw-1", time.Second, set)
	t0 := clockBase.Add(time.Hour)
	at := func(d time.Duration) uint64 { return Micros(t0.Add(d)) }
	r.last = t0

	// A 1 ms request in the period, then one that begins 30 ms after the reading.
	svc.Load.Begin(at(500*time.Millisecond), set)
	svc.Load.End(at(501 * time.Millisecond))
	late := at(time.Second + 30*time.Millisecond)
	svc.Load.Begin(late, set)
	se := svc.endpoints.Load()
	slot := se.Targets(intstr.FromInt32(80)).Acquire(se.Limit(), *alone)
	slot.Pod.Began(late)

	report := r.Collect(t0.Add(time.Second))
	if len(report.Stats) != 1 || report.Stats[0].AverageConcurrency != 0 || report.Stats[0].Requests != 2 ||
		len(report.Stats[0].Pods) != 1 || report.Stats[0].Pods[0].AverageConcurrency != 0 {
		t.Fatalf("period with a request after its reading: %+v", report.Stats)
	}
	// The next period counts both: the 1 ms request and the late one's 970 ms.
	report = r.Collect(t0.Add(2 * time.Second))
	if len(report.Stats) != 1 || !near(report.Stats[0].AverageConcurrency, 0.971) ||
		len(report.Stats[0].Pods) != 1 || !near(report.Stats[0].Pods[0].AverageConcurrency, 0.970) {
		t.Errorf("next period: %+v", report.Stats)
	}
}

func near(got, want float64) bool { return math.Abs(got-want) < 1e-6 }

// BenchmarkAccounting is what the accounting adds to each request: the clock twice,
// arrival and end on the revision, taking and giving back a slot on one of three
// pods with the pod's own accounting, from every core at once.
func BenchmarkAccounting(b *testing.B) {
	services := NewRegistry()
	services.Update(gatewaytest.Key("rev-1"), BuildEndpoints(gatewaytest.ServiceWithPort("rev-1"),
		[]discoveryv1.EndpointSlice{gatewaytest.SliceFor("rev-1", 8012, "10.0.0.1", "10.0.0.2", "10.0.0.3")}, gatewaytest.NotSimulated))
	svc := services.services[gatewaytest.Key("rev-1")]
	set := &ActiveSet{}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			se := svc.endpoints.Load()
			start := Micros(time.Now())
			svc.Load.Begin(start, set)
			t := se.Targets(intstr.FromInt32(80)).Acquire(se.Limit(), *alone)
			t.Pod.Began(start)
			end := Micros(time.Now())
			t.Release(end)
			if svc.Room.Waiting.Load() > 0 {
				svc.Room.SlotFreed()
			}
			svc.Load.End(end)
		}
	})
}

// Each pod's share is the time requests spent on it, held time not included; a pod
// that leaves the endpoints gets one last reading for the requests it had since.
func TestReporterBreaksTheLoadDownByPod(t *testing.T) {
	services := NewRegistry()
	slice := gatewaytest.SliceFor("pods-1", 8012, "10.0.0.1", "10.0.0.2", "10.0.0.3")
	slice.Endpoints[0].TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: "pod-a"}
	slice.Endpoints[1].TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: "pod-b"}
	services.Update(gatewaytest.Key("pods-1"), BuildEndpoints(gatewaytest.ServiceWithPort("pods-1"), []discoveryv1.EndpointSlice{slice}, gatewaytest.NotSimulated))
	svc := services.services[gatewaytest.Key("pods-1")]
	ts := svc.endpoints.Load().Targets(intstr.FromInt32(80))
	a, b := &ts.targets[0], &ts.targets[1]

	set := &ActiveSet{}
	r := NewReporter(discardSink{}, "gw-1", time.Second, set)
	t0 := clockBase.Add(time.Hour)
	at := func(d time.Duration) uint64 { return Micros(t0.Add(d)) }
	r.last = t0
	// begin is a request's arrival at arrive, on tg from on; end ends it at end.
	begin := func(tg *Target, arrive, on time.Duration) {
		svc.Load.Begin(at(arrive), set)
		tg.Pod.inflight.Add(1)
		tg.Pod.Began(at(on))
	}
	end := func(tg *Target, d time.Duration) {
		tg.Release(at(d))
		svc.Load.End(at(d))
	}
	collect := func(d time.Duration) (stats.Stat, map[string]stats.PodStat) {
		t.Helper()
		report := r.Collect(t0.Add(d))
		if len(report.Stats) != 1 {
			t.Fatalf("at %v: %+v", d, report.Stats)
		}
		pods := map[string]stats.PodStat{}
		for _, p := range report.Stats[0].Pods {
			pods[p.Name] = p
		}
		return report.Stats[0], pods
	}

	// Period 1 (2s): a request on pod-a from 0 to 1.5s; one that arrived at 0.5s,
	// was held until 1s, and ran on pod-b until 2s; one on pod-a from 1.5s on.
	begin(a, 0, 0)
	begin(b, 500*time.Millisecond, time.Second)
	end(a, 1500*time.Millisecond)
	begin(a, 1500*time.Millisecond, 1500*time.Millisecond)
	end(b, 2*time.Second)
	rev, pods := collect(2 * time.Second)
	// The revision counts the held half second: (1.5 + 1.5 + 0.5) / 2.
	if !near(rev.AverageConcurrency, 1.75) || rev.Requests != 3 {
		t.Errorf("period 1, revision: %+v", rev)
	}
	if len(pods) != 3 || !near(pods["pod-a"].AverageConcurrency, 1) || pods["pod-a"].Requests != 2 ||
		!near(pods["pod-b"].AverageConcurrency, 0.5) || pods["pod-b"].Requests != 1 ||
		pods["10.0.0.3"].AverageConcurrency != 0 || pods["10.0.0.3"].Requests != 0 {
		t.Errorf("period 1, pods: %+v", pods)
	}

	// Period 2 (1s): pod-b leaves the endpoints at 2.2s with a request in flight
	// from 2s to 2.5s; it is dropped at the next update, at 2.7s, before the reading.
	begin(b, 2*time.Second, 2*time.Second)
	without := func(addrs ...string) {
		s := gatewaytest.SliceFor("pods-1", 8012, addrs...)
		s.Endpoints[0].TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: "pod-a"}
		services.Update(gatewaytest.Key("pods-1"), BuildEndpoints(gatewaytest.ServiceWithPort("pods-1"), []discoveryv1.EndpointSlice{s}, gatewaytest.NotSimulated))
	}
	without("10.0.0.1", "10.0.0.3")
	end(b, 2500*time.Millisecond)
	without("10.0.0.1", "10.0.0.3")
	if n := len(*svc.Load.pods.Load()); n != 2 {
		t.Fatalf("%d slots after pod-b left", n)
	}
	rev, pods = collect(3 * time.Second)
	if !near(rev.AverageConcurrency, 1.5) || rev.Requests != 1 {
		t.Errorf("period 2, revision: %+v", rev)
	}
	if len(pods) != 3 || !near(pods["pod-a"].AverageConcurrency, 1) || pods["pod-a"].Requests != 0 ||
		!near(pods["pod-b"].AverageConcurrency, 0.5) || pods["pod-b"].Requests != 1 {
		t.Errorf("period 2, pods: %+v", pods)
	}

	// Period 3 (1s): pod-a's request ends at 3.5s; pod-b is no more.
	end(a, 3500*time.Millisecond)
	rev, pods = collect(4 * time.Second)
	if !near(rev.AverageConcurrency, 0.5) || len(pods) != 2 || !near(pods["pod-a"].AverageConcurrency, 0.5) {
		t.Errorf("period 3: %+v, pods %+v", rev, pods)
	}
	if _, ok := pods["pod-b"]; ok {
		t.Errorf("period 3 reports pod-b: %+v", pods)
	}
}

// An address that a new pod took over is a new slot: the old pod's requests are
// not the new one's.
func TestPodSlotFollowsThePodName(t *testing.T) {
	services := NewRegistry()
	update := func(pod string) *PodSlot {
		s := gatewaytest.SliceFor("pods-1", 8012, "10.0.0.1")
		s.Endpoints[0].TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: pod}
		services.Update(gatewaytest.Key("pods-1"), BuildEndpoints(gatewaytest.ServiceWithPort("pods-1"), []discoveryv1.EndpointSlice{s}, gatewaytest.NotSimulated))
		return services.services[gatewaytest.Key("pods-1")].endpoints.Load().Targets(intstr.FromInt32(80)).targets[0].Pod
	}
	first := update("pod-a")
	if again := update("pod-a"); again != first {
		t.Error("the same pod got a new slot")
	}
	if other := update("pod-b"); other == first || other.name != "pod-b" {
		t.Errorf("pod-b at pod-a's address has slot %p (pod-a's: %p), named %q", other, first, other.name)
	}
}
