package v1

import "github.com/ferry-serving/ferry/api/duck"

// Service condition types.
const (
	ServiceConditionReady                                  = duck.ConditionReady
	ServiceConditionConfigurationsReady duck.ConditionType = "ConfigurationsReady"
	ServiceConditionRoutesReady         duck.ConditionType = "RoutesReady"
)

// ServiceConditions derives Ready from its Configuration and its Route.
var ServiceConditions = duck.NewLivingConditionSet(ServiceConditionConfigurationsReady, ServiceConditionRoutesReady)

// Reasons of a Service's conditions, as in Knative.
const (
	// ReasonOutOfDate: a child has not yet observed the generation the Service wrote.
	ReasonOutOfDate = "OutOfDate"
	// ReasonTrafficNotMigrated: the Route is Ready, but not yet with the traffic the
	// Service asks for (its latest ready Revision, its split).
	ReasonTrafficNotMigrated = "TrafficNotMigrated"
)

// PropagateConfigurationStatus copies the Configuration's status into the Service's, but
// only once the Configuration has observed its current generation: before that its
// status describes an older template.
func (ss *ServiceStatus) PropagateConfigurationStatus(cfg *Configuration) {
	m := ServiceConditions.Manage(&ss.Status)
	if cfg.Status.ObservedGeneration != cfg.Generation {
		m.MarkUnknown(ServiceConditionConfigurationsReady, ReasonOutOfDate,
			"The Configuration is still working to reflect the latest desired specification.")
		return
	}
	ss.ConfigurationStatusFields = cfg.Status.ConfigurationStatusFields
	m.Mirror(ServiceConditionConfigurationsReady, cfg.Status.GetCondition(ConfigurationConditionReady))
}

// PropagateRouteStatus copies the Route's status once it has observed its generation,
// and holds RoutesReady at TrafficNotMigrated until the Route serves want, the
// Service's defaulted traffic, with latestRevision targets standing for the
// Configuration's latest ready Revision (call PropagateConfigurationStatus first).
func (ss *ServiceStatus) PropagateRouteStatus(rt *Route, want []TrafficTarget) {
	m := ServiceConditions.Manage(&ss.Status)
	if rt.Status.ObservedGeneration != rt.Generation {
		m.MarkUnknown(ServiceConditionRoutesReady, ReasonOutOfDate,
			"The Route is still working to reflect the latest desired specification.")
		return
	}
	ss.RouteStatusFields = *rt.Status.RouteStatusFields.DeepCopy()
	c := rt.Status.GetCondition(RouteConditionReady)
	m.Mirror(ServiceConditionRoutesReady, c)
	if c.IsTrue() && !trafficMigrated(want, rt.Status.Traffic, ss.LatestReadyRevisionName) {
		m.MarkUnknown(ServiceConditionRoutesReady, ReasonTrafficNotMigrated,
			"Traffic is not yet migrated to the latest revision.")
	}
}

// trafficMigrated compares the Route's served traffic with the Service's defaulted
// spec traffic in which latestRevision targets stand for latestReady.
func trafficMigrated(want, got []TrafficTarget, latestReady string) bool {
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
