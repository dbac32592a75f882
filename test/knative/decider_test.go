package knative

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	kautoscaling "knative.dev/serving/pkg/apis/autoscaling"
	kpav1alpha1 "knative.dev/serving/pkg/apis/autoscaling/v1alpha1"
	kaggregation "knative.dev/serving/pkg/autoscaler/aggregation"
	kconfig "knative.dev/serving/pkg/autoscaler/config"
	kmetrics "knative.dev/serving/pkg/autoscaler/metrics"
	kscaling "knative.dev/serving/pkg/autoscaler/scaling"
	kpaResources "knative.dev/serving/pkg/reconciler/autoscaling/kpa/resources"
	kresources "knative.dev/serving/pkg/reconciler/autoscaling/resources"

	"github.com/ferry-serving/ferry/internal/autoscaler"
	"github.com/ferry-serving/ferry/internal/autoscaler/decider"
	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
	"github.com/ferry-serving/ferry/internal/config"
)

// A trace is one Revision's life drawn from a seed: config-autoscaler, the
// Revision's annotations and containerConcurrency, and its load second by second.
type trace struct {
	seed        uint64
	configMap   map[string]string
	annotations map[string]string
	cc          int64
	reachable   bool
	// concurrency and rps hold each second's load as a gateway (or a scrape of every
	// pod) would measure it: the mean requests in flight, and the arrivals.
	concurrency, rps []float64
	// lag is how many seconds pods take to follow a decision, beyond the next second.
	lag       int
	startPods int
}

func TestDeciderMatchesKnative(t *testing.T) {
	n := 10000
	if s := os.Getenv("FERRY_DIFF_TRACES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	first := uint64(1)
	if s := os.Getenv("FERRY_DIFF_REPLAY"); s != "" {
		seed, _ := strconv.ParseUint(s, 10, 64)
		first, n = seed, 1
	}
	var ticks, failed, missed int
	for seed := first; seed < first+uint64(n); seed++ {
		tr := drawTrace(seed)
		got, err := run(tr, n == 1)
		ticks += got
		if errors.Is(err, errMissedSecond) || errors.Is(err, errRounding) {
			missed++
			if n == 1 {
				t.Log(err)
			}
			continue
		}
		if err != nil {
			failed++
			if failed <= 10 {
				t.Errorf("trace %d: %v\n  config %v\n  annotations %v cc=%d reachable=%v lag=%ds start=%d\n  replay: FERRY_DIFF_REPLAY=%d go test -run TestDeciderMatchesKnative -v ./...",
					seed, err, tr.configMap, tr.annotations, tr.cc, tr.reachable, tr.lag, tr.startPods, seed)
			}
		}
	}
	t.Logf("%d traces, %d ticks compared, %d traces differed, %d ended early at a documented difference", n, ticks, failed, missed)
	if missed > n/100 {
		t.Errorf("%d of %d traces ended early at a documented difference: the traces no longer test what they should", missed, n)
	}
}

// errMissedSecond ends a trace at the documented difference in how a second without a
// report counts: 0 for Ferry (its gateway sees every request), left out for Knative.
var errMissedSecond = errors.New("a second without a report")

// drawTrace draws settings in the ranges Knative's admission and config parsing
// accept, and a load made of ramps, plateaus, bursts and idle gaps.
func drawTrace(seed uint64) trace {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	pick := func(p float64) bool { return r.Float64() < p }
	secs := func(lo, hi int) string { return strconv.Itoa(lo+r.IntN(hi-lo+1)) + "s" }
	num := func(lo, hi float64) string {
		return strconv.FormatFloat(math.Round((lo+r.Float64()*(hi-lo))*100)/100, 'f', -1, 64)
	}

	cm := map[string]string{}
	if pick(0.3) {
		cm["max-scale-up-rate"] = num(1.1, 20)
	}
	if pick(0.3) {
		cm["max-scale-down-rate"] = num(1.1, 10)
	}
	if pick(0.3) {
		cm["stable-window"] = secs(6, 120)
	}
	if pick(0.3) {
		cm["panic-window-percentage"] = num(1, 100)
	}
	if pick(0.3) {
		cm["panic-threshold-percentage"] = num(110, 1000)
	}
	if pick(0.3) {
		cm["target-burst-capacity"] = []string{"0", "-1", num(1, 500)}[r.IntN(3)]
	}
	if pick(0.3) {
		cm["container-concurrency-target-default"] = num(1, 200)
	}
	if pick(0.3) {
		cm["container-concurrency-target-percentage"] = num(10, 100)
	}
	if pick(0.2) {
		cm["requests-per-second-target-default"] = num(1, 300)
	}
	if pick(0.3) {
		cm["scale-down-delay"] = secs(0, 30)
	}

	ann := map[string]string{}
	const g = kautoscaling.GroupName + "/"
	if pick(0.3) {
		ann[g+"metric"] = "rps"
	}
	if pick(0.4) {
		ann[g+"target"] = num(0.5, 100)
	}
	if pick(0.3) {
		ann[g+"target-utilization-percentage"] = num(1, 100)
	}
	if pick(0.3) {
		ann[g+"window"] = secs(6, 120)
	}
	if pick(0.3) {
		ann[g+"panic-window-percentage"] = num(1, 100)
	}
	if pick(0.3) {
		ann[g+"panic-threshold-percentage"] = num(110, 1000)
	}
	if pick(0.3) {
		ann[g+"target-burst-capacity"] = []string{"0", "-1", num(1, 500)}[r.IntN(3)]
	}
	if pick(0.2) {
		ann[g+"scale-down-delay"] = secs(0, 30)
	}
	if pick(0.2) {
		ann[g+"activation-scale"] = strconv.Itoa(1 + r.IntN(5))
	}
	if pick(0.2) {
		ann[g+"metric-aggregation-algorithm"] = []string{"linear", "weighted-exponential", "weightedExponential"}[r.IntN(3)]
	}

	tr := trace{
		seed:        seed,
		configMap:   cm,
		annotations: ann,
		reachable:   !pick(0.1),
		lag:         r.IntN(6),
		startPods:   r.IntN(4),
	}
	if pick(0.5) {
		tr.cc = int64(1 + r.IntN(20))
	}
	if !tr.reachable {
		// v0.42.2, the newest Knative whose dependencies the module proxy serves here,
		// delays scale-down for unreachable Revisions too; Knative since (and Ferry)
		// does not, so that an unrouted Revision is not kept up.
		delete(cm, "scale-down-delay")
		delete(ann, g+"scale-down-delay")
	}

	// The load: segments of 5-120 s, in units of a few pods' worth.
	unit := 1 + r.Float64()*30
	length := 120 + r.IntN(600)
	// The Revision is deployed by its first request: with no report at all, Ferry
	// cannot tell no load from no data for a stable window (docs/autoscaling.md),
	// where Knative scrapes its pods within a second.
	tr.concurrency, tr.rps = []float64{unit}, []float64{math.Round(unit * 4)}
	for len(tr.concurrency) < length {
		n := 5 + r.IntN(116)
		from, to := r.Float64()*10*unit, r.Float64()*10*unit
		switch r.IntN(5) {
		case 0: // idle
			from, to = 0, 0
		case 1: // plateau
			to = from
		case 2: // burst
			from, to = 20*unit*r.Float64(), 0
			n = 1 + r.IntN(10)
		}
		for i := range n {
			// Not rounded: Knative v0.42.2 cuts averages to 6 decimals with Floor
			// where Knative since (and Ferry) rounds, which tips ceil(avg/target)
			// when avg/target is an integer; unrounded loads almost never land there.
			c := from + (to-from)*float64(i)/float64(n)
			tr.concurrency = append(tr.concurrency, c)
			// Arrivals: a service time of 50-500 ms per request.
			tr.rps = append(tr.rps, math.Round(c/(0.05+0.45*r.Float64())))
		}
	}
	return tr
}

// run plays tr through both deciders and returns how many ticks it compared, or the
// first tick where they differ.
func run(tr trace, verbose bool) (int, error) {
	kcfg, err := kconfig.NewConfigFromMap(tr.configMap)
	if err != nil {
		return 0, fmt.Errorf("knative refused the config: %w", err)
	}
	fcfg, err := config.NewAutoscalerFromConfigMap(&corev1.ConfigMap{Data: tr.configMap})
	if err != nil {
		return 0, fmt.Errorf("ferry refused a config Knative takes: %w", err)
	}

	// Knative's side: a PodAutoscaler, its Decider and Metric, as its KPA reconciler
	// makes them.
	pa := &kpav1alpha1.PodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rev", Annotations: tr.annotations},
		Spec: kpav1alpha1.PodAutoscalerSpec{
			ContainerConcurrency: tr.cc,
			Reachability:         kpav1alpha1.ReachabilityReachable,
		},
	}
	if !tr.reachable {
		pa.Spec.Reachability = kpav1alpha1.ReachabilityUnreachable
	}
	kdec := kpaResources.MakeDecider(pa, kcfg)
	kmetric := kresources.MakeMetric(pa, "rev-private", kcfg)

	// Ferry's side.
	set := decider.SettingsFor(fcfg, tr.annotations, tr.cc)
	if err := sameSettings(set, kdec.Spec, kmetric.Spec); err != nil {
		return 0, err
	}

	start := time.Now().Truncate(time.Second)
	clock := clocktesting.NewFakePassiveClock(start)
	key := types.NamespacedName{Namespace: "ns", Name: "rev"}
	ferry := autoscaler.New(func(types.NamespacedName) {}).WithClock(clock)

	kb := newKnativeBuckets(kmetric, kdec.Spec.ScalingMetric)
	pods := &podCount{n: tr.startPods}
	kas := kscaling.New(context.Background(), "ns", "rev", kb, pods, &kdec.Spec)
	logger := zap.NewNop().Sugar()

	// decided[s] is Knative's desired scale at second s; pods follow it tr.lag later.
	kDesired := int32(-1)
	decided := make([]int32, len(tr.concurrency))
	ticks := 0
	atZeroWithLoad := false // a request was already held since the Revision reached zero
	var kLastWrite, lastLoad time.Time
	prevPods, quiet := tr.startPods, false
	prevConc, held := 0.0, 0.0
	for s := range tr.concurrency {
		now := start.Add(time.Duration(s) * time.Second)
		clock.SetTime(now)
		if i := s - 1 - tr.lag; i >= 0 && decided[i] >= 0 {
			pods.n = int(min(decided[i], 500))
		}
		if !fcfg.EnableScaleToZero && pods.n == 0 {
			pods.n = 1
		}
		conc, rps := tr.concurrency[s], tr.rps[s]
		if pods.n == 0 && prevPods > 0 {
			// Reaching zero after a stable window without load, Ferry starts the
			// Revision's windows afresh, where Knative restarts its buckets only after
			// a stable window without a write, zeros scraped from its pods included
			// (docs/autoscaling.md, "Where Ferry differs"). Such a Revision is woken
			// here only after that silence, where both start from an empty window.
			quiet = now.Sub(lastLoad) >= kmetric.Spec.StableWindow
		}
		if pods.n == 0 && quiet && now.Sub(kLastWrite) < kmetric.Spec.StableWindow {
			conc, rps = 0, 0
		}
		prevPods = pods.n
		if conc > 0 || rps > 0 {
			lastLoad = now
		}

		if pods.n == 0 && atZeroWithLoad {
			// Requests held for a Revision at zero wait for its first pod: they stay
			// in flight until it is ready.
			conc = max(conc, held)
		}
		poke := pods.n == 0 && conc > 0 && !atZeroWithLoad
		atZeroWithLoad = pods.n == 0 && (atZeroWithLoad || conc > 0)
		held = 0
		if atZeroWithLoad {
			held = conc
		}
		ferry.Watch(key, set, int32(pods.n), tr.reachable)
		if poke {
			// The first request held for a Revision at zero: Ferry's gateway pokes,
			// Knative's activator sends a stat of one request at once and takes it out
			// of its next report; both decide at once.
			ferry.Poke(key.Namespace, key.Name)
			kb.record(now, 1, 1)
			// Knative's multiscaler ticks at once only for a Revision it last scaled
			// to 0; Ferry also for one it never decided (a new Revision's first
			// request), whose decision is then not compared.
			if kDesired == 0 {
				kres := kas.Scale(logger, now)
				if kres.ScaleValid {
					kDesired = kres.DesiredPodCount
				}
				ticks++
				if err := compare("poke", s, pods.n, set, ferry.Decision(key), kres, kDesired, kb, verbose); err != nil {
					return ticks, err
				}
			}
		}
		if conc > 0 || rps > 0 {
			ferry.Report(stats.Report{Time: now, Period: time.Second, Stats: []stats.Stat{{
				Namespace: key.Namespace, Revision: key.Name, AverageConcurrency: conc, Requests: rps,
			}}})
		}
		if pods.n > 0 || conc > 0 || rps > 0 || prevConc > 0 {
			// Knative scrapes every pod every second (zeros too). At zero only the
			// activator reports: every second while it has requests, and once more
			// for the first second without (then it forgets the Revision).
			c, q := conc, rps
			if poke {
				c, q = math.Max(conc-1, 0), math.Max(rps-1, 0)
			}
			kb.record(now, c, q)
			kLastWrite = now
		}
		prevConc = conc

		if s%2 == 0 { // Knative's and Ferry's tick
			ferry.DecideAll()
			kres := kas.Scale(logger, now)
			if kres.ScaleValid {
				kDesired = kres.DesiredPodCount
			}
			ticks++
			if err := compare("tick", s, pods.n, set, ferry.Decision(key), kres, kDesired, kb, verbose); err != nil {
				if kLastWrite.Before(now) {
					// Nothing reported this second: Ferry counts it as no load, Knative
					// leaves it out as a missed scrape (docs/autoscaling.md).
					return ticks, fmt.Errorf("%w: %v", errMissedSecond, err)
				}
				return ticks, err
			}
		}
		decided[s] = kDesired
	}
	return ticks, nil
}

func compare(what string, s, pods int, set decider.Settings, f decider.Decision, k kscaling.ScaleResult, kDesired int32, kb *knativeBuckets, verbose bool) error {
	if verbose {
		fmt.Printf("%4ds %s pods=%d ferry desired=%d ebc=%d stable=%.3f panic=%.3f panicking=%v | knative desired=%d ebc=%d valid=%v %s\n",
			s, what, pods, f.DesiredPods, f.ExcessBurstCapacity, f.StableValue, f.PanicValue, f.Panicking, kDesired, k.ExcessBurstCapacity, k.ScaleValid, kb.last)
	}
	switch {
	case f.DesiredPods != kDesired && (nearInteger(f.StableValue/set.Target) || nearInteger(f.PanicValue/set.Target)):
		return fmt.Errorf("%w: %s at %ds: ferry wants %d pods, knative %d", errRounding, what, s, f.DesiredPods, kDesired)
	case f.DesiredPods != kDesired:
		return fmt.Errorf("%s at %ds: ferry wants %d pods, knative %d (ferry's stable %.3f panic %.3f)",
			what, s, f.DesiredPods, kDesired, f.StableValue, f.PanicValue)
	case k.ScaleValid && pods > 0 && f.ExcessBurstCapacity != k.ExcessBurstCapacity && !roundingOnly(f, k, pods, set):
		// At zero Ferry skips idle Revisions and keeps their last decision's
		// excess burst capacity: it routes nothing (the gateway is always in
		// the path) and the next request decides anew.
		return fmt.Errorf("%s at %ds: excess burst capacity: ferry %d, knative %d", what, s, f.ExcessBurstCapacity, k.ExcessBurstCapacity)
	}
	return nil
}

// errRounding ends a trace where average/target is an integer up to float error, so
// that Knative v0.42.2's Floor to 6 decimals and Ferry's (and Knative's since) Round
// tip ceil(average/target) either way.
var errRounding = errors.New("an average on a pod boundary")

func nearInteger(x float64) bool { return math.Abs(x-math.Round(x)) < 1e-5 }

// roundingOnly: the excess burst capacities differ by one only because
// ready×total − TBC − panic is an integer up to float error. Knative v0.42.2 cuts
// averages to 6 decimals with Floor where Knative since (and Ferry) rounds, so the
// same average can floor either side of that integer.
func roundingOnly(f decider.Decision, k kscaling.ScaleResult, pods int, set decider.Settings) bool {
	x := float64(pods)*set.TotalValue - set.TargetBurstCapacity - f.PanicValue
	return abs(f.ExcessBurstCapacity-k.ExcessBurstCapacity) == 1 && nearInteger(x)
}

func abs(i int32) int32 {
	if i < 0 {
		return -i
	}
	return i
}

// sameSettings compares Ferry's resolved Settings with Knative's DeciderSpec and
// Metric for the same config and annotations.
func sameSettings(f decider.Settings, k kscaling.DeciderSpec, m kpav1alpha1.MetricSpec) error {
	var diffs []string
	check := func(name string, ferry, knative any) {
		if fmt.Sprint(ferry) != fmt.Sprint(knative) {
			diffs = append(diffs, fmt.Sprintf("%s: ferry %v, knative %v", name, ferry, knative))
		}
	}
	check("metric", f.Metric, k.ScalingMetric)
	check("target", f.Target, k.TargetValue)
	check("total", f.TotalValue, k.TotalValue)
	check("target-burst-capacity", f.TargetBurstCapacity, k.TargetBurstCapacity)
	check("panic-threshold", f.PanicThreshold, k.PanicThreshold)
	check("stable-window", f.StableWindow, k.StableWindow)
	check("panic-window", f.PanicWindow, m.PanicWindow)
	check("scale-down-delay", f.ScaleDownDelay, k.ScaleDownDelay)
	check("max-scale-up-rate", f.MaxScaleUpRate, k.MaxScaleUpRate)
	check("max-scale-down-rate", f.MaxScaleDownRate, k.MaxScaleDownRate)
	if k.ActivationScale > 1 || f.ActivationScale > 1 {
		check("activation-scale", f.ActivationScale, k.ActivationScale)
	}
	if len(diffs) > 0 {
		return errors.New("settings differ: " + strings.Join(diffs, "; "))
	}
	return nil
}

// podCount is Knative's view of the ready pods (resources.EndpointsCounter).
type podCount struct{ n int }

func (p *podCount) ReadyCount() (int, error)    { return p.n, nil }
func (p *podCount) NotReadyCount() (int, error) { return 0, nil }

// knativeBuckets is the part of Knative's MetricCollector the decider reads: the
// stable and panic buckets of one Revision, made as its collection makes them.
type knativeBuckets struct {
	metric                       string
	last                         string // the averages Knative's decider last read, for -v
	stable, panic, stableR, panR windowAverager
}

type windowAverager interface {
	Record(time.Time, float64)
	WindowAverage(time.Time) float64
	IsEmpty(time.Time) bool
}

func newKnativeBuckets(m *kpav1alpha1.Metric, metric string) *knativeBuckets {
	make := func(w time.Duration) windowAverager {
		if m.AggregationAlgorithm() == kautoscaling.MetricAggregationAlgorithmWeightedExponential {
			return kaggregation.NewWeightedFloat64Buckets(w, kconfig.BucketSize)
		}
		return kaggregation.NewTimedFloat64Buckets(w, kconfig.BucketSize)
	}
	return &knativeBuckets{metric: metric,
		stable: make(m.Spec.StableWindow), panic: make(m.Spec.PanicWindow),
		stableR: make(m.Spec.StableWindow), panR: make(m.Spec.PanicWindow)}
}

func (b *knativeBuckets) record(now time.Time, concurrency, rps float64) {
	b.stable.Record(now, concurrency)
	b.panic.Record(now, concurrency)
	b.stableR.Record(now, rps)
	b.panR.Record(now, rps)
}

// StableAndPanicConcurrency and StableAndPanicRPS answer as Knative's collector does
// for a Revision with a scrape target: no data when the stable window is empty.
func (b *knativeBuckets) StableAndPanicConcurrency(_ types.NamespacedName, now time.Time) (float64, float64, error) {
	if b.stable.IsEmpty(now) {
		return 0, 0, kmetrics.ErrNoData
	}
	st, pa := b.stable.WindowAverage(now), b.panic.WindowAverage(now)
	b.last = fmt.Sprintf("stable=%.3f panic=%.3f", st, pa)
	return st, pa, nil
}

func (b *knativeBuckets) StableAndPanicRPS(_ types.NamespacedName, now time.Time) (float64, float64, error) {
	if b.stableR.IsEmpty(now) {
		return 0, 0, kmetrics.ErrNoData
	}
	st, pa := b.stableR.WindowAverage(now), b.panR.WindowAverage(now)
	b.last = fmt.Sprintf("stable=%.3f panic=%.3f", st, pa)
	return st, pa, nil
}
