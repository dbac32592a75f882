package scale

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/internal/explain"
)

// sampleResult is a run of 4: three Ready and routed, one stuck.
func sampleResult(t *testing.T) *Result {
	t.Helper()
	ms := time.Millisecond
	e := explain.Explain(waitingChain(t))
	r := &Result{
		RunID: "20261130-090800-abcd", Namespace: "ferry-scale-20261130-090800-abcd", N: 4, Concurrency: 2,
		Image: DefaultImage, TimeoutPerService: 10 * time.Second, Gateway: "http://127.0.0.1:8080", InProcess: true,
		Started: time.Date(2026, 11, 30, 9, 8, 0, 0, time.UTC), Total: 11 * time.Second,
		Samples: []Sample{
			{Index: 0, Name: "scale-00004-000-aaaaaaaa", Start: 0, Created: 12 * ms, Ready: 420 * ms, Routed: 450 * ms, RouteAttempts: 1},
			{Index: 1, Name: "scale-00004-001-bbbbbbbb", Start: 1 * ms, Created: 15 * ms, Ready: 730 * ms, Routed: 790 * ms, RouteAttempts: 2},
			{Index: 2, Name: "scale-00004-002-cccccccc", Start: 20 * ms, Created: 9 * ms, Ready: 1234 * ms, Routed: 1300 * ms, RouteAttempts: 1},
			{Index: 3, Name: svcName, Start: 22 * ms, Created: 11 * ms, Stuck: true, Explanation: &e},
		},
		Writes: Counts{
			{Group: "serving.knative.dev", Resource: "services", Verb: "POST"}:                       4,
			{Group: "serving.knative.dev", Resource: "services", Subresource: "status", Verb: "PUT"}: 9,
			{Resource: "pods", Verb: "POST"}:                                                         3,
		},
		FerryWrites: Counts{{Group: "serving.knative.dev", Resource: "services", Subresource: "status", Verb: "PUT"}: 9},
		Process:     &ProcessUsage{CPUSeconds: 5.5, WallSeconds: 11, PeakRSSBytes: 512 << 20, RSSBytes: 400 << 20, HeapInuseBefore: 100 << 20, HeapInuseAfter: 150 << 20},
		Floor:       &FloorResult{Concurrency: 2, Writes: 16, ByVerb: map[string]int64{"POST": 7, "PUT": 9}, Duration: 2 * time.Second, Real: 11 * time.Second},
	}
	m := &Milestones{}
	m[ConfigurationCreated], m[RevisionCreated], m[RevisionReady], m[ServiceReady] = 20*ms, 35*ms, 300*ms, 420*ms
	r.Samples[0].Milestones = m
	return r
}

func TestRenderHTML(t *testing.T) {
	var b bytes.Buffer
	if err := RenderHTML(&b, sampleResult(t)); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{
		"<!DOCTYPE html>",
		"<svg",                           // the charts are inline
		"<polyline",                      // with data in them
		"to do: No node can run the pod", // the stuck Service's advice, as ferry explain gives it
		"3 / 4",                          // Ready count
		"1.23s",                          // p95 (and p99, max) time to Ready
		"730ms",                          // p50
		"5.50×",                          // real / floor: 11 s / 2 s
		"16 writes during the run, 4.0 per Service", // apiserver writes
		"services.serving.knative.dev/status",
		"9 (2.25)", // Ferry's writes and per ksvc
		"Stuck: 1 of 4 Services missed their deadline",
		"culprit: Pod " + svcName + "-00001-deployment-7d9f-x2x",
		"Insufficient cpu",
		"512 MiB", // peak RSS
		"Where the time goes",
		"Revision created",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Count(html, "<svg") != 2 {
		t.Errorf("%d charts, want 2 (CDF and timeline)", strings.Count(html, "<svg"))
	}
	if strings.Contains(html, "http://") && strings.Contains(html, `src="http`) {
		t.Error("the report fetches something")
	}
}

func TestWriteSummary(t *testing.T) {
	var b bytes.Buffer
	WriteSummary(&b, sampleResult(t), 10)
	out := b.String()
	for _, want := range []string{
		"Ready: 3/4; the run ended after 11.0s",
		"stuck: 1",
		"Ready        3  730ms  1.23s  1.23s  1.23s  1.23s",
		"API writes during the run (apiserver_request_total, every client): 16, 4.0 per Service",
		"of which Ferry's own (counted in its client): 9, 2.2 per Service",
		"real/floor = 5.50",
		"1 × Pod Pending PodScheduled=False Unschedulable",
		"culprit: Pod",
		"to do:   No node can run the pod",
		"Where the time goes",
		"Revision Ready         Deployment available       1        300ms  300ms         –     –     –",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteReports(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	jsonPath, htmlPath, err := WriteReports(dir, sampleResult(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(htmlPath); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		N       int `json:"n"`
		Summary struct {
			TimeToReady struct {
				P95 float64 `json:"p95"`
			} `json:"timeToReady"`
			WritesPerService float64 `json:"writesPerService"`
			Stuck            int     `json:"stuck"`
		} `json:"summary"`
		Floor struct {
			Ratio float64 `json:"ratio"`
		} `json:"floor"`
		Samples []Sample `json:"samples"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := sampleResult(t)
	if got.N != 4 || len(got.Samples) != 4 || got.Summary.TimeToReady.P95 != 1.234 || got.Summary.WritesPerService != 4 ||
		got.Summary.Stuck != 1 || got.Floor.Ratio != 5.5 {
		t.Errorf("report.json: %+v", got)
	}
	for i, s := range got.Samples {
		w := want.Samples[i]
		if s.Name != w.Name || s.Start != w.Start || s.Created != w.Created || s.Ready != w.Ready || s.Routed != w.Routed || s.Stuck != w.Stuck ||
			(s.Milestones == nil) != (w.Milestones == nil) || (s.Milestones != nil && *s.Milestones != *w.Milestones) {
			t.Errorf("sample %d: got %+v, want %+v", i, s, w)
		}
	}
	if got.Samples[3].Explanation == nil || got.Samples[3].Explanation.Culprit != want.Samples[3].Explanation.Culprit {
		t.Errorf("the stuck sample's explanation did not round-trip: %+v", got.Samples[3].Explanation)
	}
	if !strings.Contains(string(b), `"timeToReadySeconds": null`) {
		t.Error("a Service that never became Ready should have a null time")
	}
}

// A run with a Service past its deadline gets no floor, and says why; a run
// without one may have it.
func TestFloorWithout(t *testing.T) {
	r := sampleResult(t)
	if why := r.FloorWithout(); !strings.Contains(why, "1 of 4 Services missed their deadline") {
		t.Errorf("with one stuck Service: %q", why)
	}
	r.Samples = r.Samples[:3]
	r.N = 3
	if why := r.FloorWithout(); why != "" {
		t.Errorf("with none stuck: %q, want the floor measured", why)
	}
}
