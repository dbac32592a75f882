package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/trace"

	"github.com/ferry-serving/ferry/internal/config"
)

// ScopeName is the instrumentation scope of Ferry's spans.
const ScopeName = "github.com/ferry-serving/ferry"

// ShutdownTimeout bounds the flush of a provider that a new configuration or the
// process's end replaces: spans still queued for an endpoint that does not answer
// are dropped after it.
const ShutdownTimeout = 5 * time.Second

// Propagator is W3C TraceContext and Baggage, what every Knative component uses
// (B3 is not propagated).
var Propagator propagation.TextMapPropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Options configure a Telemetry.
type Options struct {
	// ServiceName is the resource's service.name unless OTEL_SERVICE_NAME says
	// otherwise (default "ferry").
	ServiceName string
	// Gatherer is what goes out over OTLP when metrics-protocol asks for it (default:
	// prometheus.DefaultGatherer; Ferry passes controller-runtime's registry, which
	// its metrics endpoint serves).
	Gatherer prometheus.Gatherer
	// Logger logs configuration changes and, rate-limited, export failures.
	Logger logr.Logger
}

// Telemetry holds the process's current tracer and meter providers. Its methods are
// safe for concurrent use, and a nil *Telemetry is tracing off.
type Telemetry struct {
	opts     Options
	resource *resource.Resource

	// tracing is nil while tracing is off.
	tracing atomic.Pointer[tracing]

	// mu serialises Apply; tracingApplied and metricsApplied are what it last
	// applied.
	mu             sync.Mutex
	tracingApplied config.Tracing
	metricsApplied config.Export
	metrics        *metricsPipeline
	// retired counts the providers being shut down, for Shutdown to wait for.
	retired sync.WaitGroup

	errors *errorLog
}

// New returns a Telemetry with tracing and OTLP metrics off until Apply. It sets
// OpenTelemetry's global propagator to Propagator, and its error handler to the
// rate-limited log, so that libraries that use the globals behave alike.
func New(opts Options) *Telemetry {
	if opts.ServiceName == "" {
		opts.ServiceName = "ferry"
	}
	if opts.Gatherer == nil {
		opts.Gatherer = prometheus.DefaultGatherer
	}
	t := &Telemetry{opts: opts, resource: newResource(opts.ServiceName), errors: newErrorLog(opts.Logger, ErrorLogInterval)}
	otel.SetTextMapPropagator(Propagator)
	otel.SetErrorHandler(otel.ErrorHandlerFunc(t.errors.log))
	return t
}

// newResource is the SDK's default resource (OTEL_RESOURCE_ATTRIBUTES, the SDK's
// name and version) with service.name, which OTEL_SERVICE_NAME overrides.
func newResource(serviceName string) *resource.Resource {
	if os.Getenv("OTEL_SERVICE_NAME") != "" {
		return resource.Default()
	}
	r, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", serviceName)))
	if err != nil {
		return resource.Default()
	}
	return r
}

// Tracer is the current tracer, or nil while tracing is off: callers start no span
// then. One atomic load.
func (t *Telemetry) Tracer() trace.Tracer {
	if t == nil {
		return nil
	}
	if tr := t.tracing.Load(); tr != nil {
		return tr.tracer
	}
	return nil
}

// Apply makes o's tracing and metrics export the configuration in force, without a
// restart: what changed is built anew and swapped in, and the providers it replaces
// are flushed and shut down in the background within ShutdownTimeout. It returns the
// errors of building an exporter; the part that failed is left off, the rest
// applies. o has passed the Store's validation.
func (t *Telemetry) Apply(o *config.Observability) error {
	return t.apply(o.Tracing, o.Metrics)
}

func (t *Telemetry) apply(tc config.Tracing, mc config.Export) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	if tc != t.tracingApplied {
		next, err := newTracing(tc, t.resource)
		if err != nil {
			errs = append(errs, fmt.Errorf("tracing: %w", err))
		}
		var old *tracing
		if next == nil {
			old = t.tracing.Swap(nil)
		} else {
			old = t.tracing.Swap(next)
		}
		if old != nil {
			t.retire(old.provider.Shutdown)
		}
		t.opts.Logger.Info("Tracing configured", "protocol", tc.Protocol, "endpoint", tc.Endpoint, "samplingRate", tc.SamplingRate)
	}
	if mc != t.metricsApplied {
		next, err := newMetricsPipeline(mc, t.resource, t.opts.Gatherer)
		if err != nil {
			errs = append(errs, fmt.Errorf("metrics: %w", err))
		}
		if old := t.metrics; old != nil {
			t.retire(old.provider.Shutdown)
		}
		t.metrics = next
		t.opts.Logger.Info("Metrics export configured", "protocol", mc.Protocol, "endpoint", mc.Endpoint, "interval", mc.ExportInterval)
	}
	t.tracingApplied, t.metricsApplied = tc, mc
	return errors.Join(errs...)
}

// retire shuts a replaced provider down in the background: a swap must not wait for
// an endpoint that does not answer. Requests that loaded the old tracer end their
// spans on it, and the provider drops what comes after its shutdown.
func (t *Telemetry) retire(shutdown func(context.Context) error) {
	t.retired.Add(1)
	go func() {
		defer t.retired.Done()
		ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			t.errors.log(fmt.Errorf("shutting down a replaced provider: %w", err))
		}
	}()
}

// Start runs until ctx ends, then flushes and shuts the providers down: it is a
// controller-runtime Runnable, so that the manager's stop sends the last spans.
func (t *Telemetry) Start(ctx context.Context) error {
	<-ctx.Done()
	t.Shutdown()
	return nil
}

// NeedLeaderElection is false: every replica traces and exports.
func (t *Telemetry) NeedLeaderElection() bool { return false }

// Shutdown turns tracing and OTLP metrics off, flushing what they hold within
// ShutdownTimeout, and waits for the providers replaced before.
func (t *Telemetry) Shutdown() {
	t.apply(config.Tracing{Protocol: config.ProtocolNone}, config.Export{Protocol: config.ProtocolNone})
	t.retired.Wait()
}
