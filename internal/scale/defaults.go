package scale

import (
	"time"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
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

// Scheme knows Kubernetes' kinds and Knative's.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme, netv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// unthrottled is cfg without client-side rate limiting, unless cfg asks for some.
func unthrottled(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS = -1
	}
	return cfg
}
