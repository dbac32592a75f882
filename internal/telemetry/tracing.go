package telemetry

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/ferry-serving/ferry/internal/config"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// tracing is one configuration's provider and its tracer, swapped as one.
type tracing struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
}

// newTracing builds the provider for s; nil for none (or an empty protocol).
func newTracing(s config.Tracing, res *resource.Resource) (*tracing, error) {
	var exporter sdktrace.SpanExporter
	var err error
	sampler := Sampler(s.SamplingRate)
	switch s.Protocol {
	case "", config.ProtocolNone:
		return nil, nil
	case config.ProtocolGRPC:
		var opts []otlptracegrpc.Option
		if u := endpointURL(s.Endpoint, "TRACES", ""); u != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(u))
		}
		// New does not connect: grpc-go dials lazily, and reconnects by itself.
		exporter, err = otlptracegrpc.New(context.Background(), opts...)
	case config.ProtocolHTTPProtobuf:
		var opts []otlptracehttp.Option
		if u := endpointURL(s.Endpoint, "TRACES", "/v1/traces"); u != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(u))
		}
		exporter, err = otlptracehttp.New(context.Background(), opts...)
	case config.ProtocolStdout:
		// As Knative: stdout is for looking at, every span of it.
		sampler = sdktrace.AlwaysSample()
		exporter, err = stdouttrace.New(stdouttrace.WithWriter(os.Stdout))
	default:
		return nil, fmt.Errorf("tracing-protocol %q is not one of none, grpc, http/protobuf, stdout", s.Protocol)
	}
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithSampler(sampler), sdktrace.WithResource(res))
	return &tracing{provider: tp, tracer: tp.Tracer(ScopeName)}, nil
}

// Sampler is Knative's choice for tracing-sampling-rate: every trace at 1 or more
// (whatever the caller's sampled flag says), none at 0 or less, and in between that
// fraction of the traces that start here, while a request that arrives with a
// traceparent follows its sampled flag (ParentBased).
func Sampler(rate float64) sdktrace.Sampler {
	switch {
	case rate >= 1:
		return sdktrace.AlwaysSample()
	case rate <= 0:
		return sdktrace.NeverSample()
	default:
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(rate))
	}
}

// endpointURL is the exporter's endpoint for config-observability's endpoint, as
// Knative reads it: "" when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_<signal>_ENDPOINT is set (the environment wins, and the
// exporter reads it itself); https:// before an endpoint without a scheme. For
// HTTP/protobuf, an endpoint without a path gets the signal's default path, which
// the exporter would otherwise leave off.
func endpointURL(endpoint, signal, defaultPath string) string {
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != "" {
		return ""
	}
	if endpoint == "" {
		return ""
	}
	if !strings.Contains(endpoint, "://") {
		endpoint = "https://" + endpoint
	}
	if defaultPath != "" {
		if u, err := url.Parse(endpoint); err == nil && (u.Path == "" || u.Path == "/") {
			u.Path = defaultPath
			endpoint = u.String()
		}
	}
	return endpoint
}
