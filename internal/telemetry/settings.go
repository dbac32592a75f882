package telemetry

import "time"

// The protocols of config-observability's metrics-protocol and tracing-protocol.
const (
	ProtocolNone         = "none"
	ProtocolPrometheus   = "prometheus"
	ProtocolGRPC         = "grpc"
	ProtocolHTTPProtobuf = "http/protobuf"
	ProtocolStdout       = "stdout"
)

// Settings are the keys of config-observability that telemetry applies, already
// validated.
type Settings struct {
	Tracing Tracing
	Metrics Export
}

// Tracing is tracing-protocol, tracing-endpoint and tracing-sampling-rate.
type Tracing struct {
	Protocol, Endpoint string
	SamplingRate       float64
}

// Export is metrics-protocol, metrics-endpoint and metrics-export-interval.
type Export struct {
	Protocol, Endpoint string
	ExportInterval     time.Duration
}
