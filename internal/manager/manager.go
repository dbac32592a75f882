// Package manager assembles Ferry in one controller-runtime manager: the Knative
// reconcilers and, optionally, the gateway. `ferry up`, `ferry controller` and
// `ferry gateway` differ only in what they ask of it.
package manager

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/ferry-serving/ferry/api/scheme"
	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/admission"
	"github.com/ferry-serving/ferry/internal/autoscaler"
	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
	"github.com/ferry-serving/ferry/internal/backpressure"
	"github.com/ferry-serving/ferry/internal/certmanager"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/dashboard"
	"github.com/ferry-serving/ferry/internal/gateway"
	"github.com/ferry-serving/ferry/internal/localca"
	"github.com/ferry-serving/ferry/internal/reconciler"
	"github.com/ferry-serving/ferry/internal/telemetry"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Options say what runs in the manager.
type Options struct {
	// Reconcilers runs the Service, Configuration, Revision, Route and GC controllers.
	Reconcilers bool
	// ReconcilerOptions configure them.
	ReconcilerOptions reconciler.Options
	// Gateway, if set, runs the data plane with these options.
	Gateway *gateway.Options
	// CertManager, with the reconcilers, runs the cert-manager certificate provider
	// (package certmanager); cert-manager's CRDs must be installed.
	CertManager bool
	// LocalCADir, if set, runs the local CA provider (package localca) with its CA in
	// this directory, created there on first start.
	LocalCADir string
	// Admission, if set, serves Knative's validation and defaulting as admission
	// webhooks (on every replica) and registers them.
	Admission *admission.Options
	// MetricsAddr serves Prometheus metrics; "0" turns them off.
	MetricsAddr string
	// PprofAddr serves Go's profiles (/debug/pprof/, controller-runtime's); "" or "0"
	// turns them off.
	PprofAddr string
	// HealthAddr serves /healthz (the process answers) and /readyz (caches synced,
	// the gateway's listeners and the webhooks serving); "" or "0" turns them off.
	HealthAddr string
	// LeaderElection makes only one replica reconcile (the gateway serves on every one).
	LeaderElection          bool
	LeaderElectionNamespace string
	// LeaseDuration is how long a leader that stopped renewing (killed, partitioned)
	// keeps the lease before another replica takes over; 0 is controller-runtime's 15 s.
	// The renew deadline and retry period follow from it in controller-runtime's
	// proportions (2/3 and 2/15).
	LeaseDuration time.Duration
	// StatsAddr, with the reconcilers, is where the autoscaler takes the gateways'
	// load reports ("" or "0": nowhere; a gateway in the same manager reports
	// in-process either way).
	StatsAddr string
	// AutoscalerAddress, for a gateway without the reconcilers beside it, is the
	// host:port of the controllers' StatsAddr; its reports go to every address the
	// host resolves to ("": the gateway reports to no one and cannot wake a Revision
	// at zero).
	AutoscalerAddress string
	// SkipNameValidation lets one process build Ferry more than once (tests):
	// controller-runtime otherwise refuses a second controller of the same name.
	SkipNameValidation bool
}

// Ferry is a configured manager, ready to Start.
type Ferry struct {
	// Config is the live configuration from Knative's ConfigMaps in ferry-system, set
	// when the reconcilers, admission or the gateway run.
	Config *config.Store
	// Telemetry is the tracer and meter providers that follow config-observability,
	// set with Config.
	Telemetry   *telemetry.Telemetry
	mgr         ctrl.Manager
	Gateway     *gateway.Gateway
	Controllers *reconciler.Controllers
	// Admission is set when Options.Admission is: its Ready channel closes once the
	// webhooks are registered.
	Admission *admission.Runner
	// stop tells the cache that Start's context ended (see stoppableCache).
	stop context.CancelFunc
}

// New builds the manager; the gateway's listeners are bound when New returns.
func New(cfg *rest.Config, opts Options) (*Ferry, error) {
	if opts.MetricsAddr == "" {
		opts.MetricsAddr = "0"
	}
	if opts.HealthAddr == "" {
		opts.HealthAddr = "0"
	}
	if opts.PprofAddr == "" {
		opts.PprofAddr = "0"
	}
	cfg = withoutCompression(cfg)
	stopping, stop := context.WithCancel(context.Background())
	// self is the Ferry New returns: the handler below reads it once the manager
	// serves, which is after New.
	var self *Ferry
	metrics := metricsserver.Options{BindAddress: opts.MetricsAddr}
	if opts.Reconcilers {
		// The dashboard's autoscaler numbers, beside /metrics and behind the same
		// filter: who may read the autoscaler's metrics may read these.
		metrics.ExtraHandlers = map[string]http.Handler{dashboard.NumbersPath: dashboard.NumbersHandler(func() *autoscaler.Autoscaler {
			return self.autoscaler()
		})}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme.New(),
		Metrics:                 metrics,
		HealthProbeBindAddress:  opts.HealthAddr,
		PprofBindAddress:        opts.PprofAddr,
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        "ferry-controller",
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		// A replica that is stopped hands the lease over at once instead of making the
		// next leader wait out the lease.
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 leaseFraction(opts.LeaseDuration, 1, 1),
		RenewDeadline:                 leaseFraction(opts.LeaseDuration, 2, 3),
		RetryPeriod:                   leaseFraction(opts.LeaseDuration, 2, 15),
		Controller:                    ctrlconfig.Controller{SkipNameValidation: &opts.SkipNameValidation},
		Cache:                         cacheOptions(gatewayLeaseNamespace(opts.Gateway)),
		NewCache:                      newStoppableCache(stopping),
	})
	if err != nil {
		stop()
		return nil, fmt.Errorf("creating the controller manager: %w", err)
	}
	f := &Ferry{mgr: mgr, stop: stop}
	if opts.Reconcilers || opts.Admission != nil || opts.Gateway != nil {
		// A gateway alone reads config-observability only for itself: the controller
		// reports bad values, once.
		report := opts.Reconcilers || opts.Admission != nil
		if f.Config, err = addConfigStore(mgr, stopping, report); err != nil {
			return nil, err
		}
		if f.Telemetry, err = addTelemetry(mgr, f.Config, opts); err != nil {
			return nil, err
		}
		if opts.ReconcilerOptions.Telemetry == nil {
			opts.ReconcilerOptions.Telemetry = f.Telemetry
		}
		if opts.ReconcilerOptions.Config == nil {
			opts.ReconcilerOptions.Config, opts.ReconcilerOptions.OnConfigChange = f.Config.Load, f.Config.OnChange
		}
		if opts.Admission != nil && opts.Admission.Config == nil {
			a := *opts.Admission
			a.Config = f.Config.Load
			opts.Admission = &a
		}
	}
	// The Services in progress: admission holds creates while there are too many, and
	// the autoscaler postpones scaling to zero during a burst and while a user's new
	// change is on its way (package backpressure).
	var backlog *backpressure.Backlog
	if limit := inProgressLimit(opts.Admission); limit >= 0 && (opts.Reconcilers || opts.Admission != nil) {
		if backlog, err = addBacklog(mgr, limit); err != nil {
			return nil, err
		}
		if opts.ReconcilerOptions.Calm == nil {
			opts.ReconcilerOptions.Calm, opts.ReconcilerOptions.Quiet = backlog.Calm, backlog.Quiet
		}
	}
	if opts.Reconcilers {
		if f.Controllers, err = reconciler.SetupWithManager(mgr, opts.ReconcilerOptions); err != nil {
			return nil, fmt.Errorf("setting up the reconcilers: %w", err)
		}
	}
	if opts.CertManager && f.Controllers != nil {
		if err := (&certmanager.Reconciler{Client: mgr.GetClient(), Config: f.Config.Load}).SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("setting up the cert-manager provider: %w", err)
		}
	}
	if opts.LocalCADir != "" {
		ca, err := localca.LoadOrCreate(opts.LocalCADir)
		if err != nil {
			return nil, err
		}
		if err := (&localca.Reconciler{Client: mgr.GetClient(), CA: ca}).SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("setting up the local CA: %w", err)
		}
	}
	if opts.Admission != nil {
		a := *opts.Admission
		a.Backlog = backlog
		f.Admission = admission.NewRunner(cfg, a)
		if err := mgr.Add(f.Admission); err != nil {
			return nil, fmt.Errorf("setting up admission: %w", err)
		}
	}
	if opts.StatsAddr != "" && opts.StatsAddr != "0" && f.Controllers != nil {
		srv, err := newStatsServer(opts.StatsAddr, f.Controllers.Autoscaler)
		if err != nil {
			return nil, err
		}
		if err := mgr.Add(srv); err != nil {
			return nil, fmt.Errorf("adding the stats listener: %w", err)
		}
	}
	if opts.Gateway != nil {
		gopts := *opts.Gateway
		if gopts.Stats == nil {
			switch {
			case f.Controllers != nil:
				gopts.Stats = f.Controllers.Autoscaler
			case opts.AutoscalerAddress != "":
				c := stats.NewClient(opts.AutoscalerAddress)
				if err := mgr.Add(c); err != nil {
					return nil, fmt.Errorf("adding the stats client: %w", err)
				}
				gopts.Stats = c
			}
		}
		if gopts.Config == nil {
			gopts.Config, gopts.OnConfigChange = f.Config.Load, f.Config.OnChange
		}
		if gopts.Telemetry == nil {
			gopts.Telemetry = f.Telemetry
		}
		f.Gateway = gateway.New(gopts)
		if err := f.Gateway.SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("setting up the gateway: %w", err)
		}
	}
	if opts.HealthAddr != "0" {
		if err := f.addProbes(mgr); err != nil {
			return nil, fmt.Errorf("adding health probes: %w", err)
		}
	}
	self = f
	return f, nil
}

func gatewayLeaseNamespace(g *gateway.Options) string {
	if g == nil {
		return ""
	}
	return g.LeaseNamespace
}

// inProgressLimit is admission's InProgressLimit; without admission, the default.
func inProgressLimit(a *admission.Options) int {
	if a == nil {
		return 0
	}
	return a.InProgressLimit
}

// addBacklog counts the Services in progress, for the back-pressure webhook and the
// autoscaler, from the cache's Service informer (started on every replica, like
// admission).
func addBacklog(mgr ctrl.Manager, limit int) (*backpressure.Backlog, error) {
	if limit == 0 {
		limit = backpressure.DefaultLimit
	}
	b := backpressure.New(limit)
	informer, err := mgr.GetCache().GetInformer(context.Background(), &servingv1.Service{})
	if err != nil {
		return nil, fmt.Errorf("watching Services for the backlog: %w", err)
	}
	if _, err := informer.AddEventHandler(b); err != nil {
		return nil, fmt.Errorf("watching Services for the backlog: %w", err)
	}
	return b, nil
}

// leaseFraction is num/den of the lease duration d, or nil (controller-runtime's
// default) when d is 0.
func leaseFraction(d time.Duration, num, den int64) *time.Duration {
	if d <= 0 {
		return nil
	}
	f := d * time.Duration(num) / time.Duration(den)
	return &f
}

// autoscaler is the reconcilers' Autoscaler, nil without them.
func (f *Ferry) autoscaler() *autoscaler.Autoscaler {
	if f == nil || f.Controllers == nil {
		return nil
	}
	return f.Controllers.Autoscaler
}

// Numbers reads the autoscaler's numbers in this process, for a dashboard beside it.
func (f *Ferry) Numbers() dashboard.NumbersSource { return dashboard.InProcess(f.autoscaler) }

// Start runs everything until ctx is cancelled.
func (f *Ferry) Start(ctx context.Context) error {
	defer context.AfterFunc(ctx, f.stop)()
	return f.mgr.Start(ctx)
}
