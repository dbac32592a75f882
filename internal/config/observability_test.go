package config

import (
	"reflect"
	"testing"
	"time"
)

func TestNewObservabilityFromConfigMap(t *testing.T) {
	runParse(t, NewObservabilityFromConfigMap, ObservabilityConfigName, []parseCase[Observability]{
		{name: "empty is Knative's code defaults", check: func(o *Observability) bool {
			return reflect.DeepEqual(o, DefaultObservability()) && o.RequestLogTemplate == DefaultRequestLogTemplate &&
				o.Tracing.Protocol == ProtocolNone && o.Metrics.Protocol == ProtocolNone && !o.EnableRequestLog
		}},
		{name: "request log on with the default template", data: map[string]string{"logging.enable-request-log": "true"},
			check: func(o *Observability) bool {
				return o.EnableRequestLog && o.RequestLogTemplate == DefaultRequestLogTemplate
			}},
		{name: "own template and probes", data: map[string]string{"logging.enable-request-log": "true",
			"logging.request-log-template": "{{.Request.Method}} {{.Response.Code}}", "logging.enable-probe-request-log": "true"},
			check: func(o *Observability) bool {
				return o.RequestLogTemplate == "{{.Request.Method}} {{.Response.Code}}" && o.EnableProbeRequestLog
			}},
		{name: "request log on with an empty template", data: map[string]string{"logging.enable-request-log": "true", "logging.request-log-template": ""},
			wantErr: `"logging.enable-request-log" was set to true, but no "logging.request-log-template"`},
		{name: "template that does not parse", data: map[string]string{"logging.request-log-template": "{{.Request.Method"},
			wantErr: "logging.request-log-template"},
		{name: "bad bool", data: map[string]string{"logging.enable-request-log": "yes"}, wantErr: "logging.enable-request-log"},
		{name: "tracing over OTLP gRPC", data: map[string]string{"tracing-protocol": "grpc", "tracing-endpoint": "localhost:4317", "tracing-sampling-rate": "0.25"},
			check: func(o *Observability) bool {
				return o.Tracing == Tracing{Protocol: ProtocolGRPC, Endpoint: "localhost:4317", SamplingRate: 0.25}
			}},
		{name: "tracing to stdout", data: map[string]string{"tracing-protocol": "stdout", "tracing-sampling-rate": "1"},
			check: func(o *Observability) bool { return o.Tracing == Tracing{Protocol: ProtocolStdout, SamplingRate: 1} }},
		{name: "OTLP tracing needs an endpoint", data: map[string]string{"tracing-protocol": "http/protobuf"},
			wantErr: "tracing-endpoint must be set"},
		{name: "no tracing takes no endpoint", data: map[string]string{"tracing-endpoint": "localhost:4317"},
			wantErr: "tracing-endpoint must not be set"},
		{name: "protocols are spelt exactly", data: map[string]string{"tracing-protocol": "GRPC", "tracing-endpoint": "x:1"},
			wantErr: "tracing-protocol"},
		{name: "zipkin is gone", data: map[string]string{"tracing-protocol": "zipkin"}, wantErr: "tracing-protocol"},
		{name: "rate above one", data: map[string]string{"tracing-sampling-rate": "1.5"}, wantErr: "tracing-sampling-rate"},
		{name: "rate below zero", data: map[string]string{"tracing-sampling-rate": "-0.1"}, wantErr: "tracing-sampling-rate"},
		{name: "rate not a number", data: map[string]string{"tracing-sampling-rate": "all"}, wantErr: "tracing-sampling-rate"},
		{name: "metrics over OTLP", data: map[string]string{"metrics-protocol": "http/protobuf", "metrics-endpoint": "http://c:4318/v1/metrics",
			"metrics-export-interval": "5s"},
			check: func(o *Observability) bool {
				return o.Metrics == Export{Protocol: ProtocolHTTPProtobuf, Endpoint: "http://c:4318/v1/metrics", ExportInterval: 5 * time.Second}
			}},
		{name: "prometheus takes an endpoint or none", data: map[string]string{"metrics-protocol": "prometheus"},
			check: func(o *Observability) bool { return o.Metrics.Protocol == ProtocolPrometheus }},
		{name: "OTLP metrics need an endpoint", data: map[string]string{"metrics-protocol": "grpc"}, wantErr: "metrics-endpoint must be set"},
		{name: "no metrics take no endpoint", data: map[string]string{"metrics-endpoint": "c:4317"}, wantErr: "metrics-endpoint must not be set"},
		{name: "opencensus is gone", data: map[string]string{"metrics-protocol": "opencensus"}, wantErr: "metrics-protocol"},
		{name: "negative interval", data: map[string]string{"metrics-export-interval": "-1s"}, wantErr: "metrics-export-interval"},
		{name: "request metrics checked the same", data: map[string]string{"request-metrics-protocol": "grpc"},
			wantErr: "request-metrics-endpoint must be set"},
		{name: "profiling", data: map[string]string{"runtime-profiling": "enabled"},
			check: func(o *Observability) bool { return o.RuntimeProfiling }},
		{name: "profiling spelt otherwise", data: map[string]string{"runtime-profiling": "on"}, wantErr: "runtime-profiling"},
		{name: "log URL template", data: map[string]string{"logging.revision-url-template": "http://logs/?uid=${REVISION_UID}"},
			check: func(o *Observability) bool { return o.RevisionURLTemplate == "http://logs/?uid=${REVISION_UID}" }},
	})
}

func TestObservabilityNoEffect(t *testing.T) {
	got := NoEffect(ObservabilityConfigName, map[string]string{
		"logging.enable-var-log-collection": "true", "request-metrics-protocol": "prometheus", "runtime-profiling": "enabled",
		"request-metrics-export-interval": "0s", "tracing-protocol": "grpc", "runtime-export-interval": "15s",
	})
	want := []string{
		`logging.enable-var-log-collection: "true" has no effect: Ferry mounts no /var/log for a node's log collector`,
		`request-metrics-protocol: "prometheus" has no effect: ` + noQueueProxy + `; the gateway's request metrics go where metrics-protocol says`,
		`runtime-profiling: "enabled" has no effect: Ferry serves pprof where its --pprof-addr flag says`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("NoEffect = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		data map[string]string
		want []string
	}{
		{map[string]string{"metrics-protocol": "prometheus", "metrics-endpoint": "0.0.0.0:9091"},
			[]string{`metrics-endpoint: "0.0.0.0:9091" has no effect with metrics-protocol prometheus: Ferry serves /metrics where its --metrics-addr flag says`}},
		{map[string]string{"metrics-protocol": "prometheus"}, nil},
		{map[string]string{"metrics-protocol": "grpc", "metrics-endpoint": "c:4317"}, nil},
	} {
		if got := NoEffect(ObservabilityConfigName, tc.data); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("NoEffect(%v) = %q, want %q", tc.data, got, tc.want)
		}
	}
}
