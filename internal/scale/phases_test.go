package scale

import (
	"testing"
	"time"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestPhases(t *testing.T) {
	s := time.Second
	m1, m2 := &Milestones{}, &Milestones{}
	m1[ConfigurationCreated], m1[RevisionCreated], m1[RevisionReady] = 1*s, 2*s, 7*s
	m2[ConfigurationCreated], m2[RevisionCreated] = 3*s, 4*s // never Ready
	samples := []Sample{{Milestones: m1}, {Milestones: m2}, {}}
	rows := Phases(samples)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3 (only milestones someone reached): %+v", len(rows), rows)
	}
	cfg, rev, ready := rows[0], rows[1], rows[2]
	if cfg.Milestone != ConfigurationCreated || cfg.After != "create" || cfg.Reached.Count != 2 || cfg.Step.P50 != s || cfg.Step.Max != 3*s {
		t.Errorf("Configuration created: %+v", cfg)
	}
	if rev.Milestone != RevisionCreated || rev.After != "Configuration created" || rev.Step.Count != 2 || rev.Step.Max != s || rev.Reached.Max != 4*s {
		t.Errorf("Revision created: %+v", rev)
	}
	// Revision Ready waits for the Deployment, which nobody saw: no step.
	if ready.Milestone != RevisionReady || ready.Reached.P50 != 7*s || ready.Step.Count != 0 {
		t.Errorf("Revision Ready: %+v", ready)
	}
}

func TestMilestonesOf(t *testing.T) {
	pod := &corev1.Pod{}
	pod.Labels = map[string]string{v1.ServiceLabelKey: "svc"}
	pod.Spec.NodeName = "ferry-node"
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	name, got := milestonesOf(pod)
	if name != "svc" || len(got) != 3 || got[0] != PodCreated || got[1] != PodScheduled || got[2] != PodReady {
		t.Errorf("pod: %s %v", name, got)
	}
	cfg := &v1.Configuration{}
	cfg.Name = "svc"
	if name, got := milestonesOf(cfg); name != "svc" || len(got) != 1 || got[0] != ConfigurationCreated {
		t.Errorf("configuration: %s %v", name, got)
	}
}
