package scale

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ferry-serving/ferry/internal/admission"
	"github.com/ferry-serving/ferry/internal/explain"
)

// Sample is what one Service went through. Durations are measured from Start, the
// moment its create request was sent; zero means it did not happen.
type Sample struct {
	Index int
	Name  string
	// Namespace is the Service's namespace when the run spans several; empty when
	// it is the Result's Namespace.
	Namespace string
	// Start is when the create request was sent, since the run started.
	Start time.Duration
	// Created is how long the create request took (time-to-created).
	Created time.Duration
	// Ready is when the watch first saw Ready=True at the current generation.
	Ready time.Duration
	// Routed is when the gateway first routed a request to the Service's revision.
	Routed time.Duration
	// RouteAttempts is how many requests the gateway probe sent.
	RouteAttempts int
	// LastAnswer is the gateway's last answer when it never routed.
	LastAnswer string
	// Error is why the create failed.
	Error string
	// CreateWarnings are the warnings the create was answered with (Ferry's admission
	// says so when it held the create).
	CreateWarnings []string
	// Stuck says the Service missed its deadline; Explanation says where it stopped.
	Stuck       bool
	Explanation *explain.Explanation
	// Milestones say when it reached each step of the chain (with Options.Phases).
	Milestones *Milestones
}

type sampleJSON struct {
	Index          int                  `json:"index"`
	Name           string               `json:"name"`
	Namespace      string               `json:"namespace,omitempty"`
	Start          float64              `json:"startSeconds"`
	Created        *float64             `json:"timeToCreatedSeconds"`
	Ready          *float64             `json:"timeToReadySeconds"`
	Routed         *float64             `json:"timeToRoutedSeconds"`
	RouteAttempts  int                  `json:"routeAttempts,omitempty"`
	LastAnswer     string               `json:"lastGatewayAnswer,omitempty"`
	Error          string               `json:"error,omitempty"`
	CreateWarnings []string             `json:"createWarnings,omitempty"`
	Stuck          bool                 `json:"stuck"`
	Explanation    *explain.Explanation `json:"explanation,omitempty"`
	// Milestones are in seconds since the create request, by milestone name.
	Milestones map[string]float64 `json:"milestonesSeconds,omitempty"`
}

// seconds is d in seconds to the microsecond, nil for 0 (did not happen).
func seconds(d time.Duration) *float64 {
	if d == 0 {
		return nil
	}
	s := math.Round(d.Seconds()*1e6) / 1e6
	return &s
}

func fromSeconds(s *float64) time.Duration {
	if s == nil {
		return 0
	}
	return time.Duration(math.Round(*s * 1e9))
}

// MarshalJSON writes durations as seconds; null stands for "did not happen".
func (s Sample) MarshalJSON() ([]byte, error) {
	start := 0.0
	if p := seconds(s.Start); p != nil {
		start = *p
	}
	j := sampleJSON{Index: s.Index, Name: s.Name, Namespace: s.Namespace, Start: start, Created: seconds(s.Created), Ready: seconds(s.Ready),
		Routed: seconds(s.Routed), RouteAttempts: s.RouteAttempts, LastAnswer: s.LastAnswer, Error: s.Error, CreateWarnings: s.CreateWarnings, Stuck: s.Stuck, Explanation: s.Explanation}
	if s.Milestones != nil {
		j.Milestones = map[string]float64{}
		for m, d := range s.Milestones {
			if p := seconds(d); p != nil {
				j.Milestones[Milestone(m).String()] = *p
			}
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (s *Sample) UnmarshalJSON(b []byte) error {
	var j sampleJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = Sample{Index: j.Index, Name: j.Name, Namespace: j.Namespace, Start: fromSeconds(&j.Start), Created: fromSeconds(j.Created), Ready: fromSeconds(j.Ready),
		Routed: fromSeconds(j.Routed), RouteAttempts: j.RouteAttempts, LastAnswer: j.LastAnswer, Error: j.Error, CreateWarnings: j.CreateWarnings, Stuck: j.Stuck, Explanation: j.Explanation}
	if j.Milestones != nil {
		s.Milestones = &Milestones{}
		for m := Milestone(0); m < numMilestones; m++ {
			if v, ok := j.Milestones[m.String()]; ok {
				s.Milestones[m] = fromSeconds(&v)
			}
		}
	}
	return nil
}

// Result is a whole run.
type Result struct {
	RunID string
	// Namespace is the run's namespace, the first of Namespaces when it has several.
	Namespace string
	// Namespaces are all of the run's namespaces (see AllNamespaces), Namespace
	// first; the i-th Service is in Namespaces[NamespaceIndex(i, len(Namespaces))].
	Namespaces []string
	// NamespaceCreated says the run created Namespace (Cleanup deletes it).
	NamespaceCreated bool
	// NamespacesCreated are those of Namespaces the run created (Cleanup deletes
	// them).
	NamespacesCreated []string
	N                 int
	Concurrency       int
	Image             string
	TimeoutPerService time.Duration
	Gateway           string
	// InProcess says the control plane ran in this process (Process is about it).
	InProcess bool
	Started   time.Time
	// Total is the time from the first create to the last Ready, or to the end of the
	// run when some Service never became Ready.
	Total time.Duration
	// TotalRouted is the time to the last routed response, when all were routed.
	TotalRouted time.Duration
	AllReady    bool
	Samples     []Sample

	// Writes are the API server's write requests during the run, by series
	// (apiserver_request_total deltas): every client's, Ferry's, the controller
	// manager's, the scheduler's, kwok's, the scale run's own creates.
	Writes Counts
	// WritesError says why Writes is missing.
	WritesError string
	// FerryWrites are the writes Ferry's own clients made, counted client-side, when
	// Ferry ran in-process with a WriteCounter.
	FerryWrites Counts
	// Process is the process's CPU and memory, when the control plane ran in it.
	Process *ProcessUsage
	// QueueWaits are how long changes waited in each controller's queue, when the
	// controller's metrics were at hand (Options.Metrics); QueueWaitsError says why not.
	QueueWaits      []QueueWait
	QueueWaitsError string
	// CPU is the run's CPU profile by component, when one was taken.
	CPU *CPUBreakdown
	// Floor is the plain-write baseline, when it was measured.
	Floor *FloorResult
	// Notes are things a reader of the report should know (measurement caveats).
	Notes []string
}

// Stuck are the samples that missed their deadline.
func (r *Result) Stuck() []Sample {
	var out []Sample
	for _, s := range r.Samples {
		if s.Stuck {
			out = append(out, s)
		}
	}
	return out
}

// FloorWithout says why the write floor must not be measured after this run, or ""
// when it may. A run with Services past their deadline ended at the deadline, not
// when the burst was done, and the cluster is still at work on them: a floor taken
// then shares the API server with that work and compares nothing.
func (r *Result) FloorWithout() string {
	if n := len(r.Stuck()); n > 0 {
		return fmt.Sprintf("the write floor was not measured: %d of %d Services missed their deadline, so the run's time is not the burst's, and a floor taken now would share the API server with their unfinished work", n, r.N)
	}
	return ""
}

// ReadyTimes, RoutedTimes and CreatedTimes are the durations of the Services that
// got there.
func (r *Result) ReadyTimes() []time.Duration {
	return r.pick(func(s Sample) time.Duration { return s.Ready })
}
func (r *Result) RoutedTimes() []time.Duration {
	return r.pick(func(s Sample) time.Duration { return s.Routed })
}
func (r *Result) CreatedTimes() []time.Duration {
	return r.pick(func(s Sample) time.Duration { return s.Created })
}

func (r *Result) pick(f func(Sample) time.Duration) []time.Duration {
	var out []time.Duration
	for _, s := range r.Samples {
		if d := f(s); d > 0 {
			out = append(out, d)
		}
	}
	return out
}

// ReadyCount is the number of Services that became Ready.
func (r *Result) ReadyCount() int { return len(r.ReadyTimes()) }

// Throughput is Ready Services per second of Total.
func (r *Result) Throughput() float64 {
	if r.Total <= 0 {
		return 0
	}
	return float64(r.ReadyCount()) / r.Total.Seconds()
}

// WritesPerService is the API server's writes divided by N.
func (r *Result) WritesPerService() float64 {
	if r.N == 0 {
		return 0
	}
	return float64(r.Writes.Total()) / float64(r.N)
}

// FerryWritesPerService is Ferry's own writes divided by N.
func (r *Result) FerryWritesPerService() float64 {
	if r.N == 0 {
		return 0
	}
	return float64(r.FerryWrites.Total()) / float64(r.N)
}

// StuckGroups counts the stuck Services by the kind of their culprit, most first.
func (r *Result) StuckGroups() []StuckGroup {
	byKind := map[string]*StuckGroup{}
	var order []string
	for _, s := range r.Samples {
		if !s.Stuck {
			continue
		}
		kind := "unexplained"
		if s.Explanation != nil && s.Explanation.Kind != "" {
			kind = s.Explanation.Kind
		}
		g := byKind[kind]
		if g == nil {
			g = &StuckGroup{Kind: kind}
			byKind[kind] = g
			order = append(order, kind)
		}
		g.Count++
		if len(g.Examples) < 3 {
			g.Examples = append(g.Examples, s.Name)
		}
	}
	out := make([]StuckGroup, 0, len(order))
	for _, k := range order {
		out = append(out, *byKind[k])
	}
	slices.SortStableFunc(out, func(a, b StuckGroup) int { return b.Count - a.Count })
	return out
}

// StuckGroup is a number of stuck Services whose culprit is of one kind.
type StuckGroup struct {
	Kind     string   `json:"kind"`
	Count    int      `json:"count"`
	Examples []string `json:"examples"`
}

// distJSON is a Distribution in seconds.
type distJSON struct {
	Count int     `json:"count"`
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

func toDistJSON(d Distribution) distJSON {
	f := func(x time.Duration) float64 { return math.Round(x.Seconds()*1e6) / 1e6 }
	return distJSON{Count: d.Count, Min: f(d.Min), Mean: f(d.Mean), P50: f(d.P50), P90: f(d.P90), P95: f(d.P95), P99: f(d.P99), Max: f(d.Max)}
}

type writeSeries struct {
	WriteKey
	Count int64 `json:"count"`
}

func seriesOf(c Counts) []writeSeries {
	out := make([]writeSeries, 0, len(c))
	for k, v := range c {
		out = append(out, writeSeries{k, v})
	}
	slices.SortFunc(out, func(a, b writeSeries) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.ResourceName(), b.ResourceName()), cmp.Compare(a.Verb, b.Verb))
	})
	return out
}

// MarshalJSON writes the run with its summaries, durations in seconds.
func (r *Result) MarshalJSON() ([]byte, error) {
	type summary struct {
		TimeToCreated         distJSON      `json:"timeToCreated"`
		TimeToReady           distJSON      `json:"timeToReady"`
		TimeToRouted          distJSON      `json:"timeToRouted"`
		TotalSeconds          float64       `json:"totalSeconds"`
		TotalRoutedSeconds    float64       `json:"totalRoutedSeconds,omitempty"`
		AllReady              bool          `json:"allReady"`
		Ready                 int           `json:"ready"`
		Stuck                 int           `json:"stuck"`
		Throughput            float64       `json:"throughputPerSecond"`
		Writes                int64         `json:"writes"`
		WritesPerService      float64       `json:"writesPerService"`
		FerryWrites           int64         `json:"ferryWrites,omitempty"`
		FerryWritesPerService float64       `json:"ferryWritesPerService,omitempty"`
		StuckGroups           []StuckGroup  `json:"stuckGroups,omitempty"`
		CreationOrder         CreationOrder `json:"creationOrder"`
	}
	return json.Marshal(struct {
		RunID             string        `json:"runID"`
		Namespace         string        `json:"namespace"`
		Namespaces        []string      `json:"namespaces"`
		N                 int           `json:"n"`
		Concurrency       int           `json:"concurrency"`
		Image             string        `json:"image"`
		TimeoutPerService float64       `json:"timeoutPerServiceSeconds"`
		Gateway           string        `json:"gateway,omitempty"`
		InProcess         bool          `json:"inProcess"`
		Started           time.Time     `json:"started"`
		Summary           summary       `json:"summary"`
		Writes            []writeSeries `json:"writes"`
		WritesError       string        `json:"writesError,omitempty"`
		FerryWrites       []writeSeries `json:"ferryWrites,omitempty"`
		Process           *ProcessUsage `json:"process,omitempty"`
		QueueWaits        []QueueWait   `json:"queueWaits,omitempty"`
		QueueWaitsError   string        `json:"queueWaitsError,omitempty"`
		CPU               *CPUBreakdown `json:"cpuByComponent,omitempty"`
		Floor             *FloorResult  `json:"floor,omitempty"`
		Notes             []string      `json:"notes,omitempty"`
		Samples           []Sample      `json:"samples"`
	}{
		RunID: r.RunID, Namespace: r.Namespace, Namespaces: r.AllNamespaces(), N: r.N, Concurrency: r.Concurrency, Image: r.Image,
		TimeoutPerService: r.TimeoutPerService.Seconds(), Gateway: r.Gateway, InProcess: r.InProcess, Started: r.Started,
		Summary: summary{
			TimeToCreated: toDistJSON(Summarize(r.CreatedTimes())), TimeToReady: toDistJSON(Summarize(r.ReadyTimes())),
			TimeToRouted: toDistJSON(Summarize(r.RoutedTimes())), TotalSeconds: r.Total.Seconds(), TotalRoutedSeconds: r.TotalRouted.Seconds(),
			AllReady: r.AllReady, Ready: r.ReadyCount(), Stuck: len(r.Stuck()), Throughput: r.Throughput(),
			Writes: r.Writes.Total(), WritesPerService: r.WritesPerService(), FerryWrites: r.FerryWrites.Total(),
			FerryWritesPerService: r.FerryWritesPerService(), StuckGroups: r.StuckGroups(),
			CreationOrder: r.CreationOrder(),
		},
		Writes: seriesOf(r.Writes), WritesError: r.WritesError, FerryWrites: seriesOf(r.FerryWrites),
		Process: r.Process, QueueWaits: r.QueueWaits, QueueWaitsError: r.QueueWaitsError, CPU: r.CPU, Floor: r.Floor, Notes: r.Notes, Samples: r.Samples,
	})
}

// HeldCreates counts the creates that Ferry's admission held (package backpressure),
// and returns the longest hold's warning.
func (r *Result) HeldCreates() (int, string) {
	n, longest, warning := 0, time.Duration(0), ""
	for _, s := range r.Samples {
		for _, w := range s.CreateWarnings {
			if strings.HasPrefix(w, admission.HeldWarningPrefix) {
				n++
				if s.Created > longest {
					longest, warning = s.Created, w
				}
			}
		}
	}
	return n, warning
}
