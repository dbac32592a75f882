// Package telemetry turns config-observability's tracing and metrics keys into
// OpenTelemetry providers, and swaps them when the ConfigMap changes: Knative builds
// its providers once, so its components need a restart for a new endpoint or rate;
// Ferry's controller and gateway take it live.
//
// It is apart from the gateway and the reconcilers because both, in one process
// (ferry up) or two, share one set of providers, and because the hot path must pay
// nothing for it while tracing is off: Tracer is one atomic load, nil when no
// exporter is configured, so callers test a pointer and start no span at all (not
// even OpenTelemetry's no-op ones).
//
// Traces go over OTLP (gRPC or HTTP/protobuf) or to stdout; the sampler is
// Knative's (Sampler). Metrics stay on the manager's Prometheus endpoint whatever
// the protocol; with metrics-protocol grpc or http/protobuf the same series are
// also pushed over OTLP, read from the Prometheus registry through the
// OpenTelemetry Prometheus bridge every metrics-export-interval. W3C TraceContext
// and Baggage are the propagation (Propagator), as in Knative.
//
// An exporter that cannot reach its endpoint does not stop anything: spans and
// points are dropped after the SDK's retries, and the failure is logged, at most
// once per ErrorLogInterval with a count of the ones not logged.
package telemetry
