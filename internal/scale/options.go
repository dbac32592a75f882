package scale

// What a run is asked to do, checked and defaulted in one place before anything
// starts.

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
)

// Options configure a run.
type Options struct {
	// Config reaches the API server. The run's clients are not rate limited on the
	// client side unless Config.QPS is set: the API server's own limits are what is
	// measured.
	Config *rest.Config
	// Namespace holds the run's Services; it is created when missing. With
	// Namespaces > 1 it is the base of their names.
	Namespace string
	// Namespaces spreads the Services over this many namespaces (default 1: just
	// Namespace), <Namespace>-0 … <Namespace>-<K-1>, each created when missing:
	// Service i goes to namespace i mod K, the warm-up to the first.
	Namespaces int
	// N Services are created, at most Concurrency creates in flight.
	N           int
	Concurrency int
	// TimeoutPerService is each Service's deadline from its create request.
	TimeoutPerService time.Duration
	Image             string
	// GatewayURL, when set, is probed for each Ready Service with its URL's host
	// until a request is routed to its revision.
	GatewayURL string
	// RunID labels the run's objects (default: RunID of the start time).
	RunID string
	// Warmup first creates one Service and waits until it is Ready (and routed), so
	// that the run does not time Ferry's start-up. Its writes are not counted.
	Warmup bool
	// Progress receives progress; Terminal draws a bar in place.
	Progress io.Writer
	Terminal bool
	// InProcess says the control plane runs in this process: Result.Process reports
	// its CPU and memory.
	InProcess bool
	// Metrics, if set, gathers Ferry's controller's metrics (controller-runtime's
	// registry in-process, MetricsAt for another process): the report gives each
	// controller's queue waits.
	Metrics prometheus.Gatherer
	// FerryWrites, if set, counts Ferry's own writes (its rest.Config wrapped).
	FerryWrites *WriteCounter
	// Phases also watches the Services' Configurations, Revisions, Deployments,
	// pods, Routes and KIngresses, to tell when each reached which milestone: where
	// the time goes. The watches add some load on the API server.
	Phases bool
	// Rand draws the names (default: seeded at random).
	Rand *rand.Rand
}

func (o Options) withDefaults() (Options, error) {
	if o.Config == nil {
		return o, errors.New("scale: no rest.Config")
	}
	if o.N <= 0 {
		return o, fmt.Errorf("scale: N must be positive, not %d", o.N)
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.TimeoutPerService <= 0 {
		o.TimeoutPerService = DefaultTimeoutPerService
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if o.RunID == "" {
		o.RunID = RunID(time.Now(), o.Rand)
	}
	if o.Namespace == "" {
		o.Namespace = "ferry-scale-" + o.RunID
	}
	switch {
	case o.Namespaces == 0:
		o.Namespaces = 1
	case o.Namespaces < 0 || o.Namespaces > o.N:
		return o, fmt.Errorf("scale: Namespaces must be between 1 and N (%d), not %d", o.N, o.Namespaces)
	case o.Namespaces > 1:
		if err := validNamespaces(NamespaceNames(o.Namespace, o.Namespaces)); err != nil {
			return o, err
		}
	}
	if o.GatewayURL != "" && !strings.Contains(o.GatewayURL, "://") {
		o.GatewayURL = "http://" + o.GatewayURL
	}
	return o, nil
}
