package config

import (
	"errors"
	"fmt"
	"strconv"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ObservabilityConfigName is Knative's ConfigMap of request logs, traces, metrics
// export and profiling.
const ObservabilityConfigName = "config-observability"

// DefaultRequestLogTemplate is Knative's logging.request-log-template: one JSON object
// per request, so an existing log pipeline reads the gateway's lines unchanged.
const DefaultRequestLogTemplate = `{"httpRequest": {"requestMethod": "{{.Request.Method}}", "requestUrl": "{{js .Request.RequestURI}}", "requestSize": "{{.Request.ContentLength}}", "status": {{.Response.Code}}, "responseSize": "{{.Response.Size}}", "userAgent": "{{js .Request.UserAgent}}", "remoteIp": "{{js .Request.RemoteAddr}}", "serverIp": "{{.Revision.PodIP}}", "referer": "{{js .Request.Referer}}", "latency": "{{.Response.Latency}}s", "protocol": "{{.Request.Proto}}"}, "traceId": "{{.TraceID}}"}`

// The protocols of metrics-protocol and tracing-protocol, as Knative spells them.
const (
	ProtocolNone         = "none"
	ProtocolPrometheus   = "prometheus"
	ProtocolGRPC         = "grpc"
	ProtocolHTTPProtobuf = "http/protobuf"
	ProtocolStdout       = "stdout"
)

// Observability is config-observability (Knative 1.18 and later).
type Observability struct {
	// EnableVarLogCollection is logging.enable-var-log-collection (no effect in Ferry).
	EnableVarLogCollection bool
	// RevisionURLTemplate is logging.revision-url-template: a Revision's status.logUrl,
	// with ${REVISION_UID} replaced by its UID; "" sets none.
	RevisionURLTemplate string
	// RequestLogTemplate is logging.request-log-template, a Go text/template that
	// parses; EnableRequestLog turns the gateway's request log on with it.
	RequestLogTemplate string
	EnableRequestLog   bool
	// EnableProbeRequestLog logs probe requests too (only with EnableRequestLog).
	EnableProbeRequestLog bool
	// Metrics is metrics-protocol, -endpoint and -export-interval: where Ferry's own
	// metrics go, besides the Prometheus endpoint each component always serves.
	Metrics Export
	// RequestMetrics is request-metrics-*, Knative's queue-proxy metrics (no effect
	// in Ferry, which runs no queue-proxy).
	RequestMetrics Export
	Tracing        Tracing
	// RuntimeProfiling is runtime-profiling ("enabled"), RuntimeExportInterval
	// runtime-export-interval (no effect in Ferry: see noEffectKeys).
	RuntimeProfiling      bool
	RuntimeExportInterval time.Duration
}

// Export is where metrics go: a protocol, an endpoint (required for OTLP, forbidden
// for none) and the push period (0: OpenTelemetry's default, 60 s).
type Export struct {
	Protocol       string
	Endpoint       string
	ExportInterval time.Duration
}

// Tracing is tracing-protocol, tracing-endpoint and tracing-sampling-rate.
type Tracing struct {
	Protocol string
	// Endpoint is required for OTLP, and empty for none and stdout.
	Endpoint string
	// SamplingRate is the fraction of new traces sampled, 0 to 1.
	SamplingRate float64
}

// DefaultObservability is config-observability with no key set: Knative's code
// defaults (its _example block shows other values).
func DefaultObservability() *Observability {
	return &Observability{
		RequestLogTemplate:    DefaultRequestLogTemplate,
		Metrics:               Export{Protocol: ProtocolNone},
		RequestMetrics:        Export{Protocol: ProtocolNone},
		Tracing:               Tracing{Protocol: ProtocolNone},
		RuntimeExportInterval: 15 * time.Second,
	}
}

// NewObservabilityFromConfigMap parses config-observability as Knative does
// (knative.dev/serving/pkg/observability and knative.dev/pkg/observability): protocols
// are spelt exactly, an OTLP protocol needs an endpoint and none forbids one, the
// sampling rate is within [0, 1], and the request-log template must parse, which it
// must not be empty for when request logs are on.
func NewObservabilityFromConfigMap(cm *corev1.ConfigMap) (*Observability, error) {
	data := dataOf(cm.Data)
	o := DefaultObservability()
	var rate, profiling string
	if err := parse(data,
		asBool("logging.enable-var-log-collection", &o.EnableVarLogCollection),
		asString("logging.revision-url-template", &o.RevisionURLTemplate),
		asString("logging.request-log-template", &o.RequestLogTemplate),
		asBool("logging.enable-request-log", &o.EnableRequestLog),
		asBool("logging.enable-probe-request-log", &o.EnableProbeRequestLog),
		asExport("", &o.Metrics),
		asExport("request-", &o.RequestMetrics),
		asString("tracing-protocol", &o.Tracing.Protocol),
		asString("tracing-endpoint", &o.Tracing.Endpoint),
		asString("tracing-sampling-rate", &rate),
		asString("runtime-profiling", &profiling),
		asDuration("runtime-export-interval", &o.RuntimeExportInterval),
	); err != nil {
		return nil, err
	}
	if rate != "" {
		r, err := strconv.ParseFloat(rate, 64)
		if err != nil {
			return nil, keyError("tracing-sampling-rate", err)
		}
		o.Tracing.SamplingRate = r
	}
	switch profiling {
	case "", "disabled":
	case "enabled":
		o.RuntimeProfiling = true
	default:
		return nil, fmt.Errorf("runtime-profiling: unsupported profile setting %q (enabled or disabled)", profiling)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	return o, nil
}

func asExport(prefix string, target *Export) parseFunc {
	return func(data map[string]string) error {
		return parse(data,
			asString(prefix+"metrics-protocol", &target.Protocol),
			asString(prefix+"metrics-endpoint", &target.Endpoint),
			asDuration(prefix+"metrics-export-interval", &target.ExportInterval))
	}
}

func (o *Observability) validate() error {
	if err := o.Metrics.validate(""); err != nil {
		return err
	}
	if err := o.RequestMetrics.validate("request-"); err != nil {
		return err
	}
	if err := o.Tracing.validate(); err != nil {
		return err
	}
	if o.RuntimeExportInterval < 0 {
		return fmt.Errorf("runtime-export-interval: %v should not be negative", o.RuntimeExportInterval)
	}
	if o.EnableRequestLog && o.RequestLogTemplate == "" {
		return errors.New(`"logging.enable-request-log" was set to true, but no "logging.request-log-template" was specified`)
	}
	if o.RequestLogTemplate != "" {
		if _, err := template.New("requestLog").Parse(o.RequestLogTemplate); err != nil {
			return keyError("logging.request-log-template", err)
		}
	}
	return nil
}

func (e Export) validate(prefix string) error {
	protocol, endpoint := prefix+"metrics-protocol", prefix+"metrics-endpoint"
	switch e.Protocol {
	case ProtocolGRPC, ProtocolHTTPProtobuf:
		if e.Endpoint == "" {
			return fmt.Errorf("%s must be set when %s is %q", endpoint, protocol, e.Protocol)
		}
	case ProtocolNone:
		if e.Endpoint != "" {
			return fmt.Errorf("%s must not be set when %s is %q", endpoint, protocol, e.Protocol)
		}
	case ProtocolPrometheus:
	default:
		return fmt.Errorf("%s: unsupported protocol %q (none, prometheus, grpc or http/protobuf)", protocol, e.Protocol)
	}
	if e.ExportInterval < 0 {
		return fmt.Errorf("%smetrics-export-interval: %v should not be negative", prefix, e.ExportInterval)
	}
	return nil
}

func (t Tracing) validate() error {
	switch t.Protocol {
	case ProtocolGRPC, ProtocolHTTPProtobuf:
		if t.Endpoint == "" {
			return fmt.Errorf("tracing-endpoint must be set when tracing-protocol is %q", t.Protocol)
		}
	case ProtocolNone, ProtocolStdout:
		if t.Endpoint != "" {
			return fmt.Errorf("tracing-endpoint must not be set when tracing-protocol is %q", t.Protocol)
		}
	default:
		return fmt.Errorf("tracing-protocol: unsupported protocol %q (none, grpc, http/protobuf or stdout)", t.Protocol)
	}
	if t.SamplingRate < 0 || t.SamplingRate > 1 {
		return fmt.Errorf("tracing-sampling-rate: %v is not between 0 and 1", t.SamplingRate)
	}
	return nil
}
