package telemetry

import (
	"context"
	"fmt"
	"os"

	"github.com/ferry-serving/ferry/internal/config"

	promcontrib "go.opentelemetry.io/contrib/bridges/prometheus"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/prometheus/client_golang/prometheus"
)

// metricsPipeline pushes the Prometheus registry's series over OTLP.
type metricsPipeline struct {
	provider *sdkmetric.MeterProvider
}

// newMetricsPipeline builds the OTLP push for s; nil for none and prometheus, which
// the manager's metrics endpoint serves as ever.
func newMetricsPipeline(s config.Export, res *resource.Resource, g prometheus.Gatherer) (*metricsPipeline, error) {
	var exporter sdkmetric.Exporter
	var err error
	switch s.Protocol {
	case "", config.ProtocolNone, config.ProtocolPrometheus:
		return nil, nil
	case config.ProtocolGRPC:
		var opts []otlpmetricgrpc.Option
		if u := endpointURL(s.Endpoint, "METRICS", ""); u != "" {
			opts = append(opts, otlpmetricgrpc.WithEndpointURL(u))
		}
		exporter, err = otlpmetricgrpc.New(context.Background(), opts...)
	case config.ProtocolHTTPProtobuf:
		var opts []otlpmetrichttp.Option
		if u := endpointURL(s.Endpoint, "METRICS", "/v1/metrics"); u != "" {
			opts = append(opts, otlpmetrichttp.WithEndpointURL(u))
		}
		exporter, err = otlpmetrichttp.New(context.Background(), opts...)
	default:
		return nil, fmt.Errorf("metrics-protocol %q is not one of none, prometheus, grpc, http/protobuf", s.Protocol)
	}
	if err != nil {
		return nil, err
	}
	readerOpts := []sdkmetric.PeriodicReaderOption{sdkmetric.WithProducer(promcontrib.NewMetricProducer(promcontrib.WithGatherer(g)))}
	// As Knative: OTEL_METRIC_EXPORT_INTERVAL wins, and 0 is the SDK's 60 s.
	if s.ExportInterval > 0 && os.Getenv("OTEL_METRIC_EXPORT_INTERVAL") == "" {
		readerOpts = append(readerOpts, sdkmetric.WithInterval(s.ExportInterval))
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exporter, readerOpts...)), sdkmetric.WithResource(res))
	return &metricsPipeline{provider: mp}, nil
}
