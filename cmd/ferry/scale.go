package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/ferry-serving/ferry/internal/reconciler"
	"github.com/ferry-serving/ferry/internal/scale"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/client-go/tools/clientcmd"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

type scaleFlags struct {
	n           int
	concurrency int
	timeout     time.Duration
	kubeconfig  string
	namespace   string
	namespaces  int
	gateway     string
	metrics     string
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
	fl.StringVar(&f.metrics, "controller-metrics", "", "with --kubeconfig: the Ferry controller's metrics URL (e.g. http://127.0.0.1:9090/metrics), to report each controller's queue waits")
	fl.StringVar(&f.image, "image", scale.DefaultImage, "the Services' image")
	fl.BoolVar(&f.cleanup, "cleanup", false, "delete what the run created and wait until it is gone")
	fl.StringVar(&f.reportDir, "report-dir", "", "where report.json and report.html go (default ./ferry-scale-<timestamp>)")
	fl.BoolVar(&f.floor, "floor", false, "after the run, time the same number of plain writes against the same API server (not after a run with Services past their deadline)")
	fl.BoolVar(&f.phases, "phases", true, "also watch Configurations, Revisions, Deployments, pods, Routes and KIngresses, to report where the time goes")
	fl.IntVar(&f.workers, "workers", 0, "without --kubeconfig: each of Ferry's controllers' concurrent reconciles (default: Ferry's default)")
	fl.IntVar(&f.inProgress, "admission-in-progress-limit", 0, "without --kubeconfig: "+inProgressLimitUsage)
	fl.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the run (the whole process: with the local cluster, the control plane too)")
	return cmd
}

func runScale(ctx context.Context, out io.Writer, f scaleFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	started := time.Now()
	if f.reportDir == "" {
		f.reportDir = "ferry-scale-" + started.Format("20060102-150405")
	}
	if err := os.MkdirAll(f.reportDir, 0o755); err != nil {
		return err
	}

	opts := scale.Options{N: f.n, Concurrency: f.concurrency, TimeoutPerService: f.timeout, Image: f.image,
		Namespace: f.namespace, Namespaces: f.namespaces, GatewayURL: f.gateway, Warmup: true, Phases: f.phases, Progress: out, Terminal: isTerminal(out)}
	runCtx, stopFerry := ctx, func() {}
	if f.kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
		if err != nil {
			return fmt.Errorf("reading --kubeconfig %s: %w", f.kubeconfig, err)
		}
		opts.Config = cfg
		if f.metrics != "" {
			opts.Metrics = scale.MetricsAt(f.metrics)
		}
	} else {
		local, err := startLocalRun(ctx, out, f, &opts)
		if err != nil {
			return err
		}
		defer local.stop()
		fmt.Fprintf(out, "Cluster and Ferry are up (%s); gateway %s. Logs in %s.\n",
			time.Since(started).Round(100*time.Millisecond), opts.GatewayURL, f.reportDir)
		// The run stops if Ferry fails; Ferry stops before the floor, which is to
		// measure the API server alone, and at the end.
		runCtx, stopFerry = local.ferry.Context(), local.stopFerry
	}

	stopProfile, err := startCPUProfile(f.cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if f.namespaces > 1 {
		fmt.Fprintf(out, "Creating %d Services over %d namespaces, %d at a time ...\n", f.n, f.namespaces, opts.Concurrency)
	} else {
		fmt.Fprintf(out, "Creating %d Services, %d at a time ...\n", f.n, opts.Concurrency)
	}
	var res *scale.Result
	var runErr error
	// Profiler labels tell the run's own CPU from Ferry's and the control plane's in
	// --cpuprofile (go tool pprof -tags).
	pprof.Do(runCtx, pprof.Labels("component", "scale-run"), func(ctx context.Context) { res, runErr = scale.Run(ctx, opts) })
	stopProfile()
	if res == nil {
		return runErr
	}
	if f.cpuprofile != "" {
		fmt.Fprintf(out, "CPU profile: %s — by component: go tool pprof -tags %s; Ferry's hot spots: go tool pprof -top -tagfocus component=ferry %s\n",
			f.cpuprofile, f.cpuprofile, f.cpuprofile)
		res.Notes = append(res.Notes, "CPU profile of the run in "+f.cpuprofile+": `go tool pprof -tags` splits it by component (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, ferry, scale-run; unlabelled is mostly the Go runtime's GC) and Ferry's CPU by controller (label ferry).")
		if res.CPU, err = readCPUBreakdown(f.cpuprofile); err != nil {
			res.Notes = append(res.Notes, err.Error())
		}
	}

	if f.floor && runErr == nil {
		if why := res.FloorWithout(); why != "" {
			res.Notes = append(res.Notes, why)
		} else {
			// In-process, nothing but the floor should write meanwhile: Ferry's
			// background work (statuses settling, scale to zero) would. The objects are
			// sized in the run's (first) namespace.
			stopFerry()
			floor, err := scale.Floor(ctx, scale.FloorOptions{Config: opts.Config, Writes: res.Writes, Concurrency: res.Concurrency,
				Real: res.Total, SizeNamespace: res.Namespace, Progress: out})
			if err != nil {
				res.Notes = append(res.Notes, "the write floor failed: "+err.Error())
			}
			res.Floor = floor
		}
	}

	if err := writeScaleReports(out, f.reportDir, res); err != nil {
		return err
	}
	if f.cleanup {
		if runErr != nil {
			fmt.Fprintln(out, "Not cleaning up: the run was interrupted.")
		} else if err := scale.Cleanup(ctx, opts.Config, res, 10*time.Minute, out); err != nil {
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

// check refuses flags that contradict each other before anything starts.
func (f scaleFlags) check() error {
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
	if f.metrics != "" {
		if f.kubeconfig == "" {
			return errors.New("scale: --controller-metrics is for --kubeconfig; the in-process controller's queue waits are reported anyway")
		}
		if u, err := url.Parse(f.metrics); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("scale: --controller-metrics must be an http(s) URL such as http://127.0.0.1:9090/metrics, not %q", f.metrics)
		}
	}
	if f.kubeconfig == "" && !withLocalCluster {
		return fmt.Errorf("scale: pass --kubeconfig: %w", errNoLocalCluster)
	}
	return nil
}

// localRun is the local cluster and the Ferry a run without --kubeconfig starts,
// with their logs in the report directory.
type localRun struct {
	cluster localCluster
	ferry   *inProcessFerry
	logs    []*os.File
}

// startLocalRun starts them and points opts at them: the cluster's API server,
// Ferry's gateway and Ferry's write counter.
func startLocalRun(ctx context.Context, out io.Writer, f scaleFlags, opts *scale.Options) (_ *localRun, err error) {
	l := &localRun{}
	defer func() {
		if err != nil {
			l.stop()
		}
	}()
	fmt.Fprintln(out, "Starting a local cluster with Ferry in-process ...")
	cpLog, err := l.log(filepath.Join(f.reportDir, "control-plane.log"))
	if err != nil {
		return nil, err
	}
	if l.cluster, err = startLocalCluster(ctx, localClusterOptions{log: cpLog}); err != nil {
		return nil, err
	}
	ferryLog, err := l.log(filepath.Join(f.reportDir, "ferry.log"))
	if err != nil {
		return nil, err
	}
	opts.FerryWrites = scale.NewWriteCounter()
	l.ferry, err = startFerry(ctx, l.cluster, inProcessOptions{log: ferryLog, reconciler: reconciler.Options{Workers: f.workers},
		inProgressLimit: f.inProgress, gatewayAddr: "127.0.0.1:0", gatewayLocalAddr: "127.0.0.1:0", writes: opts.FerryWrites})
	if err != nil {
		return nil, err
	}
	opts.Config = l.cluster.RESTConfig()
	opts.GatewayURL = "http://" + l.ferry.Gateway.ExternalAddr()
	opts.InProcess = true
	opts.Metrics = ctrlmetrics.Registry
	return l, nil
}

func (l *localRun) log(path string) (*os.File, error) {
	f, err := os.Create(path)
	if err == nil {
		l.logs = append(l.logs, f)
	}
	return f, err
}

// stopFerry stops Ferry, saying why if it had failed.
func (l *localRun) stopFerry() {
	if err := l.ferry.Stop(); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "ferry:", err)
	}
}

// stop stops what startLocalRun started, Ferry first.
func (l *localRun) stop() {
	if l.ferry != nil {
		l.stopFerry()
	}
	if l.cluster != nil {
		l.cluster.Stop()
	}
	for _, f := range l.logs {
		f.Close()
	}
}

// startCPUProfile writes a CPU profile to path ("": none) until the returned stop,
// which may be called more than once.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	pf, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { pprof.StopCPUProfile(); pf.Close() }) }, nil
}

// writeScaleReports prints the summary and writes report.json, report.html and
// summary.txt (with every stuck Service explained) into dir.
func writeScaleReports(out io.Writer, dir string, res *scale.Result) error {
	scale.WriteSummary(out, res, 10)
	jsonPath, htmlPath, err := scale.WriteReports(dir, res)
	if err != nil {
		return fmt.Errorf("writing the reports: %w", err)
	}
	summaryPath := filepath.Join(dir, "summary.txt")
	if sf, err := os.Create(summaryPath); err == nil {
		scale.WriteSummary(sf, res, len(res.Stuck()))
		sf.Close()
	}
	fmt.Fprintf(out, "\nReports: %s, %s, %s\n", htmlPath, jsonPath, summaryPath)
	return nil
}

// isTerminal says whether w is a terminal, where the progress bar redraws in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func readCPUBreakdown(path string) (*scale.CPUBreakdown, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return scale.ReadCPUBreakdown(f)
}
