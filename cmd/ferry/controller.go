package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/ferry-serving/ferry/internal/admission"
	"github.com/ferry-serving/ferry/internal/backpressure"
	"github.com/ferry-serving/ferry/internal/gateway"
	"github.com/ferry-serving/ferry/internal/manager"
	"github.com/ferry-serving/ferry/internal/reconciler"
	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// clusterFlags are the flags of the commands that run against an existing cluster.
type clusterFlags struct {
	kubeconfig  string
	metricsAddr string
	healthAddr  string
	pprofAddr   string
	logFormat   string
	leaderElect bool
	namespace   string
	lease       time.Duration
	qps         float32
	burst       int
}

func (f *clusterFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig to use (default: $KUBECONFIG, in-cluster config, ~/.kube/config)")
	cmd.Flags().StringVar(&f.metricsAddr, "metrics-addr", ":9090", "where Prometheus metrics are served; 0 turns them off")
	cmd.Flags().StringVar(&f.healthAddr, "health-addr", ":8082", "where /healthz and /readyz are served; 0 turns them off")
	cmd.Flags().StringVar(&f.pprofAddr, "pprof-addr", "0", "where Go's profiles are served (/debug/pprof/); 0 turns them off")
	cmd.Flags().StringVar(&f.logFormat, "log-format", "json", "log format: json (one object per line) or console (for people)")
	cmd.Flags().BoolVar(&f.leaderElect, "leader-elect", false, "elect one active replica (for more than one replica)")
	cmd.Flags().StringVar(&f.namespace, "leader-election-namespace", "", "namespace of the leader election lease (default: the pod's)")
	cmd.Flags().DurationVar(&f.lease, "leader-election-lease-duration", 15*time.Second, "how long a leader that stopped renewing keeps the lease before another replica takes over (whole seconds, at least 2s)")
	// client-go's default (5 QPS, controller-runtime's 20) throttles a burst of Services to
	// a few per second; the API server's priority and fairness protects it instead.
	cmd.Flags().Float32Var(&f.qps, "kube-api-qps", 500, "requests per second to the API server, sustained (-1: no client-side limit)")
	cmd.Flags().IntVar(&f.burst, "kube-api-burst", 1000, "requests to the API server in a burst above --kube-api-qps")
}

// checkLease refuses lease durations the Lease object cannot hold: it stores whole
// seconds, so a fraction would let a follower count a shorter lease than the leader
// renews (two leaders), and under 2s it is shorter than a renewal round trip.
func (f *clusterFlags) checkLease() error {
	if f.lease%time.Second != 0 || f.lease < 2*time.Second {
		return fmt.Errorf("--leader-election-lease-duration %s: want whole seconds, at least 2s", f.lease)
	}
	return nil
}

func (f *clusterFlags) restConfig() (*rest.Config, error) {
	if f.kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("reading --kubeconfig %s: %w", f.kubeconfig, err)
		}
		return cfg, nil
	}
	return ctrl.GetConfig()
}

// logger is zap's production logger (info level, stack traces on errors) writing to w
// in the chosen format, with readable timestamps. Reconciles log through the logger
// controller-runtime puts in their context, which names the object.
func (f *clusterFlags) logger(w io.Writer) (logr.Logger, error) {
	encoder := zap.JSONEncoder
	switch f.logFormat {
	case "json":
	case "console":
		encoder = zap.ConsoleEncoder
	default:
		return logr.Logger{}, fmt.Errorf("--log-format %q: want json or console", f.logFormat)
	}
	return zap.New(zap.WriteTo(w), zap.UseDevMode(false), encoder(func(c *zapcore.EncoderConfig) {
		c.EncodeTime = zapcore.ISO8601TimeEncoder
	})), nil
}

func (f *clusterFlags) run(cmd *cobra.Command, opts manager.Options) error {
	log, err := f.logger(os.Stderr)
	if err != nil {
		return err
	}
	ctrl.SetLogger(log)
	if err := f.checkLease(); err != nil {
		return err
	}
	cfg, err := f.restConfig()
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = f.qps, f.burst
	opts.HealthAddr, opts.PprofAddr = f.healthAddr, f.pprofAddr
	opts.MetricsAddr, opts.LeaderElection, opts.LeaderElectionNamespace, opts.LeaseDuration = f.metricsAddr, f.leaderElect, f.namespace, f.lease
	ferry, err := manager.New(cfg, opts)
	if err != nil {
		return err
	}
	return ferry.Start(cmd.Context())
}

// inProgressLimit's flag text, the same for ferry up and ferry controller.
var inProgressLimitUsage = "hold a Service create at admission (up to " + admission.MaxHold.String() + ") while this many Services are on their way to Ready; the default is " + strconv.Itoa(backpressure.DefaultLimit) + ", -1 never holds (nor postpones scaling to zero during a burst)"

func newControllerCommand() *cobra.Command {
	var flags clusterFlags
	var opts reconciler.Options
	var webhookAddr, statsAddr string
	var inProgressLimit int
	var certManager bool
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run Ferry's Knative Serving reconcilers against a cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mopts := manager.Options{Reconcilers: true, ReconcilerOptions: opts, StatsAddr: statsAddr, CertManager: certManager}
			if webhookAddr != "" {
				// In the cluster: behind the Service ferry-webhook, with the certificate in
				// the Secret ferry-webhook-certs (config/webhook).
				mopts.Admission = &admission.Options{InCluster: true, Addr: webhookAddr, InProgressLimit: inProgressLimit}
			}
			return flags.run(cmd, mopts)
		},
	}
	flags.add(cmd)
	cmd.Flags().StringVar(&opts.Overrides.Domain, "domain", "", "the domain of every external Route URL, overriding config-domain (default: config-domain in ferry-system, else example.com)")
	cmd.Flags().StringVar(&webhookAddr, "webhook-addr", "", "serve Knative's validation and defaulting webhooks here (e.g. :8443) and register them by the Service ferry-webhook in ferry-system; only for a controller running in that cluster (config/webhook)")
	cmd.Flags().IntVar(&inProgressLimit, "admission-in-progress-limit", 0, "with --webhook-addr: "+inProgressLimitUsage)
	cmd.Flags().StringVar(&opts.GatewayHost, "gateway-host", reconciler.DefaultGatewayHost, "the in-cluster name of the gateway, for Routes' placeholder Services")
	cmd.Flags().BoolVar(&certManager, "cert-manager", false, "fulfil Certificates of cert-manager's class with cert-manager.io Certificates (config-certmanager issuerRef); cert-manager's CRDs must be installed, and config/https/controller-cert-manager-rbac.yaml applied (the component config/https applies it and sets this flag)")
	cmd.Flags().StringVar(&statsAddr, "stats-addr", ":8083", "where the autoscaler takes the gateways' load reports (every replica serves; 0 turns it off)")
	return cmd
}

func newGatewayCommand() *cobra.Command {
	var flags clusterFlags
	var opts gateway.Options
	var autoscalerAddr string
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Run Ferry's gateway: serve KIngresses over HTTP",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return flags.run(cmd, manager.Options{Gateway: &opts, AutoscalerAddress: autoscalerAddr})
		},
	}
	flags.add(cmd)
	cmd.Flags().StringVar(&opts.ExternalAddr, "addr", ":8080", "the external listener")
	cmd.Flags().StringVar(&opts.LocalAddr, "local-addr", ":8081", "the cluster-local listener")
	cmd.Flags().StringVar(&opts.LeaseNamespace, "lease-namespace", "", "where each replica keeps a Lease, so that the replicas split every pod's containerConcurrency and a KIngress is Ready only once all of them serve it (in a cluster: ferry-system); empty: this replica assumes it is alone")
	cmd.Flags().DurationVar(&opts.LeaseDuration, "lease-duration", 15*time.Second, "how long a replica that stopped renewing its Lease (killed, partitioned) still counts; renewed every third of it")
	cmd.Flags().StringVar(&opts.HTTPSAddr, "https-addr", "", "the HTTPS listener for KIngress spec.tls (e.g. :8443); needs read access to Secrets (config/rbac/gateway-tls.yaml). Empty: no HTTPS")
	cmd.Flags().BoolVar(&opts.SimulatedPods, "simulated-pods", false, "answer for every endpoint instead of dialing it (clusters of kwok pods)")
	cmd.Flags().StringVar(&autoscalerAddr, "autoscaler", "", "host:port of the controllers' --stats-addr, where load is reported and Revisions at zero are woken; every address the host resolves to gets the reports (in a cluster: ferry-autoscaler.ferry-system.svc.cluster.local:8083)")
	return cmd
}
