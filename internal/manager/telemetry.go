package manager

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/telemetry"
)

// addTelemetry adds to mgr the process's tracer and meter providers, which follow
// config-observability from store live, and are flushed when the manager stops. The
// metrics that go out over OTLP are those of controller-runtime's registry, which the
// metrics endpoint serves.
func addTelemetry(mgr ctrl.Manager, store *config.Store, opts Options) (*telemetry.Telemetry, error) {
	name := "ferry"
	switch {
	case opts.Gateway == nil:
		name = "ferry-controller"
	case !opts.Reconcilers:
		name = "ferry-gateway"
	}
	log := mgr.GetLogger().WithName("telemetry")
	tel := telemetry.New(telemetry.Options{ServiceName: name, Gatherer: ctrlmetrics.Registry, Logger: log})
	apply := func(c *config.Config) {
		if err := tel.Apply(c.Observability); err != nil {
			log.Error(err, "Applying config-observability")
		}
	}
	apply(store.Load())
	store.OnChange(func(_, c *config.Config) { apply(c) })
	if err := mgr.Add(tel); err != nil {
		return nil, fmt.Errorf("adding telemetry: %w", err)
	}
	return tel, nil
}
