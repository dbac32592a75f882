package v1

import "strconv"

// Knative's defaults.
const (
	DefaultTimeoutSeconds       int64 = 300
	DefaultContainerConcurrency int64 = 0
)

// SetDefaults fills in what Knative's defaulting webhook would: the Service's traffic,
// and its template's defaults. It is idempotent; the reconcilers call it on a copy.
func (s *Service) SetDefaults() {
	s.Spec.Template.Spec.SetDefaults()
	if len(s.Spec.Traffic) == 0 {
		s.Spec.Traffic = []TrafficTarget{{Percent: ptr(int64(100)), LatestRevision: ptr(true)}}
	}
	defaultTraffic(s.Spec.Traffic)
}

// SetDefaults fills in the template's defaults.
func (c *Configuration) SetDefaults() { c.Spec.Template.Spec.SetDefaults() }

// SetDefaults fills in each traffic target's latestRevision.
func (r *Route) SetDefaults() { defaultTraffic(r.Spec.Traffic) }

// SetDefaults fills in a Revision's defaults.
func (r *Revision) SetDefaults() { r.Spec.SetDefaults() }

// SetDefaults fills in timeoutSeconds, containerConcurrency, container names and
// enableServiceLinks as Knative does.
func (rs *RevisionSpec) SetDefaults() {
	if rs.TimeoutSeconds == nil {
		rs.TimeoutSeconds = ptr(DefaultTimeoutSeconds)
	}
	if rs.ContainerConcurrency == nil {
		rs.ContainerConcurrency = ptr(DefaultContainerConcurrency)
	}
	if rs.EnableServiceLinks == nil {
		rs.EnableServiceLinks = ptr(false)
	}
	for i := range rs.Containers {
		c := &rs.Containers[i]
		if c.Name == "" {
			if len(rs.Containers) == 1 {
				c.Name = DefaultUserContainerName
			} else {
				c.Name = DefaultUserContainerName + "-" + strconv.Itoa(i)
			}
		}
	}
}

// defaultTraffic sets latestRevision to true where no revision is named.
func defaultTraffic(tt []TrafficTarget) {
	for i := range tt {
		if tt[i].LatestRevision == nil {
			tt[i].LatestRevision = ptr(tt[i].RevisionName == "")
		}
	}
}

func ptr[T any](v T) *T { return &v }
