package scale

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

func TestCPUBreakdownByLabel(t *testing.T) {
	fn := &profile.Function{ID: 1, Name: "f"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
	sample := func(ms int64, labels map[string][]string) *profile.Sample {
		return &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{1, ms * 1e6}, Label: labels}
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Function:   []*profile.Function{fn}, Location: []*profile.Location{loc},
		Sample: []*profile.Sample{
			sample(3000, map[string][]string{"component": {"kube-apiserver"}}),
			sample(1000, map[string][]string{"component": {"etcd"}}),
			sample(800, map[string][]string{"component": {"ferry"}, "ferry": {"route"}}),
			sample(200, map[string][]string{"component": {"ferry"}, "ferry": {"admission"}}),
			sample(500, map[string][]string{"component": {"ferry"}}),
			sample(500, nil),
		},
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	b, err := ReadCPUBreakdown(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if b.TotalSeconds != 6 {
		t.Errorf("total %.3f s, want 6", b.TotalSeconds)
	}
	want := []LabelCPU{{"kube-apiserver", 3}, {"ferry", 1.5}, {"etcd", 1}, {"unlabelled", 0.5}}
	if len(b.Components) != len(want) {
		t.Fatalf("components %+v, want %+v", b.Components, want)
	}
	for i := range want {
		if b.Components[i] != want[i] {
			t.Errorf("component %d: %+v, want %+v", i, b.Components[i], want[i])
		}
	}
	wantFerry := []LabelCPU{{"route", 0.8}, {"other", 0.5}, {"admission", 0.2}}
	for i := range wantFerry {
		if i >= len(b.Ferry) || b.Ferry[i] != wantFerry[i] {
			t.Errorf("Ferry's parts %+v, want %+v", b.Ferry, wantFerry)
			break
		}
	}

	var out strings.Builder
	writeCPUBreakdown(&out, &Result{N: 100, CPU: b})
	for _, line := range []string{"60.0 ms per Service", "kube-apiserver", "30.00 ms per Service", "    route"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("report lacks %q:\n%s", line, out.String())
		}
	}
	if _, err := ReadCPUBreakdown(strings.NewReader("not a profile")); err == nil {
		t.Error("garbage read as a profile")
	}
}
