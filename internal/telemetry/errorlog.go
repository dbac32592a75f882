package telemetry

import (
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// ErrorLogInterval is how often, at most, an export failure is logged: an endpoint
// that is down fails every batch, and one line per batch would drown the log.
const ErrorLogInterval = 30 * time.Second

// errorLog logs OpenTelemetry's errors (exports that failed after the SDK's
// retries, mostly), at most one line per interval, with the number left unlogged
// since the last.
type errorLog struct {
	logger   logr.Logger
	interval time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func newErrorLog(logger logr.Logger, interval time.Duration) *errorLog {
	return &errorLog{logger: logger, interval: interval}
}

func (e *errorLog) log(err error) {
	e.mu.Lock()
	now := time.Now()
	if !e.last.IsZero() && now.Sub(e.last) < e.interval {
		e.suppressed++
		e.mu.Unlock()
		return
	}
	suppressed := e.suppressed
	e.last, e.suppressed = now, 0
	e.mu.Unlock()
	e.logger.Error(err, "OpenTelemetry reported an error (an export that fails drops its spans or metric points)", "notLoggedSince", suppressed)
}
