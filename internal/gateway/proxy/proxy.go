package proxy

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"time"

	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/requestlog"
	"github.com/ferry-serving/ferry/internal/gateway/routing"
	"github.com/ferry-serving/ferry/internal/telemetry"
)

// Config is what the request path takes from the gateway's Options.
type Config struct {
	// RequestTimeout is the timeoutSeconds of backends that set none.
	RequestTimeout time.Duration
	// MaxQueued bounds the requests held per revision; negative holds none.
	MaxQueued int
	// Stats is poked when a request is held for a revision without a ready pod; nil:
	// nobody is.
	Stats stats.Sink
	// IdleTimeout closes idle upstream connections.
	IdleTimeout time.Duration
	// DialTimeout bounds connecting to an endpoint; DialContext connects.
	DialTimeout time.Duration
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// Telemetry gives the tracer while tracing is on (tracing.go); nil: never.
	Telemetry *telemetry.Telemetry
	// RequestLog writes a line per request while config-observability turns it on;
	// nil: never.
	RequestLog *requestlog.Logger
}

// Proxy is the request path that the listeners share: the activator's holding state
// and the forwarder's pool of upstream connections.
type Proxy struct {
	table     func() *routing.Table
	forwarder *forwarder
	activator *activator
	metrics   *Metrics
	telemetry *telemetry.Telemetry
	log       *requestlog.Logger
}

// New returns the request path over the routing tables that table returns, counting
// into m. active, if not nil, receives the revisions that come out of idleness, for
// a backends.Reporter.
func New(cfg Config, table func() *routing.Table, m *Metrics, active *backends.ActiveSet) *Proxy {
	a := newActivator(cfg, m)
	a.active = active
	return &Proxy{table: table, forwarder: newForwarder(cfg, m), activator: a, metrics: m, log: cfg.RequestLog, telemetry: cfg.Telemetry}
}

// Handler is one listener's handler; the external one serves ExternalIP routes only.
func (p *Proxy) Handler(external bool) http.Handler {
	return &listenerHandler{
		external:  external,
		table:     p.table,
		roll:      rand.IntN,
		forwarder: p.forwarder,
		activator: p.activator,
		metrics:   p.metrics,
		telemetry: p.telemetry,
		log:       p.log,
	}
}

// ShareWith has every pod's containerConcurrency shared with the replicas of rs.
func (p *Proxy) ShareWith(rs *backends.ReplicaSet) { p.activator.replicas = rs }

// Drain answers the held requests at once (503), and those that would be held: the
// listeners are shutting down, and the client can retry on another replica.
func (p *Proxy) Drain() { p.activator.drain() }
