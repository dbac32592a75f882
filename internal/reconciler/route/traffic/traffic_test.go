package traffic

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

type fakeGetter struct {
	cfgs map[string]*v1.Configuration
	revs map[string]*v1.Revision
	read []string
}

func (f *fakeGetter) Configuration(_ context.Context, name string) (*v1.Configuration, error) {
	f.read = append(f.read, "cfg/"+name)
	if c, ok := f.cfgs[name]; ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configurations"}, name)
}

func (f *fakeGetter) Revision(_ context.Context, name string) (*v1.Revision, error) {
	f.read = append(f.read, "rev/"+name)
	if r, ok := f.revs[name]; ok {
		return r, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "revisions"}, name)
}

func cfg(name, latestReady string, ready corev1.ConditionStatus) *v1.Configuration {
	c := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1}}
	c.Status.ObservedGeneration = 1
	c.Status.LatestReadyRevisionName = latestReady
	c.Status.Conditions = []duck.Condition{{Type: duck.ConditionReady, Status: ready}}
	return c
}

func rev(name string, ready corev1.ConditionStatus) *v1.Revision {
	r := &v1.Revision{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1}}
	r.Status.ObservedGeneration = 1
	r.Status.Conditions = []duck.Condition{{Type: duck.ConditionReady, Status: ready}}
	return r
}

func p(i int64) *int64 { return &i }
func b(v bool) *bool   { return &v }

func TestResolve(t *testing.T) {
	getter := func() *fakeGetter {
		return &fakeGetter{
			cfgs: map[string]*v1.Configuration{
				"ready":   cfg("ready", "ready-00002", corev1.ConditionTrue),
				"waiting": cfg("waiting", "", corev1.ConditionUnknown),
				"failed":  cfg("failed", "", corev1.ConditionFalse),
				// The latest created failed, but an older Revision still serves.
				"newfailed": cfg("newfailed", "newfailed-00001", corev1.ConditionFalse),
			},
			revs: map[string]*v1.Revision{
				"ready-00002":     rev("ready-00002", corev1.ConditionTrue),
				"ready-00001":     rev("ready-00001", corev1.ConditionTrue),
				"newfailed-00001": rev("newfailed-00001", corev1.ConditionTrue),
				"pending-00001":   rev("pending-00001", corev1.ConditionUnknown),
				"broken-00001":    rev("broken-00001", corev1.ConditionFalse),
			},
		}
	}
	tests := []struct {
		name       string
		spec       []v1.TrafficTarget
		wantRevs   []string
		wantStatus corev1.ConditionStatus
		wantReason string
		wantMsg    string
		wantReads  int
	}{{
		name:      "latest of a configuration",
		spec:      []v1.TrafficTarget{{ConfigurationName: "ready", LatestRevision: b(true), Percent: p(100)}},
		wantRevs:  []string{"ready-00002"},
		wantReads: 2,
	}, {
		name: "split with a pinned revision and tags",
		spec: []v1.TrafficTarget{
			{ConfigurationName: "ready", LatestRevision: b(true), Percent: p(80), Tag: "current"},
			{RevisionName: "ready-00001", LatestRevision: b(false), Percent: p(20), Tag: "old"},
		},
		wantRevs:  []string{"ready-00002", "ready-00001"},
		wantReads: 3,
	}, {
		name:      "older ready revision serves while the newest failed",
		spec:      []v1.TrafficTarget{{ConfigurationName: "newfailed", Percent: p(100)}},
		wantRevs:  []string{"newfailed-00001"},
		wantReads: 2,
	}, {
		name:       "configuration not created yet",
		spec:       []v1.TrafficTarget{{ConfigurationName: "later", Percent: p(100)}},
		wantStatus: corev1.ConditionFalse,
		wantReason: v1.ReasonConfigurationMissing,
		wantMsg:    `Configuration "later" referenced in traffic not found.`,
		wantReads:  1,
	}, {
		name:       "configuration waiting for a revision",
		spec:       []v1.TrafficTarget{{ConfigurationName: "waiting", Percent: p(100)}},
		wantStatus: corev1.ConditionUnknown,
		wantReason: v1.ReasonRevisionMissing,
		wantMsg:    `Configuration "waiting" is waiting for a Revision to become ready.`,
		wantReads:  1,
	}, {
		name:       "configuration whose only revision failed",
		spec:       []v1.TrafficTarget{{ConfigurationName: "failed", Percent: p(100)}},
		wantStatus: corev1.ConditionFalse,
		wantReason: v1.ReasonRevisionMissing,
		wantMsg:    `Configuration "failed" does not have any ready Revision.`,
		wantReads:  1,
	}, {
		name:       "pinned revision not ready",
		spec:       []v1.TrafficTarget{{RevisionName: "pending-00001", Percent: p(100)}},
		wantStatus: corev1.ConditionUnknown,
		wantReason: v1.ReasonRevisionMissing,
		wantMsg:    `Revision "pending-00001" is not yet ready.`,
		wantReads:  1,
	}, {
		name:       "pinned revision failed",
		spec:       []v1.TrafficTarget{{RevisionName: "broken-00001", Percent: p(100)}},
		wantStatus: corev1.ConditionFalse,
		wantReason: v1.ReasonRevisionMissing,
		wantMsg:    `Revision "broken-00001" failed to become ready.`,
		wantReads:  1,
	}, {
		name: "a missing target wins over a waiting one, and both are read",
		spec: []v1.TrafficTarget{
			{RevisionName: "pending-00001", Percent: p(50)},
			{RevisionName: "gone-00001", Percent: p(50)},
		},
		wantStatus: corev1.ConditionFalse,
		wantReason: v1.ReasonRevisionMissing,
		wantMsg:    `Revision "gone-00001" referenced in traffic not found.`,
		wantReads:  2,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := getter()
			got, problem, err := Resolve(context.Background(), tc.spec, g)
			if err != nil {
				t.Fatal(err)
			}
			if len(g.read) != tc.wantReads {
				t.Errorf("read %v, want %d reads", g.read, tc.wantReads)
			}
			if tc.wantReason != "" {
				if problem == nil || problem.Status != tc.wantStatus || problem.Reason != tc.wantReason || problem.Message != tc.wantMsg {
					t.Fatalf("problem = %+v, want %s %s %q", problem, tc.wantStatus, tc.wantReason, tc.wantMsg)
				}
				return
			}
			if problem != nil {
				t.Fatalf("unexpected problem %+v", problem)
			}
			if len(got) != len(tc.wantRevs) {
				t.Fatalf("got %d targets, want %d", len(got), len(tc.wantRevs))
			}
			for i, want := range tc.wantRevs {
				if got[i].RevisionName != want || got[i].ConfigurationName != "" || *got[i].Percent != *tc.spec[i].Percent || got[i].Tag != tc.spec[i].Tag {
					t.Errorf("target %d = %+v, want revision %s", i, got[i], want)
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		spec    []v1.TrafficTarget
		invalid bool
	}{
		{"empty", nil, false},
		{"one latest", []v1.TrafficTarget{{ConfigurationName: "c", LatestRevision: b(true), Percent: p(100)}}, false},
		{"split", []v1.TrafficTarget{{ConfigurationName: "c", Percent: p(60)}, {RevisionName: "r", Percent: p(40), Tag: "a"}}, false},
		{"sum not 100", []v1.TrafficTarget{{ConfigurationName: "c", Percent: p(60)}}, true},
		{"both names", []v1.TrafficTarget{{ConfigurationName: "c", RevisionName: "r", Percent: p(100)}}, true},
		{"no name", []v1.TrafficTarget{{Percent: p(100)}}, true},
		{"latest with revision", []v1.TrafficTarget{{RevisionName: "r", LatestRevision: b(true), Percent: p(100)}}, true},
		{"duplicate tag", []v1.TrafficTarget{{RevisionName: "r", Tag: "x", Percent: p(50)}, {RevisionName: "s", Tag: "x", Percent: p(50)}}, true},
		{"bad tag", []v1.TrafficTarget{{RevisionName: "r", Tag: "X_y", Percent: p(100)}}, true},
		{"url in spec", []v1.TrafficTarget{{RevisionName: "r", URL: "http://x", Percent: p(100)}}, true},
		{"negative", []v1.TrafficTarget{{RevisionName: "r", Percent: p(-10)}, {RevisionName: "s", Percent: p(110)}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Validate(tc.spec)
			if (got != nil) != tc.invalid {
				t.Fatalf("Validate = %+v, want invalid=%v", got, tc.invalid)
			}
			if got != nil && (got.Status != corev1.ConditionFalse || got.Reason != v1.ReasonInvalidTraffic) {
				t.Errorf("problem = %+v", got)
			}
		})
	}
}
