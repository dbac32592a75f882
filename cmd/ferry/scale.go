package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/ferry-serving/ferry/internal/admission"
	"github.com/ferry-serving/ferry/internal/gateway"
	"github.com/ferry-serving/ferry/internal/manager"
	"github.com/ferry-serving/ferry/internal/reconciler"
	"github.com/ferry-serving/ferry/internal/scale"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	"golang.org/x/term"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

type scaleFlags struct {
	n           int
	concurrency int
	timeout     time.Duration
	kubeconfig  string
	namespace   string
	namespaces  int
	gateway     string
	image       string
	cleanup     bool
	reportDir   string
	floor       bool
	phases      bool
	cpuprofile  string
	workers     int
	inProgress  int
}

func newScaleCommand() *cobra.Command {
	var f scaleFlags
	cmd := &cobra.Command{
		Use:   "scale -n N",
		Short: "Create N Knative Services at once and measure how fast Ferry makes them Ready",
		Long: `Create N Knative Services in parallel (at most --concurrency creates in flight), follow
them with a watch until each is Ready (and, with a gateway, until the gateway first routes
a request to it), and report the time-to-Ready percentiles, the total, the API writes per
Service by resource, and, when Ferry runs in-process, the process's CPU and memory. Every
Service that misses its deadline is explained along its dependency chain. The reports
(report.json with every sample, report.html with charts) go to --report-dir.

Without --kubeconfig, a local cluster (etcd, kube-apiserver, controller-manager,
scheduler, kwok) starts in this process with Ferry's reconcilers and gateway, and is
torn down afterwards. With --kubeconfig, Ferry must already run in that cluster; pass
--gateway to probe its gateway.

--floor then performs as many plain ConfigMap writes as the run made, by verb, at the
same concurrency against the same API server, and reports real/floor: how far Ferry's
control plane is from the API server's own limit.

The exit status is 1 when any Service missed its deadline.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runScale(cmd.Context(), cmd.OutOrStdout(), f) },
	}
	fl := cmd.Flags()
	fl.IntVarP(&f.n, "services", "n", 0, "how many Services to create (required)")
	fl.IntVar(&f.concurrency, "concurrency", scale.DefaultConcurrency, "at most this many creates in flight (and gateway probes, and floor writes)")
	fl.DurationVar(&f.timeout, "timeout-per-service", scale.DefaultTimeoutPerService, "each Service's deadline to be Ready (and routed), from its create request")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "run against this cluster, where Ferry runs already (default: a local cluster with Ferry in-process)")
	fl.StringVar(&f.namespace, "namespace", "", "namespace of the Services, created if missing (default ferry-scale-<run ID>); with --namespaces K > 1, the base of their names")
	fl.IntVar(&f.namespaces, "namespaces", 1, "spread the Services round-robin over K namespaces, <namespace>-0 … <namespace>-<K-1>, each created if missing")
	fl.StringVar(&f.gateway, "gateway", "", "with --kubeconfig: the gateway's URL, to measure time to the first routed response")
	fl.StringVar(&f.image, "image", scale.DefaultImage, "the Services' image")
	fl.BoolVar(&f.cleanup, "cleanup", false, "delete what the run created and wait until it is gone")
	fl.StringVar(&f.reportDir, "report-dir", "", "where report.json and report.html go (default ./ferry-scale-<timestamp>)")
	fl.BoolVar(&f.floor, "floor", false, "after the run, time the same number of plain writes against the same API server")
	fl.BoolVar(&f.phases, "phases", true, "also watch Configurations, Revisions, Deployments, pods, Routes and KIngresses, to report where the time goes")
	fl.IntVar(&f.workers, "workers", 0, "without --kubeconfig: each of Ferry's controllers' concurrent reconciles (default: Ferry's default)")
	fl.IntVar(&f.inProgress, "admission-in-progress-limit", 0, "without --kubeconfig: "+inProgressLimitUsage)
	fl.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the run (the whole process: with the local cluster, the control plane too)")
	return cmd
}

func runScale(ctx context.Context, out io.Writer, f scaleFlags) error {
	if f.n <= 0 {
		return errors.New("scale: say how many Services with -n N")
	}
	if f.namespaces < 1 || f.namespaces > f.n {
		return fmt.Errorf("scale: --namespaces must be between 1 and the number of Services (-n %d), not %d", f.n, f.namespaces)
	}
	if (f.workers != 0 || f.inProgress != 0) && f.kubeconfig != "" {
		return errors.New("scale: --workers and --admission-in-progress-limit configure the in-process Ferry; with --kubeconfig, Ferry runs elsewhere")
	}
	if f.gateway != "" && f.kubeconfig == "" {
		return errors.New("scale: --gateway is for --kubeconfig; the local cluster's gateway is probed anyway")
	}
	if f.kubeconfig == "" && !withLocalCluster {
		return fmt.Errorf("scale: pass --kubeconfig: %w", errNoLocalCluster)
	}
	started := time.Now()
	if f.reportDir == "" {
		f.reportDir = "ferry-scale-" + started.Format("20060102-150405")
	}
	if err := os.MkdirAll(f.reportDir, 0o755); err != nil {
		return err
	}

	var cfg *rest.Config
	runCtx, stopFerry := ctx, func() {}
	opts := scale.Options{N: f.n, Concurrency: f.concurrency, TimeoutPerService: f.timeout, Image: f.image,
		Namespace: f.namespace, Namespaces: f.namespaces, GatewayURL: f.gateway, Warmup: true, Phases: f.phases, Progress: out, Terminal: isTerminal(out)}
	if f.kubeconfig != "" {
		var err error
		if cfg, err = clientcmd.BuildConfigFromFlags("", f.kubeconfig); err != nil {
			return fmt.Errorf("reading --kubeconfig %s: %w", f.kubeconfig, err)
		}
	} else {
		fmt.Fprintln(out, "Starting a local cluster with Ferry in-process ...")
		logs, err := os.Create(filepath.Join(f.reportDir, "control-plane.log"))
		if err != nil {
			return err
		}
		defer logs.Close()
		// Profiler labels tell the control plane's, Ferry's and the run's own CPU
		// apart in --cpuprofile (go tool pprof -tags): goroutines inherit them.
		var cluster localCluster
		pprof.Do(ctx, pprof.Labels("component", "control-plane"), func(ctx context.Context) {
			cluster, err = startLocalCluster(ctx, localClusterOptions{log: logs})
		})
		if err != nil {
			return err
		}
		defer cluster.Stop()
		ferryLog, err := os.Create(filepath.Join(f.reportDir, "ferry.log"))
		if err != nil {
			return err
		}
		defer ferryLog.Close()
		ctrl.SetLogger(zap.New(zap.WriteTo(ferryLog)))

		// Ferry's own clients count their writes, which the API server's metrics
		// cannot tell apart from the controller manager's, the scheduler's and kwok's.
		ferryCfg := cluster.ControllerRESTConfig()
		opts.FerryWrites = scale.NewWriteCounter()
		opts.FerryWrites.Wrap(ferryCfg)
		ferry, err := manager.New(ferryCfg, manager.Options{
			Reconcilers:       true,
			ReconcilerOptions: reconciler.Options{Workers: f.workers},
			// As with ferry up: Knative's defaulting and validation, and back-pressure.
			Admission: &admission.Options{InProgressLimit: f.inProgress, ControllerUser: cluster.ControllerUser()},
			Gateway:   &gateway.Options{ExternalAddr: "127.0.0.1:0", LocalAddr: "127.0.0.1:0", SimulatedPods: true},
		})
		if err != nil {
			return err
		}
		// The run stops if Ferry fails (runCtx); Ferry stops before the floor, which
		// is to measure the API server alone, and at the end.
		ferryCtx, cancel := context.WithCancel(ctx)
		g, gctx := errgroup.WithContext(ferryCtx)
		pprof.Do(gctx, pprof.Labels("component", "ferry"), func(ctx context.Context) {
			g.Go(func() error { return ferry.Start(ctx) })
		})
		runCtx = gctx
		var once sync.Once
		stopFerry = func() {
			once.Do(func() {
				cancel()
				if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
					fmt.Fprintln(os.Stderr, "ferry:", err)
				}
			})
		}
		defer stopFerry()
		select {
		case <-ferry.Admission.Ready():
		case <-gctx.Done():
			return fmt.Errorf("ferry: %w", g.Wait())
		}
		cfg = cluster.RESTConfig()
		opts.GatewayURL = "http://" + ferry.Gateway.ExternalAddr()
		opts.InProcess = true
		fmt.Fprintf(out, "Cluster and Ferry are up (%s); gateway %s. Logs in %s.\n",
			time.Since(started).Round(100*time.Millisecond), opts.GatewayURL, f.reportDir)
	}
	opts.Config = cfg

	stopProfile := func() {}
	if f.cpuprofile != "" {
		pf, err := os.Create(f.cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			pf.Close()
			return err
		}
		var once sync.Once
		stopProfile = func() { once.Do(func() { pprof.StopCPUProfile(); pf.Close() }) }
		defer stopProfile()
	}
	if f.namespaces > 1 {
		fmt.Fprintf(out, "Creating %d Services over %d namespaces, %d at a time ...\n", f.n, f.namespaces, opts.Concurrency)
	} else {
		fmt.Fprintf(out, "Creating %d Services, %d at a time ...\n", f.n, opts.Concurrency)
	}
	var res *scale.Result
	var runErr error
	pprof.Do(runCtx, pprof.Labels("component", "scale-run"), func(ctx context.Context) { res, runErr = scale.Run(ctx, opts) })
	stopProfile()
	if res == nil {
		return runErr
	}
	if f.cpuprofile != "" {
		fmt.Fprintf(out, "CPU profile: %s — by component: go tool pprof -tags %s; Ferry's hot spots: go tool pprof -top -tagfocus component=ferry %s\n",
			f.cpuprofile, f.cpuprofile, f.cpuprofile)
		res.Notes = append(res.Notes, "CPU profile of the run in "+f.cpuprofile+": `go tool pprof -tags` splits it by component (control-plane, ferry, scale-run; unlabeled is mostly the Go runtime's GC).")
	}

	if f.floor && runErr == nil {
		// In-process, nothing but the floor should write meanwhile: Ferry would go
		// on working on Services that missed their deadline. The objects are sized in
		// the run's (first) namespace.
		stopFerry()
		floor, err := scale.Floor(ctx, scale.FloorOptions{Config: cfg, Writes: res.Writes, Concurrency: res.Concurrency,
			Real: res.Total, SizeNamespace: res.Namespace, Progress: out})
		if err != nil {
			res.Notes = append(res.Notes, "the write floor failed: "+err.Error())
		}
		res.Floor = floor
	}

	scale.WriteSummary(out, res, 10)
	jsonPath, htmlPath, err := scale.WriteReports(f.reportDir, res)
	if err != nil {
		return fmt.Errorf("writing the reports: %w", err)
	}
	summaryPath := filepath.Join(f.reportDir, "summary.txt")
	if sf, err := os.Create(summaryPath); err == nil {
		scale.WriteSummary(sf, res, len(res.Stuck()))
		sf.Close()
	}
	fmt.Fprintf(out, "\nReports: %s, %s, %s\n", htmlPath, jsonPath, summaryPath)

	if f.cleanup {
		if runErr != nil {
			fmt.Fprintln(out, "Not cleaning up: the run was interrupted.")
		} else if err := scale.Cleanup(ctx, cfg, res, 10*time.Minute, out); err != nil {
			return err
		}
	}
	if runErr != nil {
		return runErr
	}
	if stuck := len(res.Stuck()); stuck > 0 {
		return fmt.Errorf("%d of %d Services missed their deadline of %s", stuck, res.N, res.TimeoutPerService)
	}
	return nil
}

// isTerminal says whether w is a terminal, where the progress bar redraws in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
