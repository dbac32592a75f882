package service

import (
	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// Condition reasons and messages, as in Knative.
const (
	ReasonOutOfDate          = "OutOfDate"
	ReasonNotOwned           = "NotOwned"
	ReasonTrafficNotMigrated = "TrafficNotMigrated"
)

// propagateConfiguration copies the Configuration's status into the Service's, but
// only once the Configuration has observed its current generation: before that its
// status describes an older template.
func propagateConfiguration(status *v1.ServiceStatus, m duck.ConditionManager, cfg *v1.Configuration) {
	if cfg.Status.ObservedGeneration != cfg.Generation {
		m.MarkUnknown(v1.ServiceConditionConfigurationsReady, ReasonOutOfDate,
			"The Configuration is still working to reflect the latest desired specification.")
		return
	}
	status.ConfigurationStatusFields = cfg.Status.ConfigurationStatusFields
	copyCondition(m, v1.ServiceConditionConfigurationsReady, cfg.Status.GetCondition(v1.ConfigurationConditionReady))
}

// propagateRoute copies the Route's status once it has observed its generation, and
// holds RoutesReady at TrafficNotMigrated until the Route actually serves what the
// Service asks for with its Configuration's latest ready Revision.
func propagateRoute(status *v1.ServiceStatus, m duck.ConditionManager, rt *v1.Route, want []v1.TrafficTarget, latestReady string) {
	if rt.Status.ObservedGeneration != rt.Generation {
		m.MarkUnknown(v1.ServiceConditionRoutesReady, ReasonOutOfDate,
			"The Route is still working to reflect the latest desired specification.")
		return
	}
	status.RouteStatusFields = *rt.Status.RouteStatusFields.DeepCopy()
	c := rt.Status.GetCondition(v1.RouteConditionReady)
	copyCondition(m, v1.ServiceConditionRoutesReady, c)
	if c.IsTrue() && !trafficMigrated(want, rt.Status.Traffic, latestReady) {
		m.MarkUnknown(v1.ServiceConditionRoutesReady, ReasonTrafficNotMigrated,
			"Traffic is not yet migrated to the latest revision.")
	}
}

// trafficMigrated compares the Route's served traffic with the Service's defaulted
// spec traffic in which latestRevision targets stand for latestReady.
func trafficMigrated(want, got []v1.TrafficTarget, latestReady string) bool {
	if len(want) != len(got) {
		return false
	}
	for i, w := range want {
		rev := w.RevisionName
		if w.LatestRevision != nil && *w.LatestRevision {
			rev = latestReady
		}
		g := got[i]
		if g.RevisionName != rev || g.Tag != w.Tag || percent(g.Percent) != percent(w.Percent) {
			return false
		}
	}
	return true
}

func percent(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// copyCondition mirrors a child's Ready condition (nil counts as Unknown).
func copyCondition(m duck.ConditionManager, t duck.ConditionType, c *duck.Condition) {
	switch {
	case c.IsTrue():
		m.MarkTrue(t)
	case c.IsFalse():
		m.MarkFalse(t, c.Reason, "%s", c.Message)
	case c == nil:
		m.MarkUnknown(t, "", "")
	default:
		m.MarkUnknown(t, c.Reason, "%s", c.Message)
	}
}
