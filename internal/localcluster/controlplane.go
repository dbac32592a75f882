package localcluster

import (
	"context"
	"flag"
	"io"

	"github.com/ferry-serving/ferry/internal/programs"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	schedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	scheduleroptions "k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// runControllerManager runs kube-controller-manager (Deployments, ReplicaSets,
// EndpointSlices, garbage collection, namespaces, ...) until ctx is cancelled.
func runControllerManager(ctx context.Context, kubeconfig string, creds *credentials) error {
	s, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return err
	}
	known, disabled, aliases := kcmapp.KnownControllers(), kcmapp.ControllersDisabledByDefault(), kcmapp.ControllerAliases()
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	nfs := s.Flags(known, disabled, aliases)
	for _, f := range nfs.FlagSets {
		fs.AddFlagSet(f)
	}
	s.ParsedFlags = &nfs
	if err := fs.Parse([]string{
		"--kubeconfig=" + kubeconfig,
		// Nothing reads the legacy Endpoints objects (deprecated since 1.33; Ferry's
		// gateway and kube-proxy read EndpointSlices). Their controller re-scans every
		// Service of a namespace on each pod change and wrote ~2.8 objects per Knative
		// Service in a scale run; the mirroring controller only mirrors Endpoints.
		"--controllers=*,-endpoints-controller,-endpointslice-mirroring-controller",
		"--leader-elect=false",
		"--secure-port=0",
		"--root-ca-file=" + creds.caFile,
		"--service-account-private-key-file=" + creds.saKeyFile,
		"--use-service-account-credentials=false",
		// The local cluster's own clients are the only load; the defaults (20 QPS)
		// would make Deployments of a scale test queue behind the controller manager.
		"--kube-api-qps=1000",
		"--kube-api-burst=2000",
		"--concurrent-deployment-syncs=20",
		"--concurrent-replicaset-syncs=20",
		"--concurrent-service-endpoint-syncs=20",
		"--concurrent-gc-syncs=40",
	}); err != nil {
		return err
	}
	cfg, err := s.Config(ctx, known, disabled, aliases)
	if err != nil {
		return err
	}
	return kcmapp.Run(ctx, cfg.Complete())
}

// runScheduler runs kube-scheduler until ctx is cancelled. With images, its filter
// places the pods of local programs on the program node (programs.go).
func runScheduler(ctx context.Context, dir, kubeconfig string, images *programs.Images) error {
	opts := scheduleroptions.NewOptions()
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--kube-api-qps=1000",
		"--kube-api-burst=2000",
	}
	var plugins []schedulerapp.Option
	if images != nil {
		config, err := schedulerConfig(dir, kubeconfig)
		if err != nil {
			return err
		}
		args = []string{"--config=" + config, "--secure-port=0"}
		plugins = append(plugins, schedulerapp.WithPlugin(programsFilterName, newProgramsFilter(images)))
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	cc, sched, err := schedulerapp.Setup(ctx, opts, plugins...)
	if err != nil {
		return err
	}
	return schedulerapp.Run(ctx, cc, sched)
}

// silenceKlog sends the Kubernetes components' klog output to w instead of stderr,
// each line once (without one_output, klog writes an error to the error, warning and
// info outputs, all of which are w).
func silenceKlog(w io.Writer) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for k, v := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL", "v": "0", "one_output": "true"} {
		_ = fs.Set(k, v)
	}
	klog.SetOutput(w)
}
