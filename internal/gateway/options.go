package gateway

import (
	"context"
	"io"
	"net"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/telemetry"
)

// Options configure a Gateway. The zero value is usable: every field has a default.
type Options struct {
	// ExternalAddr is where the external listener binds; it serves ExternalIP rules.
	// "127.0.0.1:0" picks a free port; ExternalAddr() reports it. Default
	// 127.0.0.1:8080.
	ExternalAddr string
	// LocalAddr is where the cluster-local listener binds; it serves both ExternalIP
	// and ClusterLocal rules. Default 127.0.0.1:8081.
	LocalAddr string
	// LocalAddrForPods, if set, is a second address of the cluster-local listener:
	// where ferry up's pods reach the host (clusternet), which the in-cluster Service
	// ferry-gateway-local names. LocalAddrForPods() reports it.
	LocalAddrForPods string
	// HTTPSAddr, if set, is where the HTTPS listener binds: it serves the ExternalIP
	// rules of the hosts that a KIngress's spec.tls gives a certificate, picked by SNI,
	// HTTP/2 or HTTP/1.1 by ALPN (proxy/tls.go). It needs Secrets in the cache (get, list,
	// watch). Empty: no HTTPS, and httpOption Redirected redirects nothing.
	HTTPSAddr string

	// PublicDomain and PrivateDomain are reported as the KIngress load balancers: the
	// names by which the cluster reaches the external and local listeners. Defaults
	// ferry-gateway.ferry-system.svc.cluster.local and
	// ferry-gateway-local.ferry-system.svc.cluster.local.
	PublicDomain  string
	PrivateDomain string

	// SimulatedPods says every endpoint is a kwok-simulated pod with no process behind
	// it (ferry up sets it): the gateway answers for the pod itself, 200 with a body
	// that names the revision and the pod and the header X-Ferry-Simulated: true.
	// Such answers take the same path as forwarded requests (holding, accounting,
	// containerConcurrency). Without it, only endpoints on nodes annotated
	// kwok.x-k8s.io/node=fake are treated so.
	SimulatedPods bool
	// DialSimulatedPods forwards requests for kwok's pods like any others, through
	// DialContext, instead of answering for them; it overrides SimulatedPods. For
	// tests whose DialContext serves each pod address from an in-process server.
	DialSimulatedPods bool

	// RequestTimeout is the timeoutSeconds of backends that set none (a Revision
	// without it, a Service without serving.ferry.dev/timeout-seconds): how long, from
	// its arrival, a request may wait for its response to start, held for want of a
	// pod included, as Knative's revision timeout does. Past it the client gets 504;
	// a response under way is not cut. Default 5m, Knative's default.
	RequestTimeout time.Duration
	// MaxQueued bounds, per revision and gateway replica, the requests held while the
	// revision has no ready pod or no pod below its containerConcurrency; more get
	// 503 with Retry-After at once. Default 1000 (Knative's activator has no bound
	// with containerConcurrency 0, and 10,000 per revision otherwise). Negative:
	// nothing is held, such requests get that 503 at once.
	MaxQueued int

	// Stats receives the gateway's load reports and pokes: every ReportInterval one
	// stats.Report with a Stat per revision that had requests in the period, and a
	// Poke when a request for a revision without a ready pod is held. nil: nothing
	// is reported (requests are still counted, with a few atomic adds, to balance
	// them across pods).
	Stats stats.Sink
	// ReportInterval is the reporting period. Default 1s.
	ReportInterval time.Duration
	// Source names this replica in its reports. Default: the host name.
	Source string
	// LeaseNamespace is where each replica keeps a Lease, so that the replicas know
	// how many they are: each takes its share of every pod's containerConcurrency, and
	// a KIngress is Ready only once every live replica serves it. "": this replica
	// assumes it is alone (ferry up, and tests with one gateway).
	LeaseNamespace string
	// LeaseDuration is how long a replica that stopped renewing its Lease (killed,
	// partitioned) still counts. Default 15s; renewed every third of it.
	LeaseDuration time.Duration
	// IdleTimeout closes idle keep-alive connections, client and upstream side.
	// Default 90s.
	IdleTimeout time.Duration
	// DialTimeout bounds connecting to an endpoint, so an address with nothing
	// behind it fails fast with 502. Default 2s.
	DialTimeout time.Duration
	// DialContext connects to an endpoint's host:port. Default: a plain TCP dial. It
	// lets a caller reach pod addresses some other way, e.g. tests that serve a pod
	// address from a loopback server (pods and EndpointSlices hold no loopback addresses).
	// DialTimeout applies either way.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// DrainTimeout bounds the wait for in-flight requests on shutdown. Default 25s,
	// within the manager's default graceful shutdown timeout of 30s.
	DrainTimeout time.Duration
	// MaxHeaderBytes caps request headers; larger ones get 431. Default 64KiB.
	MaxHeaderBytes int

	// Config and OnConfigChange are the live configuration (a config.Store's Load
	// and OnChange): config-observability turns the request log on and off. nil: the
	// defaults, for good.
	Config         func() *config.Config
	OnConfigChange func(func(old, new *config.Config))
	// RequestLog receives the request log lines. Default: standard output, where
	// Knative's components write theirs.
	RequestLog io.Writer

	// Registry receives the gateway's metrics. Default: controller-runtime's
	// metrics.Registry, served by the manager's metrics endpoint.
	Registry prometheus.Registerer
	// Telemetry traces requests while config-observability turns tracing on
	// (proxy/tracing.go); nil: never.
	Telemetry *telemetry.Telemetry
}

func (o Options) withDefaults() Options {
	setDefault(&o.ExternalAddr, "127.0.0.1:8080")
	setDefault(&o.LocalAddr, "127.0.0.1:8081")
	setDefault(&o.PublicDomain, "ferry-gateway.ferry-system.svc.cluster.local")
	setDefault(&o.PrivateDomain, "ferry-gateway-local.ferry-system.svc.cluster.local")
	setDefault(&o.RequestTimeout, 5*time.Minute)
	setDefault(&o.MaxQueued, 1000)
	setDefault(&o.ReportInterval, time.Second)
	if o.Source == "" {
		o.Source, _ = os.Hostname()
	}
	setDefault(&o.LeaseDuration, 15*time.Second)
	setDefault(&o.IdleTimeout, 90*time.Second)
	setDefault(&o.DialTimeout, 2*time.Second)
	setDefault(&o.DrainTimeout, 25*time.Second)
	setDefault(&o.MaxHeaderBytes, 64<<10)
	if o.DialContext == nil {
		o.DialContext = (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext
	}
	if o.RequestLog == nil {
		o.RequestLog = os.Stdout
	}
	if o.Registry == nil {
		o.Registry = ctrlmetrics.Registry
	}
	return o
}

func setDefault[T comparable](field *T, value T) {
	var zero T
	if *field == zero {
		*field = value
	}
}
