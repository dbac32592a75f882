package soak

import (
	"strings"
	"testing"
	"time"
)

// A Revision that asks for far more pods than the load needs fails the run, named
// with its peak; the peaks are kept, not the latest value.
func TestPodPeaksJudged(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 17, 56, 57, 0, time.UTC)
	l := newPodLog()
	l.observe(t0, "plain-00001", 1)
	l.observe(t0, "crashy-00031", 1)
	l.observe(t0.Add(20*time.Second), "crashy-00031", 238)
	l.observe(t0.Add(time.Minute), "crashy-00031", 0)
	l.observe(t0, "zero-00001", 2)

	rep := &Report{MostPods: l.top(2), PodBound: podBound, Targets: map[string]TargetStats{"plain": {Requests: 1}}}
	if len(rep.MostPods) != 2 || rep.MostPods[0].Revision != "crashy-00031" || rep.MostPods[0].Pods != 238 || rep.MostPods[1].Revision != "zero-00001" {
		t.Fatalf("peaks %+v", rep.MostPods)
	}
	rep.judge(0)
	if len(rep.Failures) != 1 || !strings.Contains(rep.Failures[0], "crashy-00031 asked for 238 pods at 17:57:17") {
		t.Errorf("failures %q", rep.Failures)
	}

	calm := &Report{MostPods: []PodPeak{{Revision: "zero-00001", Pods: 2, At: t0}}, PodBound: podBound, Targets: map[string]TargetStats{"plain": {Requests: 1}}}
	if calm.judge(0); calm.Failed() {
		t.Errorf("two pods failed the run: %q", calm.Failures)
	}
}
