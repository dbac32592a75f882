package scale

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// RenderHTML writes a self-contained report: the headline numbers, the CDF of
// time-to-Ready (and -routed), the timeline of created/Ready counts, the writes by
// resource, the process's usage, the floor and every stuck Service's explanation.
// Charts are inline SVG; nothing is fetched.
func RenderHTML(w io.Writer, r *Result) error {
	ready := Summarize(r.ReadyTimes())
	data := htmlData{R: r, Ready: ready, Created: Summarize(r.CreatedTimes()), Routed: Summarize(r.RoutedTimes()),
		Stuck: r.Stuck(), Groups: r.StuckGroups(), Verbs: r.Writes.Verbs(), Namespaces: describeNamespaces(r.AllNamespaces())}
	data.Cards = []card{
		{"Ready", fmt.Sprintf("%d / %d", r.ReadyCount(), r.N), okClass(r.AllReady)},
		{"p50 to Ready", fmtDur(ready.P50), ""},
		{"p95 to Ready", fmtDur(ready.P95), ""},
		{"p99 to Ready", fmtDur(ready.P99), ""},
		{"total", fmtDur(r.Total), ""},
		{"throughput", fmt.Sprintf("%.1f /s", r.Throughput()), ""},
	}
	if o := r.CreationOrder(); o != (CreationOrder{}) {
		data.Cards = append(data.Cards, card{"p50 / total", fmt.Sprintf("%.2f", o.P50OverTotal), ""},
			card{"creation-order ρ", fmt.Sprintf("%.2f", o.RankCorrelation), ""})
	}
	if r.WritesError == "" {
		data.Cards = append(data.Cards, card{"API writes / ksvc", fmt.Sprintf("%.1f", r.WritesPerService()), ""})
	}
	if r.FerryWrites != nil {
		data.Cards = append(data.Cards, card{"Ferry's writes / ksvc", fmt.Sprintf("%.1f", r.FerryWritesPerService()), ""})
	}
	if r.Floor != nil {
		data.Cards = append(data.Cards, card{"real / floor", fmt.Sprintf("%.2f×", r.Floor.Ratio()), ""})
	}
	if n := len(data.Stuck); n > 0 {
		data.Cards = append(data.Cards, card{"stuck", fmt.Sprint(n), "bad"})
	}
	phases := Phases(r.Samples)
	var maxStep time.Duration
	for _, p := range phases {
		maxStep = max(maxStep, p.Step.P95)
	}
	for _, p := range phases {
		pct := func(d time.Duration) float64 {
			if maxStep <= 0 {
				return 0
			}
			return math.Round(float64(d)/float64(maxStep)*1000) / 10
		}
		data.Phases = append(data.Phases, htmlPhase{PhaseRow: p, Name: p.Milestone.String(), P50Pct: pct(p.Step.P50), P95Pct: pct(p.Step.P95 - p.Step.P50)})
	}
	data.CDF = template.HTML(CDFChart(r))
	data.Timeline = template.HTML(TimelineChart(r))
	ferry := map[string]int64{}
	for _, fr := range r.FerryWrites.Rows() {
		ferry[fr.Resource] = fr.Total
	}
	for _, row := range r.Writes.Rows() {
		data.Writes = append(data.Writes, writeRowHTML(row, data.Verbs, r.N, ferry[row.Resource], r.FerryWrites != nil))
	}
	if r.Writes != nil {
		data.WritesTotal = writeRowHTML(WriteRow{Resource: "all", ByVerb: r.Writes.ByVerb(), Total: r.Writes.Total()}, data.Verbs, r.N,
			r.FerryWrites.Total(), r.FerryWrites != nil)
	}
	return reportTemplate.Execute(w, data)
}

type card struct{ Label, Value, Class string }

func okClass(ok bool) string {
	if ok {
		return "good"
	}
	return "bad"
}

type htmlData struct {
	R                      *Result
	Ready, Created, Routed Distribution
	Cards                  []card
	CDF, Timeline          template.HTML
	Verbs                  []string
	Writes                 []htmlWriteRow
	WritesTotal            htmlWriteRow
	Stuck                  []Sample
	Groups                 []StuckGroup
	Phases                 []htmlPhase
	// Namespaces is "namespace ns", or "K namespaces (first … last)".
	Namespaces string
}

type htmlPhase struct {
	PhaseRow
	Name           string
	P50Pct, P95Pct float64 // bar widths: the step's p50, and p95 beyond it
}

type htmlWriteRow struct {
	Resource string
	Cells    []int64
	Total    int64
	PerKsvc  string
	Ferry    string
	HasFerry bool
	BarPct   float64
}

func writeRowHTML(row WriteRow, verbs []string, n int, ferry int64, hasFerry bool) htmlWriteRow {
	h := htmlWriteRow{Resource: row.Resource, Total: row.Total, PerKsvc: fmt.Sprintf("%.2f", float64(row.Total)/float64(max(n, 1))), HasFerry: hasFerry}
	for _, v := range verbs {
		h.Cells = append(h.Cells, row.ByVerb[v])
	}
	if hasFerry {
		h.Ferry = fmt.Sprintf("%d (%.2f)", ferry, float64(ferry)/float64(max(n, 1)))
	}
	return h
}

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"dur":   fmtDur,
	"bytes": func(b any) string { return fmtBytes(toInt64(b)) },
	"f1":    func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"f2":    func(f float64) string { return fmt.Sprintf("%.2f", f) },
	"cores": func(p *ProcessUsage) string { return fmt.Sprintf("%.2f", p.CPUSeconds/math.Max(p.WallSeconds, 1e-9)) },
	"verbs": formatVerbs,
	"time":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 MST") },
}).Parse(reportHTML))

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case uint64:
		return int64(x)
	case int:
		return int64(x)
	}
	return 0
}

const reportHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Ferry scale {{.R.RunID}}: {{.R.N}} Services</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
main{max-width:1040px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 10px}
.sub{color:#5b6475}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:18px 0}
.card{background:#fff;border-radius:8px;padding:10px 14px;min-width:110px;box-shadow:0 1px 2px #0001}
.card .v{font-size:21px;font-weight:600}.card .l{color:#5b6475;font-size:12px}
.card.good .v{color:#137a3a}.card.bad .v{color:#b3261e}
.panel{background:#fff;border-radius:8px;padding:14px;box-shadow:0 1px 2px #0001;overflow-x:auto}
table{border-collapse:collapse;width:100%}th,td{padding:4px 8px;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}th{color:#5b6475;font-weight:600;border-bottom:1px solid #dde1e7}
tr.total td{border-top:1px solid #dde1e7;font-weight:600}
pre{background:#fff;border-left:3px solid #b3261e;padding:8px 12px;white-space:pre-wrap;font-size:12.5px;margin:8px 0}
.culprit{color:#b3261e;font-weight:600}
.note{color:#5b6475;font-size:12.5px}
.bar,.bar95{display:inline-block;height:10px;vertical-align:middle}.bar{background:#2f6fde}.bar95{background:#c9d8f5}
svg text{font:11px system-ui,sans-serif;fill:#5b6475}
</style></head><body><main>
<h1>Ferry scale: {{.R.N}} Knative Services</h1>
<div class="sub">run {{.R.RunID}} · {{.Namespaces}} · {{.R.Concurrency}} creates in flight · deadline {{.R.TimeoutPerService}} per Service · image {{.R.Image}}{{if .R.Gateway}} · gateway {{.R.Gateway}}{{end}} · started {{time .R.Started}}</div>
<div class="cards">{{range .Cards}}<div class="card {{.Class}}"><div class="v">{{.Value}}</div><div class="l">{{.Label}}</div></div>{{end}}</div>

<h2>Time to Ready</h2>
<div class="panel">{{.CDF}}
<table><tr><th>time to</th><th>count</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>max</th></tr>
<tr><td>created (the create request)</td><td>{{.Created.Count}}</td><td>{{dur .Created.P50}}</td><td>{{dur .Created.P90}}</td><td>{{dur .Created.P95}}</td><td>{{dur .Created.P99}}</td><td>{{dur .Created.Max}}</td></tr>
<tr><td>Ready</td><td>{{.Ready.Count}}</td><td>{{dur .Ready.P50}}</td><td>{{dur .Ready.P90}}</td><td>{{dur .Ready.P95}}</td><td>{{dur .Ready.P99}}</td><td>{{dur .Ready.Max}}</td></tr>
{{if .R.Gateway}}<tr><td>first routed response</td><td>{{.Routed.Count}}</td><td>{{dur .Routed.P50}}</td><td>{{dur .Routed.P90}}</td><td>{{dur .Routed.P95}}</td><td>{{dur .Routed.P99}}</td><td>{{dur .Routed.Max}}</td></tr>{{end}}
</table>
<p class="note">Each time is measured from the moment the Service's create request was sent. Ready means Ready=True at the current generation, as seen by a watch.{{if .R.Gateway}} Routed means the gateway's first answer that reached the Service's revision (with kwok's simulated pods: the gateway's 200 answering for the revision's pod).{{end}}</p></div>

{{if .Phases}}<h2>Where the time goes</h2>
<div class="panel"><table><tr><th>milestone</th><th>count</th><th>reached p50</th><th>p95</th><th>step p50</th><th>p95</th><th>max</th><th>waits for</th><th style="width:30%">step (p50 ▮, p95 ▯)</th></tr>
{{range .Phases}}<tr><td>{{.Name}}</td><td>{{.Reached.Count}}</td><td>{{dur .Reached.P50}}</td><td>{{dur .Reached.P95}}</td>{{if .Step.Count}}<td>{{dur .Step.P50}}</td><td>{{dur .Step.P95}}</td><td>{{dur .Step.Max}}</td>{{else}}<td>–</td><td>–</td><td>–</td>{{end}}<td style="text-align:left">{{.After}}</td><td style="text-align:left"><span class="bar" style="width:{{.P50Pct}}%"></span><span class="bar95" style="width:{{.P95Pct}}%"></span></td></tr>
{{end}}</table>
<p class="note">Each milestone is when the run's watches first saw it, measured from the Service's create request; a step is the time from the milestone it waits for. A long step points at who is slow: Ferry's reconcilers (Revision created → Deployment created, Deployment available → Revision Ready, …), the controller manager (Deployment → Pod created), the scheduler (Pod scheduled), kwok (Pod Ready), the gateway (KIngress Ready).</p></div>{{end}}

<h2>Progress over time</h2>
<div class="panel">{{.Timeline}}
<p class="note">Total to all Ready: {{dur .R.Total}}{{if not .R.AllReady}} (not all became Ready){{end}}{{if .R.TotalRouted}}; to all routed: {{dur .R.TotalRouted}}{{end}}. Throughput {{f1 .R.Throughput}} Services/s.</p></div>

<h2>API writes</h2>
<div class="panel">{{if .R.WritesError}}<p>Unknown: {{.R.WritesError}}</p>{{else}}
<p>{{.WritesTotal.Total}} writes during the run, {{f1 .R.WritesPerService}} per Service, counted by the API server (<code>apiserver_request_total</code>; every client: Ferry, the controller manager, the scheduler, kwok and the scale run's own creates){{if .R.FerryWrites}}; Ferry's own, counted in its client: {{.R.FerryWrites.Total}}, {{f1 .R.FerryWritesPerService}} per Service{{end}}.</p>
<table><tr><th>resource</th>{{range .Verbs}}<th>{{.}}</th>{{end}}<th>total</th><th>per ksvc</th>{{if .R.FerryWrites}}<th>Ferry (per ksvc)</th>{{end}}</tr>
{{range .Writes}}<tr><td>{{.Resource}}</td>{{range .Cells}}<td>{{.}}</td>{{end}}<td>{{.Total}}</td><td>{{.PerKsvc}}</td>{{if .HasFerry}}<td>{{.Ferry}}</td>{{end}}</tr>
{{end}}{{with .WritesTotal}}<tr class="total"><td>all</td>{{range .Cells}}<td>{{.}}</td>{{end}}<td>{{.Total}}</td><td>{{.PerKsvc}}</td>{{if .HasFerry}}<td>{{.Ferry}}</td>{{end}}</tr>{{end}}
</table>{{end}}</div>

{{with .R.Floor}}<h2>Write floor</h2>
<div class="panel"><p>The same number of writes ({{.Writes}}: {{verbs .ByVerb}}) as plain ConfigMap writes of the written objects' sizes, at concurrency {{.Concurrency}}, against the same API server: <b>{{dur .Duration}}</b>. The run took {{dur .Real}}: <b>real / floor = {{f2 .Ratio}}</b>.{{if .Errors}} {{.Errors}} floor writes failed; the first: {{.FirstError}}.{{end}}</p>
<p class="note">{{.Precreated}} objects were created untimed beforehand, for updates to resources the run did not create. The API server counted {{.ObservedWrites}} writes meanwhile.{{if .Note}} Note: {{.Note}}.{{end}}</p></div>{{end}}

{{with .R.Process}}<h2>Process</h2>
<div class="panel"><table>
<tr><td>CPU during the run</td><td>{{f1 .CPUSeconds}} s over {{f1 .WallSeconds}} s ({{cores .}} cores)</td></tr>
<tr><td>peak RSS (VmHWM) / RSS at the end</td><td>{{bytes .PeakRSSBytes}} / {{bytes .RSSBytes}}</td></tr>
<tr><td>Go heap in use before → after</td><td>{{bytes .HeapInuseBefore}} → {{bytes .HeapInuseAfter}} (reserved {{bytes .HeapSysAfter}})</td></tr>
<tr><td>goroutines at the end</td><td>{{.GoroutinesAfter}}</td></tr></table>
<p class="note">The control plane ran in this process: these numbers are Ferry together with etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok. A process cannot attribute CPU to some of its goroutines; a CPU profile (--cpuprofile) attributes it by function.</p></div>{{end}}

{{if .Stuck}}<h2>Stuck: {{len .Stuck}} of {{.R.N}} Services missed their deadline</h2>
<div class="panel"><table><tr><th>culprit</th><th>Services</th><th>e.g.</th></tr>
{{range .Groups}}<tr><td>{{.Kind}}</td><td>{{.Count}}</td><td>{{range $i, $e := .Examples}}{{if $i}}, {{end}}{{$e}}{{end}}</td></tr>{{end}}</table>
{{range .Stuck}}{{with .Explanation}}<pre>{{.String}}
<span class="culprit">culprit: {{.Culprit}}</span>{{range .Advice}}
to do: {{.}}{{end}}</pre>{{else}}<pre>ksvc {{.Name}}: no explanation</pre>{{end}}{{end}}</div>{{end}}

{{if .R.Notes}}<h2>Notes</h2><div class="panel">{{range .R.Notes}}<p class="note">{{.}}</p>{{end}}</div>{{end}}
<p class="note">Every sample is in report.json next to this file.</p>
</main></body></html>
`

// chart geometry
const (
	chartW, chartH                     = 960, 300
	marginL, marginR, marginT, marginB = 56, 16, 14, 40
)

type chartSeries struct {
	Name   string
	Color  string
	Dashed bool
	Pts    [][2]float64 // x, y
}

// CDFChart is an SVG of the cumulative distribution of time-to-Ready (and -routed,
// -created) over all N Services: a Service that never got there keeps the curve
// below 100 %.
func CDFChart(r *Result) string {
	var series []chartSeries
	xmax := 0.0
	add := func(name, color string, dashed bool, ds []time.Duration) {
		if len(ds) == 0 {
			return
		}
		s := slices.Clone(ds)
		slices.Sort(s)
		pts := [][2]float64{{0, 0}}
		// At most ~600 steps: enough for the eye, small for 5000 Services.
		step := max(1, len(s)/600)
		for i := 0; i < len(s); i += step {
			x := s[i].Seconds()
			pts = append(pts, [2]float64{x, float64(i) / float64(r.N) * 100}, [2]float64{x, float64(i+1) / float64(r.N) * 100})
		}
		last := s[len(s)-1].Seconds()
		pts = append(pts, [2]float64{last, float64(len(s)) / float64(r.N) * 100})
		xmax = math.Max(xmax, last)
		series = append(series, chartSeries{Name: name, Color: color, Dashed: dashed, Pts: pts})
	}
	add("created", "#9aa5b8", false, r.CreatedTimes())
	add("Ready", "#2f6fde", false, r.ReadyTimes())
	if r.Gateway != "" {
		add("routed", "#17a35b", true, r.RoutedTimes())
	}
	return lineChart("seconds since the create request", "% of Services", xmax, 100, series, func(y float64) string { return fmt.Sprintf("%.0f%%", y) })
}

// TimelineChart is an SVG of how many Services were created, Ready and routed over
// the run.
func TimelineChart(r *Result) string {
	tl := Timeline(r.Samples, 300)
	created := chartSeries{Name: "created", Color: "#9aa5b8"}
	ready := chartSeries{Name: "Ready", Color: "#2f6fde"}
	routed := chartSeries{Name: "routed", Color: "#17a35b", Dashed: true}
	xmax := 0.0
	for _, p := range tl {
		x := p.At.Seconds()
		xmax = math.Max(xmax, x)
		created.Pts = append(created.Pts, [2]float64{x, float64(p.Created)})
		ready.Pts = append(ready.Pts, [2]float64{x, float64(p.Ready)})
		routed.Pts = append(routed.Pts, [2]float64{x, float64(p.Routed)})
	}
	series := []chartSeries{created, ready}
	if r.Gateway != "" {
		series = append(series, routed)
	}
	return lineChart("seconds since the run started", "Services", xmax, float64(r.N), series, func(y float64) string { return fmt.Sprintf("%.0f", y) })
}

// lineChart draws series on linear axes from 0 to xmax and ymax.
func lineChart(xLabel, yLabel string, xmax, ymax float64, series []chartSeries, yFmt func(float64) string) string {
	if xmax <= 0 {
		xmax = 1
	}
	if ymax <= 0 {
		ymax = 1
	}
	xstep := niceStep(xmax / 8)
	xmax = math.Ceil(xmax/xstep) * xstep
	ystep := niceStep(ymax / 5)
	pw, ph := float64(chartW-marginL-marginR), float64(chartH-marginT-marginB)
	px := func(x float64) float64 { return float64(marginL) + x/xmax*pw }
	py := func(y float64) float64 { return float64(marginT) + ph - y/ymax*ph }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="100%%" role="img" aria-label="%s over %s">`, chartW, chartH, template.HTMLEscapeString(yLabel), template.HTMLEscapeString(xLabel))
	// grid and ticks
	for y := 0.0; y <= ymax+1e-9; y += ystep {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e6e9ee"/>`, px(0), py(y), px(xmax), py(y))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`, px(0)-6, py(y)+4, template.HTMLEscapeString(yFmt(y)))
	}
	for x := 0.0; x <= xmax+1e-9; x += xstep {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eef0f3"/>`, px(x), py(0), px(x), py(ymax))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, px(x), py(0)+16, trimFloat(x))
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#8a93a3"/>`, px(0), py(0), px(xmax), py(0))
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, px(xmax/2), chartH-4, template.HTMLEscapeString(xLabel))
	for _, s := range series {
		var pts []string
		for _, p := range s.Pts {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p[0]), py(p[1])))
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"><title>%s</title></polyline>`, s.Color, dash, strings.Join(pts, " "), template.HTMLEscapeString(s.Name))
	}
	// legend, top left inside the plot
	for i, s := range series {
		x := px(0) + 12 + float64(i)*90
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="14" height="4" fill="%s"/><text x="%.1f" y="%d">%s</text>`, x, marginT+6, s.Color, x+18, marginT+11, template.HTMLEscapeString(s.Name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// niceStep rounds a raw step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(x float64) string {
	s := fmt.Sprintf("%.3f", x)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}
