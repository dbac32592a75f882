package gateway

import (
	"context"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
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

	// PublicDomain and PrivateDomain are reported as the KIngress load balancers: the
	// names by which the cluster reaches the external and local listeners. Defaults
	// ferry-gateway.ferry-system.svc.cluster.local and
	// ferry-gateway-local.ferry-system.svc.cluster.local.
	PublicDomain  string
	PrivateDomain string

	// SimulatedPods says every endpoint is a kwok-simulated pod with no process behind
	// it (ferry up sets it): requests are answered at once with a 503 that names the
	// revision they were routed to. Without it, only endpoints on nodes annotated
	// kwok.x-k8s.io/node=fake are treated so.
	SimulatedPods bool

	// RequestTimeout bounds how long a revision may take to begin replying, as
	// Knative's revision timeout does (a streamed body or an upgraded connection may
	// last longer); past it the client gets 504. Default 5m, Knative's default.
	RequestTimeout time.Duration
	// IdleTimeout closes idle keep-alive connections, client and upstream side.
	// Default 90s.
	IdleTimeout time.Duration
	// DialTimeout bounds connecting to an endpoint, so an address with nothing
	// behind it fails fast with 502. Default 2s.
	DialTimeout time.Duration
	// DialContext connects to an endpoint's host:port. Default: a plain TCP dial. It
	// lets a caller reach pod addresses some other way, e.g. tests that serve a pod
	// address from a loopback server (EndpointSlices may not hold loopback addresses).
	// DialTimeout applies either way.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// DrainTimeout bounds the wait for in-flight requests on shutdown. Default 25s,
	// within the manager's default graceful shutdown timeout of 30s.
	DrainTimeout time.Duration
	// MaxHeaderBytes caps request headers; larger ones get 431. Default 64KiB.
	MaxHeaderBytes int

	// Registry receives the gateway's metrics. Default: controller-runtime's
	// metrics.Registry, served by the manager's metrics endpoint.
	Registry prometheus.Registerer
}

func (o Options) withDefaults() Options {
	setDefault(&o.ExternalAddr, "127.0.0.1:8080")
	setDefault(&o.LocalAddr, "127.0.0.1:8081")
	setDefault(&o.PublicDomain, "ferry-gateway.ferry-system.svc.cluster.local")
	setDefault(&o.PrivateDomain, "ferry-gateway-local.ferry-system.svc.cluster.local")
	setDefault(&o.RequestTimeout, 5*time.Minute)
	setDefault(&o.IdleTimeout, 90*time.Second)
	setDefault(&o.DialTimeout, 2*time.Second)
	setDefault(&o.DrainTimeout, 25*time.Second)
	setDefault(&o.MaxHeaderBytes, 64<<10)
	if o.DialContext == nil {
		o.DialContext = (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext
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
