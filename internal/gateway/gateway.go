package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime/pprof"
	"time"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Gateway is Ferry's data plane: the KIngress and endpoint reconcilers that program a
// routing table, and the two HTTP listeners that serve it.
type Gateway struct {
	opts       Options
	services   *serviceRegistry
	programmer *programmer
	metrics    *metrics
	forwarder  *forwarder
	activator  *activator
	// reporter sends the load reports; nil without Options.Stats.
	reporter *reporter
	external *listener
	local    *listener
	// https serves spec.tls with the certificates in tlsStore; nil without
	// Options.HTTPSAddr.
	https    *listener
	tlsStore *tlsStore
}

// New returns a Gateway; SetupWithManager wires it into a manager.
func New(opts Options) *Gateway {
	opts = opts.withDefaults()
	services := newServiceRegistry()
	m := newMetrics()
	services.onForget = m.forget
	g := &Gateway{
		opts:       opts,
		services:   services,
		programmer: newProgrammer(services),
		metrics:    m,
		forwarder:  newForwarder(opts, m),
		activator:  newActivator(opts, m),
	}
	if opts.HTTPSAddr != "" {
		g.tlsStore = newTLSStore(func(reason string) { m.tlsRefused.WithLabelValues(reason).Inc() })
	}
	if opts.Stats != nil {
		g.activator.active = &activeSet{}
		g.reporter = newReporter(opts.Stats, opts.Source, opts.ReportInterval, g.activator.active)
	}
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
	if err := g.metrics.register(g.opts.Registry); err != nil {
		return fmt.Errorf("registering gateway metrics: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &discoveryv1.EndpointSlice{},
		endpointSliceServiceIndex, endpointSliceService); err != nil {
		return fmt.Errorf("indexing EndpointSlices by Service: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, podRevisionIndex, podRevision); err != nil {
		return fmt.Errorf("indexing pods by Revision: %w", err)
	}

	ingresses := &ingressReconciler{
		client:        mgr.GetClient(),
		apiReader:     mgr.GetAPIReader(),
		services:      g.services,
		programmer:    g.programmer,
		requeue:       make(chan event.GenericEvent, 1024),
		publicDomain:  g.opts.PublicDomain,
		privateDomain: g.opts.PrivateDomain,
	}
	ingressController := ctrl.NewControllerManagedBy(mgr).
		Named("gateway-ingress").
		For(&v1alpha1.Ingress{}).
		WatchesRawSource(source.Channel(ingresses.requeue, &handler.EnqueueRequestForObject{}))
	if g.opts.LeaseNamespace != "" {
		rs, err := g.newReplicaSet(mgr, ingresses.requeue)
		if err != nil {
			return err
		}
		if err := mgr.Add(rs); err != nil {
			return fmt.Errorf("adding the gateway replica's Lease: %w", err)
		}
		ingresses.replicas, g.activator.replicas = rs, rs
		// Another replica's record, or one coming or going, may make an ingress Ready.
		ingressController = ingressController.Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(rs.affected))
	}
	if err := ingressController.
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false), MaxConcurrentReconciles: 4}).
		Complete(ingresses); err != nil {
		return fmt.Errorf("setting up the KIngress reconciler: %w", err)
	}

	endpoints := &endpointsReconciler{client: mgr.GetClient(), services: g.services,
		simulatedPods: g.opts.SimulatedPods, dialSimulated: g.opts.DialSimulatedPods}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("gateway-endpoints").
		For(&corev1.Service{}).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(sliceOwner)).
		// A Revision's spec says its port, concurrency and timeout; its status changes
		// nothing here.
		Watches(&servingv1.Revision{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podOwner), builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				return asEndpoint(e.ObjectOld.(*corev1.Pod)) != asEndpoint(e.ObjectNew.(*corev1.Pod))
			},
		})).
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false), MaxConcurrentReconciles: 2}).
		Complete(endpoints); err != nil {
		return fmt.Errorf("setting up the endpoints reconciler: %w", err)
	}

	if g.tlsStore != nil {
		if err := g.setupTLS(mgr); err != nil {
			return err
		}
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

// bind opens the listeners.
func (g *Gateway) bind() error {
	var err error
	if g.tlsStore != nil {
		if g.https, err = g.listen(g.opts.HTTPSAddr, true); err != nil {
			return err
		}
		g.https.server.TLSConfig = &tls.Config{GetCertificate: g.tlsStore.getCertificate, MinVersion: tls.VersionTLS12}
		g.https.server.Protocols.SetHTTP2(true)
	}
	if g.external, err = g.listen(g.opts.ExternalAddr, true); err != nil {
		g.https.close()
		return err
	}
	if g.tlsStore != nil {
		_, port, _ := net.SplitHostPort(g.https.addr())
		g.external.server.Handler = g.tlsStore.redirecting(g.external.server.Handler, port)
	}
	if g.local, err = g.listen(g.opts.LocalAddr, false); err != nil {
		g.external.close()
		g.https.close()
		return err
	}
	return nil
}

// servers is the Runnable that serves the bound listeners.
func (g *Gateway) servers() *listeners {
	all := []*listener{g.external, g.local}
	if g.https != nil {
		all = append(all, g.https)
	}
	return &listeners{all: all, drainTimeout: g.opts.DrainTimeout, onDrain: g.activator.drain}
}

// sliceOwner maps an EndpointSlice to its Service. Deletions arrive with the last
// known object, tombstones unwrapped by controller-runtime, so the label is there.
func sliceOwner(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[discoveryv1.LabelServiceName]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// podOwner maps a pod to its Revision, by the label the Revision's Deployment gives
// its pods (the cache holds only such pods).
func podOwner(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[servingv1.RevisionLabelKey]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// endpointView is what of a pod its Revision's endpoints are built from.
type endpointView struct {
	ip, node           string
	ready, terminating bool
}

func asEndpoint(pod *corev1.Pod) endpointView {
	return endpointView{ip: pod.Status.PodIP, node: pod.Spec.NodeName, ready: podReady(pod), terminating: pod.DeletionTimestamp != nil}
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

// InFlightTo is how many requests this gateway has in flight to a pod's IP, or to
// IP:port for pods that share one IP: a kubelet in the same process (ferry up's
// program node) ends a leaving pod's drain when none are left.
func (g *Gateway) InFlightTo(ip string) int64 { return g.services.inFlightTo(ip) }

func (g *Gateway) listen(addr string, external bool) (*listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gateway listener: %w", err)
	}
	return &listener{ln: ln, server: g.newServer(g.handler(external))}, nil
}

func (g *Gateway) handler(external bool) *proxy {
	return &proxy{
		external:  external,
		table:     g.programmer.table,
		roll:      rand.IntN,
		forwarder: g.forwarder,
		activator: g.activator,
		metrics:   g.metrics,
	}
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
	if l.server.TLSConfig != nil {
		return l.server.ServeTLS(l.ln, "", "")
	}
	return l.server.Serve(l.ln)
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
		if shutdownErr := l.server.Shutdown(drainCtx); shutdownErr != nil {
			err = errors.Join(err, fmt.Errorf("draining gateway listener %s: %w", l.addr(), shutdownErr))
		}
	}
	return err
}

// NeedLeaderElection is false: every replica serves traffic.
func (ls *listeners) NeedLeaderElection() bool { return false }
