package service

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler/service/resources"
)

func p(i int64) *int64 { return &i }
func b(v bool) *bool   { return &v }

func TestTrafficMigrated(t *testing.T) {
	latest := []v1.TrafficTarget{{LatestRevision: b(true), Percent: p(100)}}
	split := []v1.TrafficTarget{{LatestRevision: b(true), Percent: p(50), Tag: "new"}, {RevisionName: "s-00001", LatestRevision: b(false), Percent: p(50)}}
	tests := []struct {
		name string
		want []v1.TrafficTarget
		got  []v1.TrafficTarget
		ok   bool
	}{
		{"on latest ready", latest, []v1.TrafficTarget{{RevisionName: "s-00002", Percent: p(100)}}, true},
		{"still on the old one", latest, []v1.TrafficTarget{{RevisionName: "s-00001", Percent: p(100)}}, false},
		{"not resolved yet", latest, nil, false},
		{"split", split, []v1.TrafficTarget{{RevisionName: "s-00002", Percent: p(50), Tag: "new"}, {RevisionName: "s-00001", Percent: p(50)}}, true},
		{"split percents differ", split, []v1.TrafficTarget{{RevisionName: "s-00002", Percent: p(100), Tag: "new"}, {RevisionName: "s-00001"}}, false},
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
	cfg := func(observed int64, conds []duck.Condition) *v1.Configuration {
		c := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
		c.Status.ObservedGeneration = observed
		c.Status.Conditions = conds
		c.Status.LatestCreatedRevisionName, c.Status.LatestReadyRevisionName = "s-00002", "s-00002"
		return c
	}
	route := func(observed int64, conds []duck.Condition, rev string) *v1.Route {
		r := &v1.Route{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
		r.Status.ObservedGeneration = observed
		r.Status.Conditions = conds
		r.Status.URL = "http://s.ns.example.com"
		r.Status.Traffic = []v1.TrafficTarget{{RevisionName: rev, LatestRevision: b(true), Percent: p(100)}}
		return r
	}
	want := []v1.TrafficTarget{{LatestRevision: b(true), Percent: p(100)}}
	tests := []struct {
		name       string
		cfg        *v1.Configuration
		rt         *v1.Route
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
			s := &v1.ServiceStatus{}
			m := v1.ServiceConditions.Manage(&s.Status)
			m.InitializeConditions()
			propagateConfiguration(s, m, tc.cfg)
			propagateRoute(s, m, tc.rt, want, s.LatestReadyRevisionName)
			if c := s.GetCondition(v1.ServiceConditionReady); c.Status != tc.status {
				t.Errorf("Ready = %+v, want %s", c, tc.status)
			}
			if c := s.GetCondition(v1.ServiceConditionConfigurationsReady); c.Reason != tc.cfgReason {
				t.Errorf("ConfigurationsReady = %+v, want reason %q", c, tc.cfgReason)
			}
			if c := s.GetCondition(v1.ServiceConditionRoutesReady); c.Reason != tc.rtReason {
				t.Errorf("RoutesReady = %+v, want reason %q", c, tc.rtReason)
			}
			if got := s.LatestReadyRevisionName != ""; got != tc.wantFields {
				t.Errorf("configuration fields copied = %v, want %v", got, tc.wantFields)
			}
		})
	}
}

func TestMakeChildren(t *testing.T) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", UID: "svc-uid",
		Labels:      map[string]string{v1.VisibilityLabelKey: v1.VisibilityClusterLocal},
		Annotations: map[string]string{"a": "b", corev1.LastAppliedConfigAnnotation: "{}"}}}
	svc.Spec.Traffic = []v1.TrafficTarget{{Percent: p(90), Tag: "latest"}, {RevisionName: "s-00001", Percent: p(10)}}
	svc.SetDefaults(context.Background())

	rt := resources.MakeRoute(svc)
	if rt.Spec.Traffic[0].ConfigurationName != "s" || !*rt.Spec.Traffic[0].LatestRevision || rt.Spec.Traffic[0].Tag != "latest" {
		t.Errorf("latest target = %+v", rt.Spec.Traffic[0])
	}
	if rt.Spec.Traffic[1].ConfigurationName != "" || rt.Spec.Traffic[1].RevisionName != "s-00001" {
		t.Errorf("pinned target = %+v", rt.Spec.Traffic[1])
	}
	cfg := resources.MakeConfiguration(svc)
	for _, o := range []metav1.Object{rt, cfg} {
		if o.GetName() != "s" || o.GetLabels()[v1.ServiceLabelKey] != "s" || o.GetLabels()[v1.ServiceUIDLabelKey] != "svc-uid" ||
			o.GetLabels()[v1.VisibilityLabelKey] != v1.VisibilityClusterLocal || !metav1.IsControlledBy(o, svc) {
			t.Errorf("metadata = %+v", o)
		}
		if a := o.GetAnnotations(); a["a"] != "b" || a[corev1.LastAppliedConfigAnnotation] != "" {
			t.Errorf("annotations = %v", a)
		}
	}
	if svc.Spec.Traffic[0].ConfigurationName != "" {
		t.Error("MakeRoute changed the Service")
	}
}
