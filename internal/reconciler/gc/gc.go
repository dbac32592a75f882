// Package gc deletes the Revisions of a Configuration that nothing needs any more,
// with Knative's rules: latest created, latest ready, routed and no-gc Revisions are
// never collected; of the others, the oldest go once they are both old enough since
// creation and since they last had traffic, as long as more than MinNonActive remain,
// and the oldest go regardless beyond MaxNonActive.
package gc

import (
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
)

// Disabled turns off the rule it is given to.
const Disabled = -1

// Options are the collection rules. A negative count or duration is Disabled.
type Options struct {
	// MinNonActive Revisions are kept whatever their age.
	MinNonActive int
	// MaxNonActive caps the non-active Revisions kept, whatever their age.
	MaxNonActive int
	// RetainSinceCreate keeps a Revision this long after its creation.
	RetainSinceCreate time.Duration
	// RetainSinceLastActive keeps a Revision this long after it last had traffic.
	RetainSinceLastActive time.Duration
}

// DefaultOptions are Knative's defaults.
func DefaultOptions() Options {
	return Options{
		MinNonActive:          20,
		MaxNonActive:          1000,
		RetainSinceCreate:     48 * time.Hour,
		RetainSinceLastActive: 15 * time.Hour,
	}
}

func (o Options) disabled() bool {
	return o.MaxNonActive < 0 && o.RetainSinceCreate < 0 && o.RetainSinceLastActive < 0
}

// Plan is what one collection decides.
type Plan struct {
	// Delete lists the Revisions to delete, oldest first.
	Delete []*v1.Revision
	// Recheck is when a kept Revision becomes old enough to go (zero if none will).
	Recheck time.Duration
}

// Collect decides which of a Configuration's Revisions to delete. routed holds the
// names of Revisions that some Route sends traffic to.
func Collect(now time.Time, o Options, cfg *v1.Configuration, revs []*v1.Revision, routed map[string]bool) Plan {
	if o.disabled() {
		return Plan{}
	}
	var idle []*v1.Revision
	for _, rev := range revs {
		if !isActive(cfg, rev, routed) {
			idle = append(idle, rev)
		}
	}
	if len(idle) <= max(o.MinNonActive, 0) {
		return Plan{}
	}
	sort.SliceStable(idle, func(i, j int) bool { return lastActive(idle[i]).Before(lastActive(idle[j])) })

	var p Plan
	kept := idle[:0:0]
	left := len(idle)
	for _, rev := range idle {
		if left > o.MinNonActive {
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
	if o.MaxNonActive >= 0 {
		for _, rev := range kept {
			if left <= o.MaxNonActive {
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
func untilStale(now time.Time, o Options, rev *v1.Revision) (time.Duration, bool) {
	if o.RetainSinceCreate < 0 && o.RetainSinceLastActive < 0 {
		return 0, false
	}
	var wait time.Duration
	if o.RetainSinceCreate >= 0 {
		wait = max(wait, since(rev.CreationTimestamp, o.RetainSinceCreate, now))
	}
	if o.RetainSinceLastActive >= 0 {
		wait = max(wait, since(metav1.NewTime(lastActive(rev)), o.RetainSinceLastActive, now))
	}
	return wait, true
}

func since(t metav1.Time, retain time.Duration, now time.Time) time.Duration {
	return t.Add(retain).Sub(now)
}

// OptionsFromConfig are config-gc's rules (config.GCDisabled is Disabled).
func OptionsFromConfig(c *config.GC) Options {
	return Options{
		MinNonActive:          int(c.MinNonActiveRevisions),
		MaxNonActive:          int(c.MaxNonActiveRevisions),
		RetainSinceCreate:     c.RetainSinceCreateTime,
		RetainSinceLastActive: c.RetainSinceLastActiveTime,
	}
}

// ConfigFromOptions is the config-gc that gives o (for a flag that overrides it).
func ConfigFromOptions(o Options) *config.GC {
	return &config.GC{
		MinNonActiveRevisions:     int64(o.MinNonActive),
		MaxNonActiveRevisions:     int64(o.MaxNonActive),
		RetainSinceCreateTime:     o.RetainSinceCreate,
		RetainSinceLastActiveTime: o.RetainSinceLastActive,
	}
}
