// Package reconciler wires Ferry's Knative Serving reconcilers into a
// controller-runtime manager. Each kind has its own package beneath this one.
package reconciler

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/api/serving/v1beta1"
	"github.com/ferry-serving/ferry/internal/autoscaler"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/metrics"
	"github.com/ferry-serving/ferry/internal/reconciler/configuration"
	"github.com/ferry-serving/ferry/internal/reconciler/domainmapping"
	"github.com/ferry-serving/ferry/internal/reconciler/gc"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/base"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/created"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/index"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/oldestfirst"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/refusal"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/statuswriter"
	"github.com/ferry-serving/ferry/internal/reconciler/podautoscaler"
	"github.com/ferry-serving/ferry/internal/reconciler/revision"
	"github.com/ferry-serving/ferry/internal/reconciler/route"
	"github.com/ferry-serving/ferry/internal/reconciler/routingstate"
	"github.com/ferry-serving/ferry/internal/reconciler/service"
	"github.com/ferry-serving/ferry/internal/telemetry"
	"github.com/ferry-serving/ferry/internal/tracker"
	"github.com/ferry-serving/ferry/internal/watches"
)

// DefaultGatewayHost is where Routes' placeholder Services point unless told otherwise:
// the in-cluster name of Ferry's gateway's cluster-local listener, which serves both
// public and cluster-local Routes by their cluster names, as Knative points them at
// its KIngress's private load balancer (knative-local-gateway).
const DefaultGatewayHost = "ferry-gateway-local.ferry-system.svc.cluster.local"

// DefaultWorkers is each controller's number of concurrent reconciles. Reconciles
// mostly wait on the API server: with 200 Services created at once, 4 workers left keys
// waiting seconds in the Service and Revision queues, 8 halved the time to Ready.
const DefaultWorkers = 8

// DefaultStatusSettle is how long an in-progress status may wait for the next step
// before it is written (see statuswriter). With 500 Services created at once, 2 s
// wrote 9.0 statuses per Service and 5 s 7.0, in the same total time: most steps take
// a few seconds under load.
const DefaultStatusSettle = 5 * time.Second

// DefaultBusyStatusSettle is the settle time while a burst of Services is on its way
// to Ready (Options.Calm). Under the admission's in-progress limit a Service of a
// burst takes 8-30 s from its creation to Ready; with the 5 s settle most of its
// statuses were written twice, once on the way and once Ready.
const DefaultBusyStatusSettle = 30 * time.Second

// Options configure the reconcilers. The zero value means Knative's defaults.
type Options struct {
	// Overrides win over the ConfigMaps: the --domain flag, tests' GC policy and
	// progress deadline.
	Overrides config.Overrides
	// GatewayHost is the ExternalName of Routes' placeholder Services.
	GatewayHost string
	// CertificateClass is the class of Routes' and DomainMappings' Certificates when
	// config-network's certificate-class names none ("": Knative's default,
	// cert-manager's; ferry up: its local CA).
	CertificateClass string
	// Config returns the current configuration from Ferry's ConfigMaps
	// (config.Store.Load); nil means config.Default() for ever. Within
	// SetupWithManager it is wrapped so that it returns the configuration with the
	// Overrides applied: reconcilers call
	// opts.Config() for the live, effective configuration.
	Config func() *config.Config
	// OnConfigChange subscribes a function to configuration changes
	// (config.Store.OnChange); nil when the configuration never changes. A change of
	// config-domain, config-network or config-features' tag-header-based-routing
	// reconciles every Route, one of config-gc every
	// Configuration's collection.
	OnConfigChange func(func(old, new *config.Config))
	// TrackerLease bounds how long a Route's reference lives if nothing renews or
	// drops it (0: the tracker's default).
	TrackerLease time.Duration
	// StatusSettle holds back statuses on their way to Ready for this long after an
	// object's creation or last status write, so that a quick rollout writes each
	// status once (default DefaultStatusSettle; negative: write every step at once).
	StatusSettle time.Duration
	// Workers is each controller's MaxConcurrentReconciles (default DefaultWorkers).
	Workers int
	// Calm, if set, returns a channel that is closed while no burst of Services is on
	// its way to Ready (backpressure.Backlog.Calm): during a burst the KPA postpones
	// scaling Revisions to zero until it ends, and statuses on their way settle for
	// BusyStatusSettle.
	Calm func() <-chan struct{}
	// Quiet, if set, returns a channel that is closed while no user's change is on
	// its way to Ready (backpressure.Backlog.Quiet): a Revision due to scale to zero
	// waits for it.
	Quiet func() <-chan struct{}
	// BusyStatusSettle is the settle time during a burst (default
	// DefaultBusyStatusSettle; no longer than StatusSettle turns it off).
	BusyStatusSettle time.Duration
	// AfterRead, if set, runs in every reconcile between reading the object and
	// acting on it; tests use it to widen races.
	AfterRead func()
	// Telemetry traces each reconcile while config-observability turns tracing on
	// (tracing.go); nil: never.
	Telemetry *telemetry.Telemetry
}

// Controllers is what SetupWithManager started.
type Controllers struct {
	// Tracker holds which Routes read which Configurations and Revisions.
	Tracker *tracker.Tracker
	// Autoscaler takes the gateways' load reports (it is their stats.Sink) and
	// decides for the PodAutoscaler reconciler.
	Autoscaler *autoscaler.Autoscaler
}

// SetupWithManager registers the Service, Configuration, Revision, Route, Revision GC,
// DomainMapping and routing state controllers with mgr.
func SetupWithManager(mgr ctrl.Manager, opts Options) (*Controllers, error) {
	opts = withDefaults(opts)
	c := mgr.GetClient()
	if err := index.Register(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return nil, fmt.Errorf("indexing the cache: %w", err)
	}
	requeue, decisions := tracker.NewQueueSource(), tracker.NewQueueSource()
	set := build(Deps{Client: c, APIReader: mgr.GetAPIReader(), Recorder: func(name string) events.EventRecorder { return mgr.GetEventRecorder(name) }, Owners: watches.OwnersOf(mgr)},
		opts, requeue.Enqueue, decisions.Enqueue)
	set.Autoscaler.WithBackground(func(key types.NamespacedName) { decisions.EnqueueAt(key, oldestfirst.Unchanged) })
	if err := mgr.Add(set.Autoscaler); err != nil {
		return nil, fmt.Errorf("adding the autoscaler: %w", err)
	}
	set.PodAutoscaler.Sources = append(set.PodAutoscaler.Sources, decisions)
	set.Route.Sources = append(set.Route.Sources, requeue)
	for _, ctl := range set.All() {
		workers := opts.Workers
		if ctl.Name == set.GC.Name {
			workers = 1
		}
		if err := ctl.Register(mgr, workers); err != nil {
			return nil, err
		}
	}
	for _, ctl := range set.Beside() {
		if err := ctl.Register(mgr, opts.Workers); err != nil {
			return nil, err
		}
	}
	// Exported while the controllers run: on the leader only, like them.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		metrics.ExportTracker(ctx, set.Tracker)
		return nil
	})); err != nil {
		return nil, fmt.Errorf("exporting the tracker's size: %w", err)
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		metrics.ExportPodLoads(ctx, set.Autoscaler)
		return nil
	})); err != nil {
		return nil, fmt.Errorf("exporting the pods' load: %w", err)
	}
	return &Controllers{Tracker: set.Tracker, Autoscaler: set.Autoscaler}, nil
}

// Deps are what the reconcilers of one controller process are built from: a
// manager's, or the convergence simulation's.
type Deps struct {
	// Client reads from the process's cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server.
	APIReader client.Reader
	// Recorder returns the Event recorder of the named controller.
	Recorder func(name string) events.EventRecorder
	Owners   watches.Owners
	// Clock tells time (nil: the real clock).
	Clock clock.PassiveClock
	// Serial makes every reconcile run on one goroutine (the simulation).
	Serial bool
	// Without switches safeguards of every status writer off, and NoRefusalRetry the
	// retry of refused writes: the simulation's sensitivity tests only.
	Without        []statuswriter.Safeguard
	NoRefusalRetry bool
}

// Set is the reconcilers of one controller process, each with what wakes it, and the
// state they share.
type Set struct {
	Tracker                                                    *tracker.Tracker
	Autoscaler                                                 *autoscaler.Autoscaler
	Service, Configuration, Revision, PodAutoscaler, Route, GC watches.Controller
	// DomainMapping and RoutingState stand beside the Service chain: the convergence
	// simulation models the chain only (All), and the routingState labels are read
	// only by the PodAutoscalers and the Revision GC.
	DomainMapping, RoutingState watches.Controller
}

// All is every controller of the Service chain, owners before children.
func (s *Set) All() []watches.Controller {
	return []watches.Controller{s.Service, s.Configuration, s.Revision, s.PodAutoscaler, s.Route, s.GC}
}

// Beside is the Set's controllers outside the Service chain.
func (s *Set) Beside() []watches.Controller {
	return []watches.Controller{s.DomainMapping, s.RoutingState}
}

// Build makes the reconcilers from d with opts, as SetupWithManager runs them.
// requeue receives the tracker's wake-ups of Routes, decide the autoscaler's of
// PodAutoscalers.
func Build(d Deps, opts Options, requeue, decide func(types.NamespacedName)) *Set {
	return build(d, withDefaults(opts), requeue, decide)
}

func build(d Deps, opts Options, requeue, decide func(types.NamespacedName)) *Set {
	clk := d.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	c := d.Client
	t := tracker.New(requeue, opts.TrackerLease).SetScheme(d.Owners.Scheme).SetClock(clk)
	status := func(name, kind string) *statuswriter.Writer {
		w := statuswriter.New(c, d.Recorder(name), opts.StatusSettle).WithClock(clk).OnReady(metrics.TimeToReady(kind)).Without(d.Without...)
		if opts.Calm != nil {
			w.SettleLongerWhileBusy(func() bool { return !closed(opts.Calm()) }, opts.BusyStatusSettle)
		}
		return w
	}
	refused := func() *refusal.Writes {
		w := refusal.New(refusal.DefaultInitial, refusal.DefaultMax).WithClock(clk)
		if d.NoRefusalRetry {
			w.NeverRetry()
		}
		return w
	}
	children := func() *created.Children { return created.New(c).WithClock(clk) }
	// owner is the Base of a reconciler that owns children and writes statuses.
	owner := func(w *statuswriter.Writer) base.Base {
		return base.Base{Client: c, Children: children(), Refused: refused(), Status: w, Config: opts.Config, AfterRead: opts.AfterRead, Clock: clk, Serial: d.Serial}
	}

	svc := &service.Reconciler{Base: owner(status("service-controller", "Service").Progress(v1.ReasonRolloutInProgress))}
	cfg := &configuration.Reconciler{Base: owner(status("configuration-controller", "Configuration")), APIReader: d.APIReader}
	rev := &revision.Reconciler{Base: owner(status("revision-controller", "Revision"))}
	as := autoscaler.New(decide).WithClock(clk)
	paBase := owner(status("podautoscaler-controller", "PodAutoscaler").NotFailures(av1alpha1.ReasonNoTraffic))
	// The PodAutoscaler's reconcile has no AfterRead hook: no test widens a race there.
	paBase.AfterRead = nil
	pa := &podautoscaler.Reconciler{Base: paBase, Autoscaler: as, Calm: opts.Calm, Quiet: opts.Quiet}
	rt := &route.Reconciler{Base: owner(status("route-controller", "Route").Progress(v1.ReasonRolloutInProgress)), Tracker: t,
		GatewayHost: opts.GatewayHost, DefaultCertificateClass: opts.CertificateClass, Recorder: d.Recorder("route-controller")}
	collector := &gc.Reconciler{Base: base.Base{Client: c, Clock: clk}, Policy: func() *config.GC { return opts.Config().GC }}
	dm := &domainmapping.Reconciler{Base: owner(status("domainmapping-controller", "DomainMapping")),
		DefaultCertificateClass: opts.CertificateClass, Recorder: d.Recorder("domainmapping-controller")}
	states := &routingstate.Reconciler{Base: base.Base{Client: c, Clock: clk}, Recorder: d.Recorder("routingstate-controller")}
	tel := opts.Telemetry
	set := &Set{Tracker: t, Autoscaler: as,
		Service: traced(tel, "Service", svc.Controller(d.Owners)), Configuration: traced(tel, "Configuration", cfg.Controller(d.Owners)),
		Revision: traced(tel, "Revision", rev.Controller(d.Owners)), PodAutoscaler: traced(tel, "PodAutoscaler", pa.Controller(d.Owners)),
		Route: traced(tel, "Route", rt.Controller(d.Owners, t.Handler())), GC: traced(tel, "Configuration", collector.Controller()),
		DomainMapping: traced(tel, "DomainMapping", dm.Controller(d.Owners)), RoutingState: traced(tel, "Configuration", states.Controller())}
	reconcileOnConfigChanges(set, c, opts.OnConfigChange)
	return set
}

// reconcileOnConfigChanges wakes each controller with every object it reconciles
// after a configuration change that concerns it (configChanges).
func reconcileOnConfigChanges(set *Set, c client.Reader, register func(func(old, new *config.Config))) {
	log := ctrl.Log.WithName("config")
	onChange := func(name string, matters func(old, new *config.Config) bool, list func() client.ObjectList) *configChanges {
		return &configChanges{name: name, register: register, matters: matters, list: every(c, list),
			onError: func(err error) { log.Error(err, "Listing objects after a configuration change", "controller", name) }}
	}
	set.PodAutoscaler.Sources = append(set.PodAutoscaler.Sources,
		onChange("podautoscaler", autoscalerChanged, func() client.ObjectList { return &av1alpha1.PodAutoscalerList{} }))
	set.Route.Sources = append(set.Route.Sources,
		onChange("route", routingChanged, func() client.ObjectList { return &v1.RouteList{} }))
	set.Revision.Sources = append(set.Revision.Sources,
		onChange("revision", logURLChanged, func() client.ObjectList { return &v1.RevisionList{} }))
	set.GC.Sources = append(set.GC.Sources,
		onChange("revision-gc", gcChanged, func() client.ObjectList { return &v1.ConfigurationList{} }))
	set.DomainMapping.Sources = append(set.DomainMapping.Sources,
		onChange("domainmapping", domainMappingChanged, func() client.ObjectList { return &v1beta1.DomainMappingList{} }))
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func withDefaults(o Options) Options {
	o.Config, o.OnConfigChange = o.Overrides.Source(o.Config, o.OnConfigChange)
	if o.GatewayHost == "" {
		o.GatewayHost = DefaultGatewayHost
	}
	if o.StatusSettle == 0 {
		o.StatusSettle = DefaultStatusSettle
	}
	if o.BusyStatusSettle == 0 {
		o.BusyStatusSettle = DefaultBusyStatusSettle
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	return o
}
