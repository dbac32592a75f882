// Package traffic resolves a Route's traffic targets to Revisions, and checks the
// targets that admission should have rejected.
package traffic

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// Getter reads what a Route's traffic names. The Route reconciler passes one backed by
// the tracker's reader, so every object read (found or not) wakes the Route when it
// changes.
type Getter interface {
	Configuration(ctx context.Context, name string) (*v1.Configuration, error)
	Revision(ctx context.Context, name string) (*v1.Revision, error)
}

// Problem is why traffic cannot be assigned yet (Status Unknown) or at all (False).
type Problem struct {
	Status  corev1.ConditionStatus
	Reason  string
	Message string
}

// Resolve turns spec targets (already defaulted) into status targets: each names a
// Revision, keeps its tag, percent and latestRevision, and drops configurationName.
// It reads every target, even after finding a problem, so that the Route tracks all
// of them; a False problem wins over an Unknown one, the first in spec order among
// equals. A non-nil error is a failed read worth retrying.
func Resolve(ctx context.Context, spec []v1.TrafficTarget, get Getter) ([]v1.TrafficTarget, *Problem, error) {
	out := make([]v1.TrafficTarget, 0, len(spec))
	var problem *Problem
	note := func(p *Problem) {
		if problem == nil || (problem.Status != corev1.ConditionFalse && p.Status == corev1.ConditionFalse) {
			problem = p
		}
	}
	for _, t := range spec {
		rev, p, err := resolveOne(ctx, t, get)
		if err != nil {
			return nil, nil, err
		}
		if p != nil {
			note(p)
			continue
		}
		out = append(out, v1.TrafficTarget{
			Tag:            t.Tag,
			RevisionName:   rev,
			LatestRevision: t.LatestRevision,
			Percent:        t.Percent,
		})
	}
	if problem != nil {
		return nil, problem, nil
	}
	return out, nil, nil
}

func resolveOne(ctx context.Context, t v1.TrafficTarget, get Getter) (string, *Problem, error) {
	name := t.RevisionName
	if t.ConfigurationName != "" {
		cfg, err := get.Configuration(ctx, t.ConfigurationName)
		if apierrors.IsNotFound(err) {
			return "", missing("Configuration", v1.ReasonConfigurationMissing, t.ConfigurationName), nil
		}
		if err != nil {
			return "", nil, err
		}
		name = cfg.Status.LatestReadyRevisionName
		if name == "" {
			if cfg.Status.GetCondition(v1.ConfigurationConditionReady).IsFalse() {
				return "", &Problem{corev1.ConditionFalse, v1.ReasonRevisionMissing,
					fmt.Sprintf("Configuration %q does not have any ready Revision.", cfg.Name)}, nil
			}
			return "", &Problem{corev1.ConditionUnknown, v1.ReasonRevisionMissing,
				fmt.Sprintf("Configuration %q is waiting for a Revision to become ready.", cfg.Name)}, nil
		}
	}
	rev, err := get.Revision(ctx, name)
	if apierrors.IsNotFound(err) {
		return "", missing("Revision", v1.ReasonRevisionMissing, name), nil
	}
	if err != nil {
		return "", nil, err
	}
	switch {
	case rev.IsReady():
		return name, nil, nil
	case rev.IsFailed():
		return "", &Problem{corev1.ConditionFalse, v1.ReasonRevisionMissing,
			fmt.Sprintf("Revision %q failed to become ready.", name)}, nil
	default:
		return "", &Problem{corev1.ConditionUnknown, v1.ReasonRevisionMissing,
			fmt.Sprintf("Revision %q is not yet ready.", name)}, nil
	}
}

func missing(kind, reason, name string) *Problem {
	return &Problem{corev1.ConditionFalse, reason, fmt.Sprintf("%s %q referenced in traffic not found.", kind, name)}
}

// Validate repeats the admission rules on defaulted spec targets, for objects that
// slipped past them. The message names the first broken rule.
func Validate(spec []v1.TrafficTarget) *Problem {
	invalid := func(format string, args ...any) *Problem {
		return &Problem{corev1.ConditionFalse, v1.ReasonInvalidTraffic, fmt.Sprintf(format, args...)}
	}
	var sum int64
	tags := make(map[string]bool, len(spec))
	for i, t := range spec {
		if (t.RevisionName == "") == (t.ConfigurationName == "") {
			return invalid("traffic[%d]: exactly one of revisionName or configurationName must be set", i)
		}
		if t.LatestRevision != nil && *t.LatestRevision && t.RevisionName != "" {
			return invalid("traffic[%d]: latestRevision may not be true with revisionName %q", i, t.RevisionName)
		}
		if t.URL != "" {
			return invalid("traffic[%d]: url is not allowed in spec", i)
		}
		if t.Tag != "" {
			if errs := validation.IsDNS1035Label(t.Tag); len(errs) > 0 {
				return invalid("traffic[%d]: tag %q: %s", i, t.Tag, errs[0])
			}
			if tags[t.Tag] {
				return invalid("traffic[%d]: tag %q is used more than once", i, t.Tag)
			}
			tags[t.Tag] = true
		}
		if t.Percent != nil {
			if *t.Percent < 0 || *t.Percent > 100 {
				return invalid("traffic[%d]: percent %d is not between 0 and 100", i, *t.Percent)
			}
			sum += *t.Percent
		}
	}
	if len(spec) > 0 && sum != 100 {
		return invalid("traffic percents sum to %d, not 100", sum)
	}
	return nil
}
