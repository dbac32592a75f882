// Package gc deletes the Revisions of a Configuration that nothing needs any more,
// with Knative's rules (config-gc): latest created, latest ready, routed and no-gc
// Revisions are never collected; of the others, the oldest go once they are both old
// enough since creation and since they last had traffic, as long as more than
// min-non-active-revisions remain, and the oldest go regardless beyond
// max-non-active-revisions.
package gc

import (
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
)

// disabled reports rules that never delete: no cap and no retention period.
func disabled(o *config.GC) bool {
	return o.MaxNonActiveRevisions < 0 && o.RetainSinceCreateTime < 0 && o.RetainSinceLastActiveTime < 0
}

// Plan is what one collection decides.
type Plan struct {
	// Delete lists the Revisions to delete, oldest first.
	Delete []*v1.Revision
	// Recheck is when a kept Revision becomes old enough to go (zero if none will).
	Recheck time.Duration
}

// Collect decides which of a Configuration's Revisions to delete under config-gc's
// rules o (config.GCDisabled, or any negative value, turns a rule off). routed holds
// the names of Revisions that some Route sends traffic to.
func Collect(now time.Time, o *config.GC, cfg *v1.Configuration, revs []*v1.Revision, routed map[string]bool) Plan {
	if disabled(o) {
		return Plan{}
	}
	var idle []*v1.Revision
	for _, rev := range revs {
		if !isActive(cfg, rev, routed) {
			idle = append(idle, rev)
		}
	}
	if int64(len(idle)) <= max(o.MinNonActiveRevisions, 0) {
		return Plan{}
	}
	sort.SliceStable(idle, func(i, j int) bool { return lastActive(idle[i]).Before(lastActive(idle[j])) })

	var p Plan
	kept := idle[:0:0]
	left := int64(len(idle))
	for _, rev := range idle {
		if left > o.MinNonActiveRevisions {
			if wait, ok := untilStale(now, o, rev); ok && wait <= 0 {
				p.Delete = append(p.Delete, rev)
				left--
				continue
			} else if ok && (p.Recheck == 0 || wait < p.Recheck) {
				p.Recheck = wait
			}
		}
		kept = append(kept, rev)
	}
	if o.MaxNonActiveRevisions >= 0 {
		for _, rev := range kept {
			if left <= o.MaxNonActiveRevisions {
				break
			}
			p.Delete = append(p.Delete, rev)
			left--
		}
	}
	return p
}

// isActive reports a Revision Knative never collects.
func isActive(cfg *v1.Configuration, rev *v1.Revision, routed map[string]bool) bool {
	return rev.Name == cfg.Status.LatestCreatedRevisionName ||
		rev.Name == cfg.Status.LatestReadyRevisionName ||
		routed[rev.Name] ||
		rev.Labels[v1.RoutingStateLabelKey] == string(v1.RoutingStateActive) ||
		rev.Annotations[v1.NoGCAnnotationKey] == "true"
}

// lastActive is when the Revision last had traffic, as far as anyone recorded it
// (Knative's routingStateModified annotation), else its creation.
func lastActive(rev *v1.Revision) time.Time {
	if s, ok := rev.Annotations[v1.RoutingStateModifiedAnnotation]; ok {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t
		}
	}
	return rev.CreationTimestamp.Time
}

// untilStale is how long until both retention periods have passed; ok is false when
// both are disabled, so that age alone never deletes.
func untilStale(now time.Time, o *config.GC, rev *v1.Revision) (time.Duration, bool) {
	if o.RetainSinceCreateTime < 0 && o.RetainSinceLastActiveTime < 0 {
		return 0, false
	}
	var wait time.Duration
	if o.RetainSinceCreateTime >= 0 {
		wait = max(wait, since(rev.CreationTimestamp, o.RetainSinceCreateTime, now))
	}
	if o.RetainSinceLastActiveTime >= 0 {
		wait = max(wait, since(metav1.NewTime(lastActive(rev)), o.RetainSinceLastActiveTime, now))
	}
	return wait, true
}

func since(t metav1.Time, retain time.Duration, now time.Time) time.Duration {
	return t.Add(retain).Sub(now)
}
