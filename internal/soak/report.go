package soak

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// Report is what a soak found.
type Report struct {
	Namespace    string                 `json:"namespace"`
	Started      time.Time              `json:"started"`
	Ended        time.Time              `json:"ended"`
	Duration     time.Duration          `json:"duration_ns"`
	Cycle        time.Duration          `json:"cycle_ns"`
	Faults       []Fault                `json:"faults"`
	Rate         float64                `json:"rate"`
	ReadyBound   time.Duration          `json:"ready_bound_ns"`
	Targets      map[string]TargetStats `json:"targets"`
	Minutes      []MinuteStats          `json:"minutes"`
	Bad          []Bad                  `json:"bad"`
	BadCounts    map[string]int         `json:"bad_counts"`
	Late         []Late                 `json:"late"`
	Events       []Event                `json:"events"`
	Memory       []MemorySeries         `json:"memory"`
	MemoryJudged []MemoryVerdict        `json:"memory_verdicts"`
	MostPods     []PodPeak              `json:"most_pods"` // the Revisions that asked for the most pods
	PodBound     int32                  `json:"pod_bound"`
	ToZero       int                    `json:"to_zero"`
	FromZero     int                    `json:"from_zero"`
	Objects      int                    `json:"objects"`
	Programs     bool                   `json:"programs"` // pods ran real programs
	Notes        []string               `json:"notes"`
	Failures     []string               `json:"failures"` // why the run failed; empty: passed
}

// report judges the run.
func (r *run) report(ended time.Time) *Report {
	targets, minutes, bad, badN := r.requests.snapshot()
	r.mu.Lock()
	rep := &Report{Namespace: r.o.Namespace, Started: r.started, Ended: ended, Duration: ended.Sub(r.started), Cycle: r.o.Cycle,
		Faults: r.o.Faults, Rate: r.o.Rate, ReadyBound: r.o.ReadyBound, Targets: targets, Minutes: minutes, Bad: bad, BadCounts: badN,
		Events: slices.Clone(r.events), MostPods: r.pods.top(3), PodBound: podBound, ToZero: r.toZero, FromZero: r.fromZero, Objects: r.readiness.count(), Programs: r.o.Programs}
	crashUnseen := r.crashUnseen
	r.mu.Unlock()
	rep.Late = r.readiness.late(ended, r.o.ReadyBound, r.notJudged)
	rep.Memory = r.memory.snapshot()
	for _, s := range rep.Memory {
		rep.MemoryJudged = append(rep.MemoryJudged, trend(s))
	}
	rep.judge(crashUnseen)
	if r.o.Processes == nil {
		rep.Notes = append(rep.Notes, "memory: the processes are not visible from here (a cluster): not judged")
	}
	return rep
}

// judge fills Failures from the findings.
func (rep *Report) judge(crashUnseen int) {
	total := 0
	for _, t := range rep.Targets {
		total += t.Requests
	}
	if total == 0 {
		rep.Failures = append(rep.Failures, "no request was answered: the load never reached the gateway")
	}
	if n := rep.BadCounts[verdictFailed]; n > 0 {
		rep.Failures = append(rep.Failures, fmt.Sprintf("%d of %d requests failed", n, total))
	}
	if n := rep.BadCounts[verdictWrongRev]; n > 0 {
		rep.Failures = append(rep.Failures, fmt.Sprintf("%d answers came from a Revision no traffic target named then", n))
	}
	if len(rep.Late) > 0 {
		rep.Failures = append(rep.Failures, fmt.Sprintf("%d times an object stayed not Ready longer than %s after its latest change", len(rep.Late), rep.ReadyBound))
	}
	for _, p := range rep.MostPods {
		if p.Pods > rep.PodBound {
			rep.Failures = append(rep.Failures, fmt.Sprintf("%s: the load asks for about 1, the bound is %d", p, rep.PodBound))
		}
	}
	// zero is idle for a cycle at a time: with a minute or more (its 6 s window and
	// Knative's 30 s scale-to-zero grace period), it must reach zero in four cycles.
	if rep.Cycle >= time.Minute && rep.Duration >= 4*rep.Cycle && rep.ToZero == 0 && rep.Programs {
		rep.Failures = append(rep.Failures, "the zero Service never scaled to zero while idle for a cycle at a time")
	}
	if crashUnseen > 0 {
		rep.Failures = append(rep.Failures, fmt.Sprintf("%d crashing programs were not shown on their Service as Ready False within %s", crashUnseen, rep.ReadyBound))
	}
	for _, v := range rep.MemoryJudged {
		if v.Failed {
			rep.Failures = append(rep.Failures, fmt.Sprintf("memory of %s grew: %s", v.Series, v.Message))
		}
	}
	for _, e := range rep.Events {
		if e.Err != "" && !strings.Contains(e.Err, ErrUnsupported.Error()) {
			rep.Failures = append(rep.Failures, fmt.Sprintf("the soak could not carry out a %s (%s): %s", e.Kind, e.What, e.Err))
		}
	}
}

// Failed says whether the run found anything wrong.
func (rep *Report) Failed() bool { return len(rep.Failures) > 0 }

// WriteText writes the summary people read.
func (rep *Report) WriteText(w io.Writer) {
	verdict := "PASSED"
	if rep.Failed() {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "Soak %s: %s in namespace %s, %s to %s, a change every %s, faults %v, %.0f requests/s\n",
		verdict, rep.Duration.Round(time.Second), rep.Namespace, rep.Started.Format(time.DateTime), rep.Ended.Format(time.TimeOnly), rep.Cycle, rep.Faults, rep.Rate)
	for _, f := range rep.Failures {
		fmt.Fprintf(w, "  FAIL: %s\n", f)
	}
	names := make([]string, 0, len(rep.Targets))
	total := 0
	for n, t := range rep.Targets {
		names = append(names, n)
		total += t.Requests
	}
	sort.Strings(names)
	fmt.Fprintf(w, "\nRequests: %d (failed %d, wrong Revision %d, 404 on a host just moved %d)\n", total,
		rep.BadCounts[verdictFailed], rep.BadCounts[verdictWrongRev], countVerdict(rep.Targets, verdictHostMoved))
	fmt.Fprintf(w, "  %-18s %9s %9s %9s %9s  %s\n", "target", "requests", "p50", "p99", "max", "statuses; Revisions that answered")
	for _, n := range names {
		t := rep.Targets[n]
		fmt.Fprintf(w, "  %-18s %9d %9s %9s %9s  %s; %d Revisions\n", n, t.Requests, t.P50, t.P99, t.Max.Round(time.Millisecond), counts(t.Statuses), len(t.Revisions))
	}
	fmt.Fprintf(w, "\nPods: the most any Revision asked for (bound %d):\n", rep.PodBound)
	for _, p := range rep.MostPods {
		fmt.Fprintf(w, "  %s\n", p)
	}
	fmt.Fprintf(w, "\nScale to zero and back: the zero Service went to no pods %d times and came back %d times\n", rep.ToZero, rep.FromZero)
	fmt.Fprintf(w, "\nReadiness: %d objects followed; %d spans not Ready past %s after their latest change\n", rep.Objects, len(rep.Late), rep.ReadyBound)
	for _, l := range rep.Late {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintln(w, "\nMemory (resident):")
	if len(rep.MemoryJudged) == 0 {
		fmt.Fprintln(w, "  not followed")
	}
	for _, v := range rep.MemoryJudged {
		fmt.Fprintf(w, "  %s: %s\n", v.Series, v.Message)
	}
	fmt.Fprintln(w, "\nWhat the soak did:")
	for _, e := range rep.Events {
		status := ""
		if e.Err != "" {
			status = " — " + e.Err
		}
		fmt.Fprintf(w, "  %7s %-6s %s (%s)%s\n", e.At.Sub(rep.Started).Round(time.Second), e.Kind, e.What, e.Took.Round(100*time.Millisecond), status)
	}
	if len(rep.Bad) > 0 {
		fmt.Fprintf(w, "\nBad requests (the first %d):\n", len(rep.Bad))
		for _, b := range rep.Bad {
			fmt.Fprintf(w, "  %s\n", b)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "\nNote: %s\n", n)
	}
}

func countVerdict(targets map[string]TargetStats, v string) int {
	n := 0
	for _, t := range targets {
		n += t.Verdicts[v]
	}
	return n
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s×%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

// WriteFiles writes summary.txt, report.json and report.html into dir.
func (rep *Report) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []error
	if f, err := os.Create(filepath.Join(dir, "summary.txt")); err == nil {
		rep.WriteText(f)
		errs = append(errs, f.Close())
	} else {
		errs = append(errs, err)
	}
	if b, err := json.MarshalIndent(rep, "", " "); err == nil {
		errs = append(errs, os.WriteFile(filepath.Join(dir, "report.json"), b, 0o644))
	} else {
		errs = append(errs, err)
	}
	if f, err := os.Create(filepath.Join(dir, "report.html")); err == nil {
		errs = append(errs, rep.writeHTML(f), f.Close())
	} else {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (rep *Report) writeHTML(w io.Writer) error {
	var text strings.Builder
	rep.WriteText(&text)
	return htmlReport.Execute(w, struct {
		*Report
		Text     string
		Requests template.HTML
		Memory   template.HTML
	}{rep, text.String(), minutesChart(rep.Minutes), memoryChart(rep.Memory)})
}

var htmlReport = template.Must(template.New("soak").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>ferry soak</title>
<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:70em}pre{background:#f6f6f6;padding:1em;overflow:auto}svg{background:#fafafa}</style>
</head><body>
<h1>ferry soak: {{if .Failures}}FAILED{{else}}PASSED{{end}}</h1>
<h2>Requests per minute (red: failed or wrong Revision)</h2>
{{.Requests}}
<h2>Anonymous resident memory per process (judged; all resident memory is in report.json)</h2>
{{.Memory}}
<h2>Summary</h2>
<pre>{{.Text}}</pre>
</body></html>
`))

// minutesChart draws requests (grey) and bad ones (red) per minute as bars.
func minutesChart(ms []MinuteStats) template.HTML {
	const width, height = 900, 160
	if len(ms) == 0 {
		return "<p>no requests</p>"
	}
	top := 1
	for _, m := range ms {
		top = max(top, m.Requests)
	}
	bar := float64(width) / float64(len(ms))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg width="%d" height="%d" role="img">`, width, height+20)
	for i, m := range ms {
		h := float64(m.Requests) / float64(top) * height
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#999"><title>minute %d: %d requests, %d bad</title></rect>`,
			float64(i)*bar, height-h, max(bar-1, 1), h, i, m.Requests, m.Failed)
		if m.Failed > 0 {
			fh := max(float64(m.Failed)/float64(top)*height, 3)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#d22"/>`, float64(i)*bar, height-fh, max(bar-1, 1), fh)
		}
	}
	fmt.Fprintf(&b, `<text x="0" y="%d" font-size="12">0</text><text x="%d" y="%d" font-size="12" text-anchor="end">%d min</text></svg>`, height+15, width, height+15, len(ms))
	return template.HTML(b.String())
}

// memoryChart draws each series. anonymous resident memory as a line over the run.
func memoryChart(series []MemorySeries) template.HTML {
	const width, height = 900, 200
	var first, last time.Time
	var top uint64 = 1
	for _, s := range series {
		for _, p := range s.Samples {
			if first.IsZero() || p.At.Before(first) {
				first = p.At
			}
			if p.At.After(last) {
				last = p.At
			}
			top = max(top, p.Anon)
		}
	}
	span := last.Sub(first)
	if span <= 0 {
		return "<p>not followed</p>"
	}
	colours := []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg width="%d" height="%d" role="img">`, width, height+20)
	// One colour per process name: a restarted process's incarnations continue its line.
	colourOf := map[string]string{}
	for _, s := range series {
		c, ok := colourOf[s.Name]
		if !ok {
			c = colours[len(colourOf)%len(colours)]
			fmt.Fprintf(&b, `<text x="5" y="%d" font-size="12" fill="%s">%s</text>`, 14+14*len(colourOf), c, template.HTMLEscapeString(s.Name))
			colourOf[s.Name] = c
		}
		var pts []string
		for _, p := range s.Samples {
			x := float64(p.At.Sub(first)) / float64(span) * width
			y := height - float64(p.Anon)/float64(top)*height
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" points="%s"><title>%s (pid %d)</title></polyline>`, c, strings.Join(pts, " "), template.HTMLEscapeString(s.Name), s.PID)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" text-anchor="end">top %.0f MiB, %s</text></svg>`, width, height+15, float64(top)/(1<<20), span.Round(time.Second))
	return template.HTML(b.String())
}
