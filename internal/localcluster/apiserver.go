package localcluster

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	apiserveroptions "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

var apiServerInstances atomic.Int64

// runAPIServer runs kube-apiserver on ln until ctx is cancelled. It is built from the
// command's options rather than its cobra command, which would re-apply process-wide
// logging settings and parse os.Args.
//
// With a valid advertise address (the host's address for pods, where ln also accepts),
// the API server keeps the kubernetes Service's endpoints there, as on a cluster, so
// that a pod's in-cluster client reaches it; without one, the kubernetes Service has
// none (its endpoint reconciler refuses a loopback address).
func runAPIServer(ctx context.Context, ln net.Listener, etcdURL string, creds *credentials, advertise netip.Addr, extraFlags []string) error {
	s := apiserveroptions.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	endpoints := []string{"--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none"}
	if advertise.IsValid() {
		// Webhooks (Ferry's own, installed from config/) are called at their Service's
		// endpoints, not its ClusterIP: the host's route for the service CIDR leads
		// to the node of whichever ferry up took it first.
		endpoints = []string{"--advertise-address=" + advertise.String(), "--endpoint-reconciler-type=lease",
			"--enable-aggregator-routing=true"}
	}
	err := fs.Parse(append(append([]string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + creds.servingCertFile,
		"--tls-private-key-file=" + creds.servingKeyFile,
		"--token-auth-file=" + creds.tokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + creds.saKeyFile,
		"--service-account-signing-key-file=" + creds.saKeyFile,
		"--service-cluster-ip-range=10.96.0.0/16",
		"--profiling=false",
	}, endpoints...), extraFlags...))
	if err != nil {
		return err
	}
	s.SecureServing.Listener = ln
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return err
	}
	completed, err := s.Complete(ctx)
	if err != nil {
		return err
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return utilerrors.NewAggregate(errs)
	}
	// Informer names are registered process-wide; a second API server in the same
	// process (a restart, or a test's second cluster) needs a name of its own.
	if completed.InformerName, err = cache.NewInformerName(fmt.Sprintf("kube-apiserver-%d", apiServerInstances.Add(1))); err != nil {
		return err
	}
	return apiserverapp.Run(ctx, completed)
}

// waitReady polls /readyz until the API server answers 200, or a component failed.
func (c *Cluster) waitReady(ctx context.Context, timeout time.Duration) error {
	cs, err := kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.firstError(); err != nil {
			return false, err
		}
		var status int
		res := cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status)
		last = res.Error()
		return status == 200, nil
	})
	if err != nil {
		return fmt.Errorf("kube-apiserver at %s was not ready: %w (last answer: %v)", c.restConfig.Host, err, last)
	}
	return nil
}
