package soak

import (
	"fmt"
	"math/bits"
	"regexp"
	"sort"
	"sync"
	"time"
)

// answer is one request the load sent and what came back.
type answer struct {
	target     string // the load target's name (a Service, or Service/tag)
	host       string
	start, end time.Time
	status     int    // 0: no HTTP answer
	err        string // the transport's error, if no answer
	revision   string // the Revision that answered, from the body ("" if it does not say)
	// backend is what a front end's back end answered it, for the front end's answers.
	backend *answer
}

// Verdicts of an answer.
const (
	verdictOK          = "ok"
	verdictFailed      = "failed"         // an error, 5xx or other status a client of Knative would not see
	verdictHostMoved   = "host moved"     // 404 on a host the Route had just moved away from
	verdictWrongRev    = "wrong revision" // answered by a Revision no traffic target named then
	verdictUnjudgeable = "unnamed"        // 200 from a program that does not say its Revision
)

// revisionInBody finds the Revision an answer names: Ferry's simulated pods say
// "Hello from revision X", the soak's program and Ferry's examples "Revision X".
var revisionInBody = regexp.MustCompile(`[Rr]evision (\S+?)[,)\s]`)

func revisionOf(body []byte) string {
	if m := revisionInBody.FindSubmatch(body); m != nil {
		return string(m[1])
	}
	return ""
}

// frontendAnswer is examples/frontend's answer: its Revision, the URL it asked, and
// what the back end answered.
var frontendAnswer = regexp.MustCompile(`(?s)^frontend (\S+) asked (\S+) \((\d+) in [^)]*\): (.*)$`)

// parseFrontend fills a front end's answer from its body: its own Revision, and the
// back end's status, host and Revision as the front end saw them.
func parseFrontend(a *answer, body []byte) {
	m := frontendAnswer.FindSubmatch(body)
	if m == nil {
		a.revision = revisionOf(body)
		return
	}
	a.revision = string(m[1])
	b := &answer{target: a.target + " → back end", host: hostOf(string(m[2])), start: a.start, end: a.end, revision: revisionOf(m[4])}
	fmt.Sscan(string(m[3]), &b.status)
	a.backend = b
}

// judge gives an answer's verdict against the traffic log, grace either side of it.
func judge(a answer, traffic *trafficLog, grace time.Duration) string {
	if a.backend != nil && a.status == 200 {
		// The front end answered: its back end's answer is the verdict, then its own.
		if v := judge(*a.backend, traffic, grace); v != verdictOK && v != verdictUnjudgeable {
			return v
		}
	}
	from, to := a.start.Add(-grace), a.end.Add(grace)
	switch {
	case a.status == 200 && a.revision == "":
		return verdictUnjudgeable
	case a.status == 200 && traffic.named(a.host, a.revision, from, to):
		return verdictOK
	case a.status == 200:
		return verdictWrongRev
	case a.status == 404 && traffic.moved(a.host, from, to):
		return verdictHostMoved
	}
	return verdictFailed
}

// Recorder keeps what every request got: counts per target, status, Revision and
// minute, a latency histogram, and the first failures in full. Answers that cannot be
// judged until the traffic log has seen the moments after them wait in pending.
type recorder struct {
	mu      sync.Mutex
	started time.Time
	grace   time.Duration
	traffic *trafficLog
	targets map[string]*TargetStats
	minutes []MinuteStats
	bad     []Bad
	badN    map[string]int
	pending []answer
	// stopped, once set, drops answers that end after it (an interrupted run).
	stopped time.Time
}

// stopJudging drops the answers that end after at.
func (r *recorder) stopJudging(at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = at
}

// TargetStats is what one load target got over the run.
type TargetStats struct {
	Requests  int            `json:"requests"`
	Statuses  map[string]int `json:"statuses"`  // "200", "502", "error"
	Revisions map[string]int `json:"revisions"` // which Revision answered the 200s
	Verdicts  map[string]int `json:"verdicts"`
	latency   histogram
	P50, P99  time.Duration `json:"-"`
	Max       time.Duration `json:"max_ns"`
}

// MinuteStats is one minute of the run, for the report's chart.
type MinuteStats struct {
	Requests int `json:"requests"`
	Failed   int `json:"failed"`
}

// Bad is a failed request or a wrong Revision, as the report lists them.
type Bad struct {
	At      time.Time     `json:"at"`
	Target  string        `json:"target"`
	Host    string        `json:"host"`
	Verdict string        `json:"verdict"`
	Status  int           `json:"status"`
	Error   string        `json:"error,omitempty"`
	Took    time.Duration `json:"took_ns"`
	Answer  string        `json:"revision,omitempty"`
}

func (b Bad) String() string {
	what := fmt.Sprintf("status %d", b.Status)
	if b.Status == 0 {
		what = b.Error
	}
	if b.Verdict == verdictWrongRev {
		what = "answered by " + b.Answer
	}
	if b.Status != 0 && b.Error != "" {
		what += ": " + b.Error
	}
	return fmt.Sprintf("%s %s (%s): %s: %s after %s", b.At.Format("15:04:05.000"), b.Target, b.Host, b.Verdict, what, b.Took.Round(time.Millisecond))
}

// maxBadListed bounds how many bad requests the report lists one by one.
const maxBadListed = 200

func newRecorder(started time.Time, traffic *trafficLog, grace time.Duration) *recorder {
	return &recorder{started: started, traffic: traffic, grace: grace, targets: map[string]*TargetStats{}, badN: map[string]int{}}
}

// add records an answer; one that looks wrong now is judged again at the end, when
// the traffic log has the moments after it.
func (r *recorder) add(a answer) {
	v := judge(a, r.traffic, r.grace)
	r.mu.Lock()
	defer r.mu.Unlock()
	if v == verdictWrongRev || v == verdictFailed && (a.status == 404 || a.backend != nil && a.backend.status == 404) {
		r.pending = append(r.pending, a)
		return
	}
	r.count(a, v)
}

// settle judges the answers that waited.
func (r *recorder) settle() {
	r.mu.Lock()
	pending := r.pending
	r.pending = nil
	r.mu.Unlock()
	for _, a := range pending {
		v := judge(a, r.traffic, r.grace)
		r.mu.Lock()
		r.count(a, v)
		r.mu.Unlock()
	}
}

func (r *recorder) count(a answer, v string) {
	if !r.stopped.IsZero() && a.end.After(r.stopped) {
		return
	}
	t := r.targets[a.target]
	if t == nil {
		t = &TargetStats{Statuses: map[string]int{}, Revisions: map[string]int{}, Verdicts: map[string]int{}}
		r.targets[a.target] = t
	}
	t.Requests++
	status := fmt.Sprint(a.status)
	if a.status == 0 {
		status = "error"
	}
	t.Statuses[status]++
	if a.status == 200 && a.revision != "" {
		t.Revisions[a.revision]++
	}
	t.Verdicts[v]++
	took := a.end.Sub(a.start)
	t.latency.add(took)
	t.Max = max(t.Max, took)
	m := int(a.start.Sub(r.started) / time.Minute)
	for len(r.minutes) <= m {
		r.minutes = append(r.minutes, MinuteStats{})
	}
	r.minutes[m].Requests++
	if v == verdictFailed || v == verdictWrongRev {
		r.minutes[m].Failed++
		r.badN[v]++
		if len(r.bad) < maxBadListed {
			b := Bad{At: a.start, Target: a.target, Host: a.host, Verdict: v, Status: a.status, Error: a.err, Took: took, Answer: a.revision}
			if a.backend != nil && a.status == 200 {
				b.Error = fmt.Sprintf("its back end %s answered %d from Revision %q", a.backend.host, a.backend.status, a.backend.revision)
			}
			r.bad = append(r.bad, b)
		}
	}
}

// totals are the requests judged so far, and the failed and wrong ones among them.
func (r *recorder) totals() (requests, failed, wrong int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.targets {
		requests += t.Requests
	}
	return requests, r.badN[verdictFailed], r.badN[verdictWrongRev]
}

// snapshot is the recorder's numbers, percentiles computed.
func (r *recorder) snapshot() (map[string]TargetStats, []MinuteStats, []Bad, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	targets := map[string]TargetStats{}
	for name, t := range r.targets {
		c := *t
		c.P50, c.P99 = t.latency.quantile(0.5), t.latency.quantile(0.99)
		targets[name] = c
	}
	bad := append([]Bad(nil), r.bad...)
	sort.Slice(bad, func(i, j int) bool { return bad[i].At.Before(bad[j].At) })
	badN := map[string]int{}
	for k, v := range r.badN {
		badN[k] = v
	}
	return targets, append([]MinuteStats(nil), r.minutes...), bad, badN
}

// histogram counts latencies in power-of-two microsecond buckets: an hour of
// requests in 40 counters, quantiles within a factor of two.
type histogram struct{ buckets [40]int }

func (h *histogram) add(d time.Duration) {
	us := uint64(max(d.Microseconds(), 1))
	h.buckets[min(bits.Len64(us), len(h.buckets)-1)]++
}

// quantile is the upper bound of the bucket holding the q-th latency.
func (h *histogram) quantile(q float64) time.Duration {
	total := 0
	for _, n := range h.buckets {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank, seen := int(q*float64(total-1))+1, 0
	for i, n := range h.buckets {
		if seen += n; seen >= rank {
			return time.Duration(uint64(1)<<i) * time.Microsecond
		}
	}
	return 0
}
