package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/pprof"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/http1"
	"github.com/ferry-serving/ferry/internal/gateway/proxy"
	"github.com/ferry-serving/ferry/internal/gateway/requestlog"
	"github.com/ferry-serving/ferry/internal/gateway/routing"
)

const (
	// ReplicaLabel marks a gateway replica's Lease (Options.LeaseNamespace).
	ReplicaLabel = backends.ReplicaLabel
	// ServesAnnotation on a replica's Lease records the KIngress generations it
	// has programmed and their status does not yet say.
	ServesAnnotation = backends.ServesAnnotation
)

// Gateway is Ferry's data plane: the KIngress and endpoint reconcilers that program a
// routing table, and the two HTTP listeners that serve it.
type Gateway struct {
	opts       Options
	services   *backends.Registry
	programmer *routing.Programmer
	// replicas is this replica's Lease among the others'; nil alone.
	replicas   *backends.ReplicaSet
	metrics    *proxy.Metrics
	proxy      *proxy.Proxy
	requestLog *requestlog.Logger
	// reporter sends the load reports; nil without Options.Stats.
	reporter *backends.Reporter
	external *listener
	local    *listener
	// localForPods serves what local serves at Options.LocalAddrForPods; nil without.
	localForPods *listener
	// https serves spec.tls with the certificates in tlsStore; nil without
	// Options.HTTPSAddr.
	https    *listener
	tlsStore *proxy.TLSStore
}

// New returns a Gateway; SetupWithManager wires it into a manager.
func New(opts Options) *Gateway {
	opts = opts.withDefaults()
	services := backends.NewRegistry()
	m := proxy.NewMetrics()
	services.OnForget = m.Forget
	programmer := routing.NewProgrammer(services)
	g := &Gateway{
		opts:       opts,
		services:   services,
		programmer: programmer,
		metrics:    m,
		requestLog: requestlog.New(opts.RequestLog),
	}
	if opts.HTTPSAddr != "" {
		g.tlsStore = proxy.NewTLSStore(func(reason string) { m.TLSRefused.WithLabelValues(reason).Inc() })
	}
	var active *backends.ActiveSet
	if opts.Stats != nil {
		active = &backends.ActiveSet{}
		g.reporter = backends.NewReporter(opts.Stats, opts.Source, opts.ReportInterval, active)
	}
	g.proxy = proxy.New(proxy.Config{
		RequestTimeout: opts.RequestTimeout,
		MaxQueued:      opts.MaxQueued,
		Stats:          opts.Stats,
		IdleTimeout:    opts.IdleTimeout,
		DialTimeout:    opts.DialTimeout,
		DialContext:    opts.DialContext,
		Telemetry:      opts.Telemetry,
		RequestLog:     g.requestLog,
	}, programmer.Table, m, active)
	return g
}

// readHeaderTimeout bounds the time a client may take to send its request headers, so
// slow clients cannot hold connections open for free.
const readHeaderTimeout = 10 * time.Second

// SetupWithManager registers the metrics, the KIngress and endpoint reconcilers, the
// listeners as a manager Runnable, and with Options.Stats the load reporter as
// another. The listeners bind here, so a port in use fails setup and the chosen
// addresses are known before the manager starts.
//
// Every replica programs its own table, serves and reports, so neither the
// reconcilers nor the listeners nor the reporter wait for leader election.
func (g *Gateway) SetupWithManager(mgr ctrl.Manager) error {
	if err := g.metrics.Register(g.opts.Registry); err != nil {
		return fmt.Errorf("registering gateway metrics: %w", err)
	}

	// The programmer, and the other replicas' Leases, feed ingresses back to their
	// reconciler.
	requeue := make(chan event.GenericEvent, 1024)
	var replicas *backends.ReplicaSet
	if g.opts.LeaseNamespace != "" {
		var err error
		if replicas, err = g.newReplicaSet(mgr, requeue); err != nil {
			return err
		}
		if err := mgr.Add(replicas); err != nil {
			return fmt.Errorf("adding the gateway replica's Lease: %w", err)
		}
		g.proxy.ShareWith(replicas)
		g.replicas = replicas
	}
	if err := routing.SetupIngresses(mgr, g.programmer, requeue, replicas, g.opts.PublicDomain, g.opts.PrivateDomain); err != nil {
		return err
	}
	if err := backends.SetupEndpoints(mgr, g.services, g.opts.SimulatedPods, g.opts.DialSimulatedPods); err != nil {
		return err
	}

	if g.tlsStore != nil {
		if err := proxy.SetupTLS(mgr, g.tlsStore); err != nil {
			return err
		}
	}

	if g.opts.Config != nil {
		g.applyConfig(g.opts.Config())
		g.opts.OnConfigChange(func(_, c *config.Config) { g.applyConfig(c) })
	}
	if g.reporter != nil {
		if err := mgr.Add(g.reporter); err != nil {
			return fmt.Errorf("adding the gateway's load reporter: %w", err)
		}
	}
	if err := g.bind(); err != nil {
		return err
	}
	return mgr.Add(g.servers())
}

// applyConfig takes in a new configuration: the request log follows
// config-observability.
func (g *Gateway) applyConfig(c *config.Config) { g.requestLog.Apply(c.Observability) }

// bind opens the listeners.
func (g *Gateway) bind() error {
	var err error
	if g.tlsStore != nil {
		if g.https, err = g.listen(g.opts.HTTPSAddr, true); err != nil {
			return err
		}
		g.https.server.TLSConfig = &tls.Config{GetCertificate: g.tlsStore.GetCertificate, MinVersion: tls.VersionTLS12}
		g.https.server.Protocols.SetHTTP2(true)
		g.https.lean = nil
	}
	if g.external, err = g.listen(g.opts.ExternalAddr, true); err != nil {
		g.https.close()
		return err
	}
	if g.tlsStore != nil {
		_, port, _ := net.SplitHostPort(g.https.addr())
		g.external.server.Handler = g.tlsStore.Redirecting(g.external.server.Handler, port)
	}
	if g.local, err = g.listen(g.opts.LocalAddr, false); err != nil {
		g.external.close()
		g.https.close()
		return err
	}
	if g.opts.LocalAddrForPods != "" {
		if g.localForPods, err = g.listen(g.opts.LocalAddrForPods, false); err != nil {
			g.local.close()
			g.external.close()
			g.https.close()
			return err
		}
	}
	return nil
}

// servers is the Runnable that serves the bound listeners.
func (g *Gateway) servers() *listeners {
	all := []*listener{g.external, g.local}
	if g.https != nil {
		all = append(all, g.https)
	}
	if g.localForPods != nil {
		all = append(all, g.localForPods)
	}
	return &listeners{all: all, drainTimeout: g.opts.DrainTimeout, onDrain: g.proxy.Drain}
}

// ExternalAddr is the address the external listener is bound to, or "" before
// SetupWithManager.
func (g *Gateway) ExternalAddr() string { return g.external.addr() }

// HTTPSAddr is the address the HTTPS listener is bound to, or "" before
// SetupWithManager or without Options.HTTPSAddr.
func (g *Gateway) HTTPSAddr() string { return g.https.addr() }

// LocalAddr is the address the cluster-local listener is bound to, or "" before
// SetupWithManager.
func (g *Gateway) LocalAddr() string { return g.local.addr() }

// LocalAddrForPods is the address the cluster-local listener is bound to for pods, or
// "" before SetupWithManager or without Options.LocalAddrForPods.
func (g *Gateway) LocalAddrForPods() string { return g.localForPods.addr() }

// InFlightTo is how many requests this gateway has in flight to a pod's IP, or to
// IP:port for pods that share one IP: a kubelet in the same process (ferry up's
// program node) ends a leaving pod's drain when none are left.
func (g *Gateway) InFlightTo(ip string) int64 { return g.services.InFlightTo(ip) }

// Warm says whether this replica's routing table serves every KIngress c (the API
// server) holds, each at the generation it read (routing.Programmer.Warm): its
// readiness. With replicas it asks only once its Lease exists, so that a KIngress
// that moves on after that read is not Ready until this replica serves it too
// (backends.ReplicaSet.ServedByAll).
func (g *Gateway) Warm(ctx context.Context, c client.Reader) error {
	if g.replicas != nil && !g.replicas.Joined() {
		return errors.New("this replica's Lease is not created yet")
	}
	return g.programmer.Warm(ctx, c)
}

func (g *Gateway) listen(addr string, external bool) (*listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gateway listener: %w", err)
	}
	h := g.proxy.Handler(external)
	if g.opts.Telemetry != nil {
		// Outermost, so that everything within sees the request's trace.
		h = proxy.Traced(g.opts.Telemetry, h)
	}
	server := g.newServer(h)
	return &listener{ln: ln, server: server, lean: &http1.Server{Fallback: server}}, nil
}

func (g *Gateway) newServer(h http.Handler) *http.Server {
	// Plain HTTP/1.1 and HTTP/2 with prior knowledge (h2c), which gRPC clients speak.
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	return &http.Server{
		Handler:           h,
		Protocols:         protocols,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       g.opts.IdleTimeout,
		MaxHeaderBytes:    g.opts.MaxHeaderBytes,
	}
}

type listener struct {
	ln     net.Listener
	server *http.Server
	// lean serves plain HTTP/1.1 and hands server the rest; nil with TLS.
	lean *http1.Server
}

func (l *listener) addr() string {
	if l == nil {
		return ""
	}
	return l.ln.Addr().String()
}

func (l *listener) close() {
	if l != nil {
		l.ln.Close()
	}
}

// serve serves plain HTTP, or TLS when the server has a TLS config.
func (l *listener) serve() error {
	if l.lean == nil {
		return l.server.ServeTLS(l.ln, "", "")
	}
	return l.lean.Serve(l.ln)
}

func (l *listener) shutdown(ctx context.Context) error {
	if l.lean != nil {
		return l.lean.Shutdown(ctx)
	}
	return l.server.Shutdown(ctx)
}

// listeners serves the bound listeners until the manager stops, then drains them.
type listeners struct {
	all          []*listener
	drainTimeout time.Duration
	// onDrain runs when draining begins.
	onDrain func()
}

func (ls *listeners) Start(ctx context.Context) error {
	served := make(chan error, len(ls.all))
	// The label tells the data plane's CPU in a profile of a process that runs it
	// beside the controllers (go tool pprof -tags): connections inherit it.
	pprof.Do(ctx, pprof.Labels("component", "ferry", "ferry", "gateway"), func(context.Context) {
		for _, l := range ls.all {
			go func() { served <- l.serve() }()
		}
	})
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
		err = fmt.Errorf("gateway listener stopped: %w", err)
	}
	drainCtx, cancel := context.WithTimeout(context.Background(), ls.drainTimeout)
	defer cancel()
	// Held requests are answered at once (503): they may wait minutes for a pod,
	// and the client can retry on another replica.
	if ls.onDrain != nil {
		ls.onDrain()
	}
	for _, l := range ls.all {
		// Shutdown stops accepting and waits for in-flight requests to finish.
		if shutdownErr := l.shutdown(drainCtx); shutdownErr != nil {
			err = errors.Join(err, fmt.Errorf("draining gateway listener %s: %w", l.addr(), shutdownErr))
		}
	}
	return err
}

// NeedLeaderElection is false: every replica serves traffic.
func (ls *listeners) NeedLeaderElection() bool { return false }

// newReplicaSet is this replica's Lease in Options.LeaseNamespace: when the membership
// changes, held requests look at their share again; a stop deletes the Lease once the
// replica has no request in flight.
func (g *Gateway) newReplicaSet(mgr manager.Manager, requeue chan<- event.GenericEvent) (*backends.ReplicaSet, error) {
	// The Lease holds whole seconds, and the others count by what it holds.
	if d := g.opts.LeaseDuration; d < time.Second || d%time.Second != 0 {
		return nil, fmt.Errorf("gateway LeaseDuration (--lease-duration) %v: must be a whole number of seconds, at least 1s", d)
	}
	rs := backends.NewReplicaSet(mgr.GetClient(), g.opts.LeaseNamespace, g.opts.Source, g.opts.LeaseDuration, g.opts.DrainTimeout, requeue)
	rs.Confirm = mgr.GetAPIReader()
	rs.OnChange = func(m backends.Membership) {
		g.metrics.Replicas.Set(float64(m.Count))
		g.services.WakeAll()
	}
	rs.Idle = g.services.Idle
	return rs, nil
}
