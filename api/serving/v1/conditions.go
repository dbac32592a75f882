package v1

import "github.com/ferry-serving/ferry/api/duck"

// IsReady reports whether the Service is Ready for its current generation.
func (s *Service) IsReady() bool { return isReady(s.Generation, &s.Status.Status) }

// IsReady reports whether the Configuration is Ready for its current generation.
func (c *Configuration) IsReady() bool { return isReady(c.Generation, &c.Status.Status) }

// IsReady reports whether the Revision is Ready for its current generation.
func (r *Revision) IsReady() bool { return isReady(r.Generation, &r.Status.Status) }

// IsReady reports whether the Route is Ready for its current generation.
func (r *Route) IsReady() bool { return isReady(r.Generation, &r.Status.Status) }

// IsFailed reports whether the Revision's Ready condition is False for its current
// generation.
func (r *Revision) IsFailed() bool {
	return r.Status.ObservedGeneration == r.Generation && r.Status.GetCondition(duck.ConditionReady).IsFalse()
}

// isReady is Knative's rule: a status speaks for the object only when it observed the
// object's current generation.
func isReady(generation int64, s *duck.Status) bool {
	return s.ObservedGeneration == generation && s.GetCondition(duck.ConditionReady).IsTrue()
}

// DuckStatus returns the Service's Knative status, for code that handles every Knative
// kind alike.
func (s *Service) DuckStatus() *duck.Status { return &s.Status.Status }

// DuckStatus returns the Configuration's Knative status.
func (c *Configuration) DuckStatus() *duck.Status { return &c.Status.Status }

// DuckStatus returns the Revision's Knative status.
func (r *Revision) DuckStatus() *duck.Status { return &r.Status.Status }

// DuckStatus returns the Route's Knative status.
func (r *Route) DuckStatus() *duck.Status { return &r.Status.Status }
