package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// GCDisabled turns a config-gc setting off (Knative stores "disabled" as -1).
const GCDisabled = -1

// GC is config-gc.
type GC struct {
	// RetainSinceCreateTime and RetainSinceLastActiveTime are GCDisabled (as a Duration)
	// when disabled.
	RetainSinceCreateTime     time.Duration
	RetainSinceLastActiveTime time.Duration
	MinNonActiveRevisions     int64
	// MaxNonActiveRevisions is GCDisabled when disabled.
	MaxNonActiveRevisions int64
}

// DefaultGC is Knative's config-gc defaults.
func DefaultGC() *GC {
	return &GC{
		RetainSinceCreateTime:     48 * time.Hour,
		RetainSinceLastActiveTime: 15 * time.Hour,
		MinNonActiveRevisions:     20,
		MaxNonActiveRevisions:     1000,
	}
}

// NewGCFromConfigMap parses config-gc as Knative does: the retain-* keys are Go
// durations ≥ 0 or "disabled", "" keeping the default; min-non-active-revisions is an
// integer ≥ 0 ("" and "disabled" are errors); max-non-active-revisions is an unsigned
// integer or "disabled" ("" keeps the default) and, unless disabled, ≥ min.
func NewGCFromConfigMap(cm *corev1.ConfigMap) (*GC, error) {
	data := dataOf(cm.Data)
	g := DefaultGC()
	var create, active, maxNA string
	if err := parse(data,
		asString("retain-since-create-time", &create),
		asString("retain-since-last-active-time", &active),
		asInt64("min-non-active-revisions", &g.MinNonActiveRevisions),
		asString("max-non-active-revisions", &maxNA),
	); err != nil {
		return nil, err
	}
	if g.MinNonActiveRevisions < 0 {
		return nil, fmt.Errorf("min-non-active-revisions must be non-negative, was: %d", g.MinNonActiveRevisions)
	}
	if err := disabledOrInt64(maxNA, &g.MaxNonActiveRevisions); err != nil {
		return nil, keyError("max-non-active-revisions", err)
	}
	if g.MaxNonActiveRevisions >= 0 && g.MinNonActiveRevisions > g.MaxNonActiveRevisions {
		return nil, fmt.Errorf("min-non-active-revisions (%d) must be <= max-non-active-revisions (%d)",
			g.MinNonActiveRevisions, g.MaxNonActiveRevisions)
	}
	if err := disabledOrDuration(create, &g.RetainSinceCreateTime); err != nil {
		return nil, keyError("retain-since-create-time", err)
	}
	if err := disabledOrDuration(active, &g.RetainSinceLastActiveTime); err != nil {
		return nil, keyError("retain-since-last-active-time", err)
	}
	return g, nil
}

func disabledOrInt64(v string, target *int64) error {
	switch {
	case v == "":
	case strings.EqualFold(v, "disabled"):
		*target = GCDisabled
	default:
		u, err := strconv.ParseUint(v, 10, 63)
		if err != nil {
			return err
		}
		*target = int64(u)
	}
	return nil
}

func disabledOrDuration(v string, target *time.Duration) error {
	switch {
	case v == "":
	case strings.EqualFold(v, "disabled"):
		*target = GCDisabled
	default:
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		if d < 0 {
			return fmt.Errorf("must be non-negative, was %v", d)
		}
		*target = d
	}
	return nil
}
