package config

import "time"

// Disabled for a GC setting (Knative stores "disabled" as -1).
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
