package gc

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
)

var now = time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)

func rev(name string, age time.Duration, annotations map[string]string) *v1.Revision {
	return &v1.Revision{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age)), Annotations: annotations}}
}

func names(revs []*v1.Revision) []string {
	var out []string
	for _, r := range revs {
		out = append(out, r.Name)
	}
	return out
}

func TestCollect(t *testing.T) {
	cfg := &v1.Configuration{}
	cfg.Status.LatestCreatedRevisionName, cfg.Status.LatestReadyRevisionName = "r6", "r5"
	old := 100 * time.Hour
	revs := []*v1.Revision{
		rev("r1", old+4, nil), rev("r2", old+3, map[string]string{v1.NoGCAnnotationKey: "true"}),
		rev("r3", old+2, nil), rev("r4", old+1, nil), rev("r5", old, nil), rev("r6", time.Hour, nil),
	}
	routed := map[string]bool{"r4": true}
	tests := []struct {
		name    string
		opts    *config.GC
		revs    []*v1.Revision
		want    []string
		recheck time.Duration
	}{
		{"defaults keep 20", config.DefaultGC(), revs, nil, 0},
		{"stale beyond min", &config.GC{MinNonActiveRevisions: 1, MaxNonActiveRevisions: config.GCDisabled, RetainSinceCreateTime: 48 * time.Hour, RetainSinceLastActiveTime: 15 * time.Hour}, revs, []string{"r1"}, 0},
		{"min 0", &config.GC{MinNonActiveRevisions: 0, MaxNonActiveRevisions: config.GCDisabled, RetainSinceCreateTime: 48 * time.Hour, RetainSinceLastActiveTime: config.GCDisabled}, revs, []string{"r1", "r3"}, 0},
		{"max alone", &config.GC{MinNonActiveRevisions: 0, MaxNonActiveRevisions: 1, RetainSinceCreateTime: config.GCDisabled, RetainSinceLastActiveTime: config.GCDisabled}, revs, []string{"r1"}, 0},
		{"all disabled", &config.GC{MinNonActiveRevisions: 0, MaxNonActiveRevisions: config.GCDisabled, RetainSinceCreateTime: config.GCDisabled, RetainSinceLastActiveTime: config.GCDisabled}, revs, nil, 0},
		{
			"young ones wait", &config.GC{MinNonActiveRevisions: 0, MaxNonActiveRevisions: config.GCDisabled, RetainSinceCreateTime: 48 * time.Hour, RetainSinceLastActiveTime: config.GCDisabled},
			[]*v1.Revision{rev("y1", 47*time.Hour, nil), rev("r6", 0, nil)}, nil, time.Hour,
		},
		{
			"recently active is kept", &config.GC{MinNonActiveRevisions: 0, MaxNonActiveRevisions: config.GCDisabled, RetainSinceCreateTime: 48 * time.Hour, RetainSinceLastActiveTime: 15 * time.Hour},
			[]*v1.Revision{rev("a1", old, map[string]string{v1.RoutingStateModifiedAnnotation: now.Add(-time.Hour).Format(time.RFC3339)}), rev("r6", 0, nil)},
			nil, 14 * time.Hour,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan := Collect(now, tc.opts, cfg, tc.revs, routed)
			if got := names(plan.Delete); len(got) != len(tc.want) || (len(got) > 0 && !equal(got, tc.want)) {
				t.Errorf("Delete = %v, want %v", got, tc.want)
			}
			if plan.Recheck != tc.recheck {
				t.Errorf("Recheck = %v, want %v", plan.Recheck, tc.recheck)
			}
		})
	}
}

func equal(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}
