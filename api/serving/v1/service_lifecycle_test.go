package v1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-serving/ferry/api/duck"
)

func p(i int64) *int64 { return &i }
func b(v bool) *bool   { return &v }

func TestTrafficMigrated(t *testing.T) {
	latest := []TrafficTarget{{LatestRevision: b(true), Percent: p(100)}}
	split := []TrafficTarget{{LatestRevision: b(true), Percent: p(50), Tag: "new"}, {RevisionName: "s-00001", LatestRevision: b(false), Percent: p(50)}}
	tests := []struct {
		name string
		want []TrafficTarget
		got  []TrafficTarget
		ok   bool
	}{
		{"on latest ready", latest, []TrafficTarget{{RevisionName: "s-00002", Percent: p(100)}}, true},
		{"still on the old one", latest, []TrafficTarget{{RevisionName: "s-00001", Percent: p(100)}}, false},
		{"not resolved yet", latest, nil, false},
		{"split", split, []TrafficTarget{{RevisionName: "s-00002", Percent: p(50), Tag: "new"}, {RevisionName: "s-00001", Percent: p(50)}}, true},
		{"split percents differ", split, []TrafficTarget{{RevisionName: "s-00002", Percent: p(100), Tag: "new"}, {RevisionName: "s-00001"}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := trafficMigrated(tc.want, tc.got, "s-00002"); got != tc.ok {
				t.Errorf("trafficMigrated = %v, want %v", got, tc.ok)
			}
		})
	}
}

func ready(status corev1.ConditionStatus, reason string) []duck.Condition {
	return []duck.Condition{{Type: duck.ConditionReady, Status: status, Reason: reason, Message: reason + " message"}}
}

func TestPropagate(t *testing.T) {
	cfg := func(observed int64, conds []duck.Condition) *Configuration {
		c := &Configuration{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
		c.Status.ObservedGeneration = observed
		c.Status.Conditions = conds
		c.Status.LatestCreatedRevisionName, c.Status.LatestReadyRevisionName = "s-00002", "s-00002"
		return c
	}
	route := func(observed int64, conds []duck.Condition, rev string) *Route {
		r := &Route{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
		r.Status.ObservedGeneration = observed
		r.Status.Conditions = conds
		r.Status.URL = "http://s.ns.example.com"
		r.Status.Traffic = []TrafficTarget{{RevisionName: rev, LatestRevision: b(true), Percent: p(100)}}
		return r
	}
	want := []TrafficTarget{{LatestRevision: b(true), Percent: p(100)}}
	tests := []struct {
		name       string
		cfg        *Configuration
		rt         *Route
		status     corev1.ConditionStatus
		cfgReason  string
		rtReason   string
		wantFields bool
	}{
		{"all ready", cfg(2, ready(corev1.ConditionTrue, "")), route(1, ready(corev1.ConditionTrue, ""), "s-00002"), corev1.ConditionTrue, "", "", true},
		{"configuration out of date", cfg(1, ready(corev1.ConditionTrue, "")), route(1, ready(corev1.ConditionTrue, ""), "s-00002"), corev1.ConditionUnknown, ReasonOutOfDate, ReasonTrafficNotMigrated, false},
		{"route out of date", cfg(2, ready(corev1.ConditionTrue, "")), route(0, nil, ""), corev1.ConditionUnknown, "", ReasonOutOfDate, true},
		{"traffic not migrated", cfg(2, ready(corev1.ConditionTrue, "")), route(1, ready(corev1.ConditionTrue, ""), "s-00001"), corev1.ConditionUnknown, "", ReasonTrafficNotMigrated, true},
		{"revision failed", cfg(2, ready(corev1.ConditionFalse, "RevisionFailed")), route(1, ready(corev1.ConditionTrue, ""), "s-00002"), corev1.ConditionFalse, "RevisionFailed", "", true},
		{"route waiting", cfg(2, ready(corev1.ConditionTrue, "")), route(1, ready(corev1.ConditionUnknown, "RevisionMissing"), "s-00002"), corev1.ConditionUnknown, "", "RevisionMissing", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &ServiceStatus{}
			ServiceConditions.Manage(&s.Status).InitializeConditions()
			s.PropagateConfigurationStatus(tc.cfg)
			s.PropagateRouteStatus(tc.rt, want)
			if c := s.GetCondition(ServiceConditionReady); c.Status != tc.status {
				t.Errorf("Ready = %+v, want %s", c, tc.status)
			}
			if c := s.GetCondition(ServiceConditionConfigurationsReady); c.Reason != tc.cfgReason {
				t.Errorf("ConfigurationsReady = %+v, want reason %q", c, tc.cfgReason)
			}
			if c := s.GetCondition(ServiceConditionRoutesReady); c.Reason != tc.rtReason {
				t.Errorf("RoutesReady = %+v, want reason %q", c, tc.rtReason)
			}
			if got := s.LatestReadyRevisionName != ""; got != tc.wantFields {
				t.Errorf("configuration fields copied = %v, want %v", got, tc.wantFields)
			}
		})
	}
}
