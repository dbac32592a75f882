package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/soak"
)

type soakFlags struct {
	duration, cycle, readyBound time.Duration
	faults                      string
	rate                        float64
	kubeconfig                  string
	gateway, gatewayLocal       string
	namespace, reportDir        string
	image                       string
	changeAutoscaler            bool
	isolation                   string
	pprofAddr                   string
}

func newSoakCommand() *cobra.Command {
	var f soakFlags
	cmd := &cobra.Command{
		Use:   "soak --duration D [--faults all]",
		Short: "Keep load on a fleet of Services for a duration while the cluster changes and breaks; report anything lost",
		Long: `Create a fleet of Knative Services (plain, split, tagged, gradually rolled out,
cluster-local, scaled to zero and back, one rolled out to a crashing program) and send
steady load to them through the gateway for --duration. Every --cycle the soak changes
something, in turn: a template update, a traffic flip, a tag moving, a gradual
rollout, the run's Routes moved to a domain of their own in config-domain and back, a
Service created and one deleted, config-autoscaler's stable-window. With --faults, half
a cycle later it breaks something, in turn: the leading controller killed, a gateway
replica restarted, a program that crashes at start, the API server slowed for the
controller.

It records every request (status, latency, the Revision that answered), every object's
readiness, and each process's memory, and fails when a request failed that a client of
Knative would not also see, when a Revision answered that no traffic target named
then, when an object stayed not Ready longer than --ready-bound after its latest
change, or when a process's memory grew more than 10 % after its first five minutes.
The reports (summary.txt, report.json, report.html) go to --report-dir.

Without --kubeconfig, a local cluster starts in this process as ferry up starts it,
with Ferry's admission and one gateway replica in this process and the controller and
a second gateway replica as ferry processes, which the faults kill and restart; pods
run as real programs where runc can run them (the examples' hello, built from the
working directory: run it from Ferry's repository), else kwok simulates them. With
--kubeconfig, Ferry must run in that cluster: pass --gateway and --gateway-local (its
listeners, e.g. port-forwarded), --image, and --faults controller,gateway deletes the
leading controller's pod and a gateway pod in ferry-system.

The exit status is 1 when the soak found anything wrong.`,
		Example: `  ferry soak --duration 10m
  ferry soak --duration 1h --faults all --report-dir docs/soak`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSoak(cmd.Context(), cmd.OutOrStdout(), f) },
	}
	fl := cmd.Flags()
	fl.DurationVar(&f.duration, "duration", soak.DefaultDuration, "how long to soak (the fleet's creation and the final settling come on top)")
	fl.DurationVar(&f.cycle, "cycle", soak.DefaultCycle, "how often something changes (and, with --faults, breaks)")
	fl.StringVar(&f.faults, "faults", "none", "what breaks: none, all, or some of controller, gateway, program, apiserver")
	fl.DurationVar(&f.readyBound, "ready-bound", soak.DefaultReadyBound, "how long an object may stay not Ready after its latest change, a fault or a configuration change")
	fl.Float64Var(&f.rate, "rate", soak.DefaultRate, "requests per second over the whole fleet")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "soak this cluster, where Ferry runs already (default: a local cluster started here)")
	fl.StringVar(&f.gateway, "gateway", "", "with --kubeconfig: the gateway's external URL")
	fl.StringVar(&f.gatewayLocal, "gateway-local", "", "with --kubeconfig: the gateway's cluster-local listener's URL")
	fl.StringVar(&f.namespace, "namespace", "", "namespace of the fleet, created if missing (default ferry-soak-<run ID>)")
	fl.StringVar(&f.reportDir, "report-dir", "", "where the reports and logs go (default ./ferry-soak-<timestamp>)")
	fl.StringVar(&f.image, "image", "", "the fleet's image (default: the examples' hello as a real program on the local cluster, else Ferry's simulated image)")
	fl.BoolVar(&f.changeAutoscaler, "change-autoscaler", false, "with --kubeconfig: also toggle config-autoscaler's stable-window (every Service of the cluster follows it; restored at the end). Always on the local cluster")
	fl.StringVar(&f.isolation, "program-isolation", "auto", "without --kubeconfig: how the local node runs programs, as ferry up's flag")
	fl.StringVar(&f.pprofAddr, "pprof-addr", "0", "without --kubeconfig: where Go's profiles of the soak's own process (control plane, admission, gateway A, load) are served; 0 turns them off")
	return cmd
}

func runSoak(ctx context.Context, out io.Writer, f soakFlags) error {
	faults, err := soak.ParseFaults(f.faults)
	if err != nil {
		return err
	}
	if f.kubeconfig == "" && (f.gateway != "" || f.gatewayLocal != "" || f.changeAutoscaler) {
		return errors.New("soak: --gateway, --gateway-local and --change-autoscaler are for --kubeconfig; the local cluster's gateways are loaded, and config-autoscaler changed, anyway")
	}
	if f.kubeconfig != "" && f.isolation != "auto" {
		return errors.New("soak: --program-isolation is for the local cluster; with --kubeconfig the cluster runs the pods")
	}
	if f.kubeconfig != "" && f.pprofAddr != "0" {
		return errors.New("soak: --pprof-addr is for the local cluster; with --kubeconfig, profile Ferry's own processes")
	}
	runID := rand.String(5)
	if f.namespace == "" {
		f.namespace = "ferry-soak-" + runID
	}
	if f.reportDir == "" {
		f.reportDir = "ferry-soak-" + time.Now().Format("20060102-150405")
	}
	if err := os.MkdirAll(f.reportDir, 0o755); err != nil {
		return err
	}
	opts := soak.Options{Namespace: f.namespace, RunID: runID, Duration: f.duration, Cycle: f.cycle, Faults: faults,
		ReadyBound: f.readyBound, Rate: f.rate, Image: f.image, ChangeAutoscaler: f.changeAutoscaler,
		SystemNamespace: config.SystemNamespace, Progress: out}
	if f.kubeconfig != "" {
		if f.gateway == "" || f.gatewayLocal == "" || f.image == "" {
			return errors.New("soak: with --kubeconfig, pass --gateway, --gateway-local and --image")
		}
		if opts.Config, err = clientcmd.BuildConfigFromFlags("", f.kubeconfig); err != nil {
			return fmt.Errorf("reading --kubeconfig %s: %w", f.kubeconfig, err)
		}
		opts.Gateways = soak.StaticGateways{External: strings.TrimSuffix(f.gateway, "/"), Local: strings.TrimSuffix(f.gatewayLocal, "/")}
		opts.Breaker = soak.ClusterBreaker(opts.Config, config.SystemNamespace)
		opts.Programs = true
	} else {
		if !withLocalCluster {
			return fmt.Errorf("soak: pass --kubeconfig: %w", errNoLocalCluster)
		}
		local, err := startSoakCluster(ctx, out, f, &opts)
		if err != nil {
			return err
		}
		defer local.stop()
	}
	rep, err := soak.Run(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	rep.WriteText(out)
	if err := rep.WriteFiles(f.reportDir); err != nil {
		return fmt.Errorf("writing the reports: %w", err)
	}
	fmt.Fprintf(out, "\nReports: %s\n", filepath.Join(f.reportDir, "report.html"))
	if rep.Failed() {
		return fmt.Errorf("the soak failed: %s", strings.Join(rep.Failures, "; "))
	}
	return nil
}
