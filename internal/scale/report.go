package scale

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/ferry-serving/ferry/internal/explain"
)

// WriteSummary prints the run's numbers as tables: percentiles, writes by resource,
// the process's usage, the floor and the stuck Services (all of them grouped, the
// first maxExplained explained).
func WriteSummary(w io.Writer, r *Result, maxExplained int) {
	fmt.Fprintf(w, "\nFerry scale run %s: %d Services in %s, %d creates in flight, %s per Service\n",
		r.RunID, r.N, describeNamespaces(r.AllNamespaces()), r.Concurrency, r.TimeoutPerService)
	ready := r.ReadyCount()
	stuck := r.Stuck()
	if r.AllReady {
		fmt.Fprintf(w, "Ready: %d/%d, all in %s (%.1f Services/s)", ready, r.N, fmtDur(r.Total), r.Throughput())
	} else {
		fmt.Fprintf(w, "Ready: %d/%d; the run ended after %s", ready, r.N, fmtDur(r.Total))
	}
	if r.TotalRouted > 0 {
		fmt.Fprintf(w, "; all routed in %s", fmtDur(r.TotalRouted))
	}
	fmt.Fprintf(w, "; stuck: %d\n", len(stuck))
	if o := r.CreationOrder(); o != (CreationOrder{}) {
		fmt.Fprintf(w, "Creation order: p50 / total %.2f, rank correlation %.2f (1: Ready in the order created)\n", o.P50OverTotal, o.RankCorrelation)
	}
	if n, longest := r.HeldCreates(); n > 0 {
		fmt.Fprintf(w, "Creates held by admission: %d (the longest: %q)\n", n, longest)
	}
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	first := leftColumn("time to", "created", "Ready", "routed")
	fmt.Fprintln(tw, first("time to")+"\tcount\tp50\tp90\tp95\tp99\tmax\t")
	rows := []struct {
		name string
		ds   []time.Duration
	}{{"created", r.CreatedTimes()}, {"Ready", r.ReadyTimes()}}
	if r.Gateway != "" {
		rows = append(rows, struct {
			name string
			ds   []time.Duration
		}{"routed", r.RoutedTimes()})
	}
	for _, row := range rows {
		d := Summarize(row.ds)
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", first(row.name), d.Count, fmtDur(d.P50), fmtDur(d.P90), fmtDur(d.P95), fmtDur(d.P99), fmtDur(d.Max))
	}
	tw.Flush()

	if phases := Phases(r.Samples); len(phases) > 0 {
		fmt.Fprintf(w, "\nWhere the time goes (since each Service's create request; step: since the milestone it waits for):\n")
		names, afters := []string{"milestone"}, []string{"waits for"}
		for _, p := range phases {
			names, afters = append(names, p.Milestone.String()), append(afters, p.After)
		}
		first, second := leftColumn(names...), leftColumn(afters...)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, first("milestone")+"\t"+second("waits for")+"\tcount\treached p50\tp95\tstep p50\tp95\tmax\t")
		for _, p := range phases {
			step := []string{"–", "–", "–"}
			if p.Step.Count > 0 {
				step = []string{fmtDur(p.Step.P50), fmtDur(p.Step.P95), fmtDur(p.Step.Max)}
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t\n", first(p.Milestone.String()), second(p.After), p.Reached.Count, fmtDur(p.Reached.P50),
				fmtDur(p.Reached.P95), strings.Join(step, "\t"))
		}
		tw.Flush()
	}

	fmt.Fprintln(w)
	if r.WritesError != "" {
		fmt.Fprintf(w, "API writes: unknown (%s)\n", r.WritesError)
	} else {
		fmt.Fprintf(w, "API writes during the run (apiserver_request_total, every client): %d, %.1f per Service\n", r.Writes.Total(), r.WritesPerService())
		if r.FerryWrites != nil {
			fmt.Fprintf(w, "of which Ferry's own (counted in its client): %d, %.1f per Service\n", r.FerryWrites.Total(), r.FerryWritesPerService())
		}
		writeTable(w, r)
	}

	if p := r.Process; p != nil {
		fmt.Fprintf(w, "\nProcess (Ferry with etcd, kube-apiserver, controller-manager, scheduler and kwok in it):\n")
		fmt.Fprintf(w, "  CPU %.1f s over %.1f s (%.2f cores); peak RSS %s, RSS at the end %s\n", p.CPUSeconds, p.WallSeconds,
			p.CPUSeconds/max(p.WallSeconds, 1e-9), fmtBytes(p.PeakRSSBytes), fmtBytes(p.RSSBytes))
		fmt.Fprintf(w, "  Go heap in use %s before, %s after (heap reserved %s); %d goroutines\n",
			fmtBytes(int64(p.HeapInuseBefore)), fmtBytes(int64(p.HeapInuseAfter)), fmtBytes(int64(p.HeapSysAfter)), p.GoroutinesAfter)
		fmt.Fprintf(w, "  (The process's counters cannot tell Ferry's share; a CPU profile labelled by component can.)\n")
	}

	writeCPUBreakdown(w, r)
	writeQueueWaits(w, r)

	if f := r.Floor; f != nil {
		fmt.Fprintf(w, "\nWrite floor: %d plain ConfigMap writes (%s) at concurrency %d took %s; the run took %s: real/floor = %.2f\n",
			f.Writes, formatVerbs(f.ByVerb), f.Concurrency, fmtDur(f.Duration), fmtDur(f.Real), f.Ratio())
		if f.Errors > 0 {
			fmt.Fprintf(w, "  %d floor writes failed, the first: %s\n", f.Errors, f.FirstError)
		}
		if f.Note != "" {
			fmt.Fprintf(w, "  note: %s\n", f.Note)
		}
	}

	if len(stuck) > 0 {
		fmt.Fprintf(w, "\n%d of %d Services missed their deadline:\n", len(stuck), r.N)
		for _, g := range r.StuckGroups() {
			fmt.Fprintf(w, "  %5d × %s (e.g. %s)\n", g.Count, g.Kind, strings.Join(g.Examples, ", "))
		}
		fmt.Fprintln(w)
		for i, s := range stuck {
			if i == maxExplained {
				fmt.Fprintf(w, "… and %d more; every one is explained in the report.\n", len(stuck)-i)
				break
			}
			if e := s.Explanation; e != nil {
				// The culprit and the first line of what to do, as `ferry explain` says them.
				fmt.Fprintf(w, "%s\n  culprit: %s\n", indent(e.String(), "  "), e.Culprit)
				if len(e.Advice) > 0 {
					fmt.Fprintf(w, "  to do:   %s\n", e.Advice[0])
				}
				fmt.Fprintln(w)
			} else {
				fmt.Fprintf(w, "  ksvc %s: no explanation\n", s.Name)
			}
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// writeTable prints the writes by resource with a column per verb, per Service and,
// when known, Ferry's own.
func writeTable(w io.Writer, r *Result) {
	rows := r.Writes.Rows()
	ferry := map[string]int64{}
	for _, fr := range r.FerryWrites.Rows() {
		ferry[fr.Resource] = fr.Total
		if !slices.ContainsFunc(rows, func(x WriteRow) bool { return x.Resource == fr.Resource }) {
			rows = append(rows, WriteRow{Resource: fr.Resource, ByVerb: map[string]int64{}})
		}
	}
	verbs := r.Writes.Verbs()
	names := []string{"resource", "all"}
	for _, row := range rows {
		names = append(names, row.Resource)
	}
	first := leftColumn(names...)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := first("resource") + "\t" + strings.Join(verbs, "\t") + "\ttotal\tper ksvc\t"
	if r.FerryWrites != nil {
		header += "Ferry\tFerry per ksvc\t"
	}
	fmt.Fprintln(tw, header)
	line := func(name string, byVerb map[string]int64, total, ferryTotal int64) {
		cells := []string{first(name)}
		for _, v := range verbs {
			cells = append(cells, fmt.Sprint(byVerb[v]))
		}
		cells = append(cells, fmt.Sprint(total), fmt.Sprintf("%.2f", float64(total)/float64(max(r.N, 1))))
		if r.FerryWrites != nil {
			cells = append(cells, fmt.Sprint(ferryTotal), fmt.Sprintf("%.2f", float64(ferryTotal)/float64(max(r.N, 1))))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	for _, row := range rows {
		line(row.Resource, row.ByVerb, row.Total, ferry[row.Resource])
	}
	line("all", r.Writes.ByVerb(), r.Writes.Total(), r.FerryWrites.Total())
	tw.Flush()
}

// leftColumn pads the cells of a first column to the same width, so that they
// stay left-aligned in a right-aligned tabwriter.
func leftColumn(cells ...string) func(string) string {
	width := 0
	for _, c := range cells {
		width = max(width, utf8.RuneCountInString(c))
	}
	return func(c string) string { return c + strings.Repeat(" ", max(0, width-utf8.RuneCountInString(c))) }
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

func fmtBytes(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

// WriteReports writes report.json (every sample) and report.html into dir, creating
// it, and returns their paths.
func WriteReports(dir string, r *Result) (jsonPath, htmlPath string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	jsonPath = filepath.Join(dir, "report.json")
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(jsonPath, append(b, '\n'), 0o644); err != nil {
		return "", "", err
	}
	htmlPath = filepath.Join(dir, "report.html")
	f, err := os.Create(htmlPath)
	if err != nil {
		return "", "", err
	}
	if err := RenderHTML(f, r); err != nil {
		f.Close()
		return "", "", err
	}
	return jsonPath, htmlPath, f.Close()
}

// fmtDur is the explainer's duration format, so that the reports and the
// explanations agree.
func fmtDur(d time.Duration) string { return explain.FormatDuration(d) }

// writeQueueWaits prints each controller's queue waits, the busiest queue first.
func writeQueueWaits(w io.Writer, r *Result) {
	switch {
	case r.QueueWaitsError != "":
		fmt.Fprintf(w, "\nQueue waits: unknown (%s)\n", r.QueueWaitsError)
		return
	case len(r.QueueWaits) == 0:
		return
	}
	fmt.Fprintf(w, "\nQueue waits (time a change waited in a controller's queue before a worker took it):\n")
	fmt.Fprintf(w, "  %-28s %9s %10s %8s %8s\n", "controller", "items", "mean", ">1 s", ">10 s")
	for _, q := range r.QueueWaits {
		fmt.Fprintf(w, "  %-28s %9d %10s %7.1f%% %7.1f%%\n", q.Controller, q.Items,
			fmtDur(time.Duration(q.MeanSeconds*float64(time.Second))), 100*q.OverOneSecond, 100*q.OverTenSeconds)
	}
}
