package scale

import (
	"time"

	"k8s.io/client-go/rest"
)

// Defaults of a run, after Knative's scale test.
const (
	DefaultConcurrency       = 50
	DefaultTimeoutPerService = 3 * time.Minute
	DefaultImage             = "ghcr.io/knative/helloworld-go:latest"
	// RunLabel marks every Service of a run (and, through the template, its
	// Revisions, Deployments and pods) with the run's ID.
	RunLabel = "ferry.dev/scale-run"
)

// unthrottled is cfg without client-side rate limiting, unless cfg asks for some.
func unthrottled(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS = -1
	}
	return cfg
}
