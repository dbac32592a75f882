package scale

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/google/pprof/profile"
)

// CPU by component. ferry scale --cpuprofile profiles the whole process; with the
// local cluster in it, each goroutine carries the profiler label of what started it:
// component (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok,
// ferry, scale-run), and within Ferry ferry=<controller>, admission or gateway. The
// report adds up the profile's CPU by each (issue 21: where the CPU goes, per Service).

// LabelCPU is the CPU the profile's samples with one label value took.
type LabelCPU struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// CPUBreakdown is a profile's CPU by component, and Ferry's by part.
type CPUBreakdown struct {
	TotalSeconds float64 `json:"totalSeconds"`
	// Components are by the component label; "unlabelled" is mostly the Go runtime's
	// own work (garbage collection), which belongs to no goroutine.
	Components []LabelCPU `json:"components"`
	// Ferry is the ferry component by its ferry label: each controller's reconciles,
	// admission, the gateway, and "other" (informers, caches, clients, leases).
	Ferry []LabelCPU `json:"ferry,omitempty"`
}

// ReadCPUBreakdown reads a CPU profile and adds up its CPU by label.
func ReadCPUBreakdown(r io.Reader) (*CPUBreakdown, error) {
	p, err := profile.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("reading the CPU profile: %w", err)
	}
	cpu := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			cpu = i
		}
	}
	if cpu < 0 {
		return nil, fmt.Errorf("the profile has no CPU time in it (sample types %v)", p.SampleType)
	}
	components, ferry := map[string]float64{}, map[string]float64{}
	b := &CPUBreakdown{}
	for _, s := range p.Sample {
		secs := float64(s.Value[cpu]) / 1e9
		b.TotalSeconds += secs
		component := labelOr(s, "component", "unlabelled")
		components[component] += secs
		if component == "ferry" {
			ferry[labelOr(s, "ferry", "other")] += secs
		}
	}
	b.Components, b.Ferry = sortedCPU(components), sortedCPU(ferry)
	return b, nil
}

func labelOr(s *profile.Sample, key, none string) string {
	if v := s.Label[key]; len(v) > 0 {
		return v[0]
	}
	return none
}

// sortedCPU is the map's entries, the most CPU first.
func sortedCPU(m map[string]float64) []LabelCPU {
	out := make([]LabelCPU, 0, len(m))
	for name, secs := range m {
		out = append(out, LabelCPU{Name: name, Seconds: secs})
	}
	slices.SortFunc(out, func(a, b LabelCPU) int { return cmp.Or(cmp.Compare(b.Seconds, a.Seconds), cmp.Compare(a.Name, b.Name)) })
	return out
}

// writeCPUBreakdown prints the breakdown, with each part's CPU per Service.
func writeCPUBreakdown(w io.Writer, r *Result) {
	b := r.CPU
	if b == nil || b.TotalSeconds == 0 {
		return
	}
	n := float64(max(r.N, 1))
	fmt.Fprintf(w, "\nCPU by component (from the CPU profile; %.1f s in all, %.1f ms per Service):\n", b.TotalSeconds, 1000*b.TotalSeconds/n)
	row := func(indent string, c LabelCPU) {
		fmt.Fprintf(w, "  %s%-*s %8.1f s %5.1f%% %9.2f ms per Service\n", indent, 28-len(indent), c.Name, c.Seconds,
			100*c.Seconds/b.TotalSeconds, 1000*c.Seconds/n)
	}
	for _, c := range b.Components {
		row("", c)
		if c.Name == "ferry" {
			for _, f := range b.Ferry {
				row("  ", f)
			}
		}
	}
}
