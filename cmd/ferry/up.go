package main

import (
	"cmp"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/dashboard"
	"github.com/ferry-serving/ferry/internal/localca"
	"github.com/ferry-serving/ferry/internal/reconciler"
)

// gatewayLocalService is the in-cluster Service of the gateway's cluster-local
// listener, which Routes' placeholder Services name (reconciler.DefaultGatewayHost).
const gatewayLocalService = "ferry-gateway-local"

func newUpCommand() *cobra.Command {
	var dataDir, externalAddr, localAddr, httpsAddr, domain, pprofAddr, isolation, dashboardAddr string
	var port, inProgressLimit int
	var clusterOnly bool
	var localImages []string
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a local Kubernetes control plane with Ferry inside, until Ctrl-C",
		Long: `Run etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (simulated
pods on one fake node) in this process, with Ferry's CRDs, controllers and gateway, and
write a kubeconfig so that kubectl and kn work against it. Objects persist in the data
directory across restarts.

A second node, ferry-programs, runs real programs: a pod whose image is
ko://IMPORT/PATH runs that Go package, built with the go command in the current
directory, and --local-image IMAGE=EXECUTABLE runs a program for an image
(EXECUTABLE may be ko://IMPORT/PATH too). On Linux as root with runc installed, each
pod gets its own network namespace, IP and mounts in runc containers. Elsewhere (macOS,
not root), or with --program-isolation=none, each container is a plain process of the
host with a PORT of its own, without isolation: ferry up says what does not hold
then. Every other pod stays simulated by kwok.

With --cluster-only, Ferry's controller, gateway and admission webhooks do not run:
start ferry controller and ferry gateway against the kubeconfig, as separate processes.`,
		Args: cobra.NoArgs,
		// Images' ferry is built without the local cluster (make image).
		Hidden: !withLocalCluster,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !withLocalCluster {
				return errNoLocalCluster
			}
			start := time.Now()
			if dataDir == "" {
				home, err := os.UserHomeDir()
				if err != nil {
					return fmt.Errorf("no --data-dir given and no home directory: %w", err)
				}
				dataDir = filepath.Join(home, ".ferry")
			}
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			processes, notIsolated, caveats, programsErr := programsMode(isolation)
			switch {
			case programsErr != nil && isolation != "auto":
				return fmt.Errorf("--program-isolation=%s: %w", isolation, programsErr)
			case programsErr != nil && len(localImages) > 0:
				return fmt.Errorf("--local-image: %w", programsErr)
			}
			pods := "Pods of ko:// images and of --local-image run as processes on node ferry-programs,\nisolated in runc containers; the others are simulated by kwok."
			switch {
			case programsErr != nil:
				pods = fmt.Sprintf("Pods are simulated by kwok (ko:// images would run as processes, but %v).", programsErr)
			case processes:
				pods = fmt.Sprintf("Pods of ko:// images and of --local-image run as processes on node ferry-programs,\n"+
					"NOT isolated (%v). What does not hold:\n%s\nThe others are simulated by kwok.", notIsolated, caveats)
			}
			fmt.Fprintf(out, "Starting the local cluster in %s ...\n", dataDir)
			cluster, err := startLocalCluster(ctx, localClusterOptions{dataDir: dataDir, port: port,
				localImages: localImages, programs: programsErr == nil, programProcesses: processes})
			if err != nil {
				return err
			}
			defer cluster.Stop()
			if host := cluster.PodHostAddr(); host != "" {
				pods += fmt.Sprintf("\nPods reach Services, cluster DNS and the API server as on a cluster; this host is %s from them.", host)
			}
			// Knative's ConfigMaps (config-domain, ...) go in ferry-system, with their
			// _example blocks as kubectl apply -k config/ installs them on a real cluster:
			// kubectl edit finds them. Before Ferry starts, with --cluster-only too.
			if err := ensureNamespace(ctx, cluster.RESTConfig(), config.SystemNamespace); err != nil {
				return err
			}
			if err := ensureConfigMaps(ctx, cluster.RESTConfig()); err != nil {
				return err
			}
			if clusterOnly {
				printClusterOnly(out, time.Since(start), dataDir, cluster.KubeconfigPath(), externalAddr, localAddr, domain, programsErr == nil, pods)
				<-ctx.Done()
				fmt.Fprintln(out, "Stopping ...")
				return cluster.Stop()
			}

			logFile, err := os.OpenFile(filepath.Join(dataDir, "ferry.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				return err
			}
			defer logFile.Close()
			// Pods in namespaces of their own reach the cluster-local listener at the
			// host's address for them, through the Service that Routes' placeholders name.
			var localAddrForPods string
			if host := cluster.PodHostAddr(); host != "" {
				localAddrForPods = net.JoinHostPort(host, "0")
			}
			ferry, err := startFerry(ctx, cluster, inProcessOptions{log: logFile, reconciler: reconciler.Options{Overrides: config.Overrides{Domain: domain}},
				inProgressLimit: inProgressLimit, gatewayAddr: externalAddr, gatewayLocalAddr: localAddr, gatewayHTTPSAddr: httpsAddr,
				gatewayLocalAddrForPods: localAddrForPods,
				localCADir:              dataDir, pprofAddr: pprofAddr, leaseNamespace: config.SystemNamespace, programs: programsErr == nil})
			switch {
			case ctx.Err() != nil: // Ctrl-C while Ferry started
				fmt.Fprintln(out, "Stopping ...")
				return cluster.Stop()
			case err != nil:
				return fmt.Errorf("%w (is another ferry up running? --gateway-addr, --gateway-local-addr, --gateway-https-addr and --pprof-addr pick other ports)", err)
			}

			cluster.DrainWith(ferry.Gateway.InFlightTo)
			if addr := ferry.Gateway.LocalAddrForPods(); addr != "" {
				_, port, _ := net.SplitHostPort(addr)
				p, _ := strconv.Atoi(port)
				if err := cluster.ServeToPods(ctx, config.SystemNamespace, gatewayLocalService, p); err != nil {
					_ = ferry.Stop()
					return fmt.Errorf("the gateway's Service for pods: %w", err)
				}
			}
			dashboardURL, err := serveDashboard(ferry, cluster.RESTConfig(), dashboardAddr, cmd.ErrOrStderr())
			if err != nil {
				_ = ferry.Stop()
				return fmt.Errorf("%w (--dashboard-addr picks another port, 0 none)", err)
			}
			gw := ferry.Gateway.ExternalAddr()
			fmt.Fprintf(out, `Ferry is up (%.1fs). Logs: %s, %s

  export KUBECONFIG=%s
  kubectl apply -f config/samples/hello-world.yaml
  kubectl get ksvc
  curl -H 'Host: hello.default.example.com' http://%s

Gateway: %s (external), %s (cluster-local), %s (HTTPS, with external-domain-tls:
Enabled in config-network; trust %s).
%s
%sCtrl-C stops it.
`, time.Since(start).Seconds(), filepath.Join(dataDir, "control-plane.log"), logFile.Name(),
				cluster.KubeconfigPath(), gw, gw, ferry.Gateway.LocalAddr(), ferry.Gateway.HTTPSAddr(), filepath.Join(dataDir, localca.CertFile), pods, dashboardURL)
			<-ferry.Context().Done()
			fmt.Fprintln(out, "Stopping ...")
			if err := ferry.Stop(); err != nil {
				return err
			}
			return cluster.Stop()
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "where the cluster keeps its state and kubeconfig (default ~/.ferry)")
	cmd.Flags().IntVar(&port, "port", 0, "kube-apiserver port on 127.0.0.1 (default: a free one)")
	cmd.Flags().StringVar(&externalAddr, "gateway-addr", "127.0.0.1:8080", "the gateway's external listener")
	cmd.Flags().StringVar(&localAddr, "gateway-local-addr", "127.0.0.1:8081", "the gateway's cluster-local listener")
	cmd.Flags().StringVar(&httpsAddr, "gateway-https-addr", "127.0.0.1:8443", "the gateway's HTTPS listener: KIngress spec.tls, certificates from the local CA (<data-dir>/ca.crt)")
	cmd.Flags().StringVar(&domain, "domain", "", "the domain of every external Route URL, overriding config-domain (default: config-domain in ferry-system, else example.com)")
	cmd.Flags().IntVar(&inProgressLimit, "admission-in-progress-limit", 0, inProgressLimitUsage)
	cmd.Flags().StringVar(&pprofAddr, "pprof-addr", "0", "where Go's profiles of the whole process are served (/debug/pprof/); 0 turns them off")
	cmd.Flags().StringArrayVar(&localImages, "local-image", nil, "IMAGE=EXECUTABLE: containers of this image (as written in the Revision) run EXECUTABLE, a path or ko://IMPORT/PATH (repeatable; see --program-isolation)")
	cmd.Flags().StringVar(&isolation, "program-isolation", "auto", "how node ferry-programs runs pods: runc (a runc container and network namespace each: Linux, root, runc), none (plain processes of the host, each with its own PORT, without isolation: what does not hold is printed at start-up), or auto (runc where it can run, else none)")
	cmd.Flags().StringVar(&dashboardAddr, "dashboard-addr", defaultDashboardAddr, "where the web dashboard is served (docs/dashboard.md); 0 turns it off")
	cmd.Flags().BoolVar(&clusterOnly, "cluster-only", false, "run the cluster with Ferry's CRDs but not Ferry: print how to start ferry controller and ferry gateway against it")
	return cmd
}

// printClusterOnly tells how to run Ferry's components against a cluster started with
// --cluster-only, with the addresses and domain given to ferry up, and metrics and
// health ports that do not clash on one host.
func printClusterOnly(out io.Writer, took time.Duration, dataDir, kubeconfig, externalAddr, localAddr, domain string, programs bool, programPods string) {
	ferry := os.Args[0]
	controllerDomain := ""
	if domain != "" {
		controllerDomain = " --domain " + domain
	}
	host := "hello.default." + cmp.Or(domain, "example.com")
	simulated, pods := " --simulated-pods", "Pods are simulated by kwok."
	if programs {
		// The gateway tells kwok's pods by their node and dials the program node's.
		simulated, pods = "", programPods
	}
	fmt.Fprintf(out, `The local cluster is up (%.1fs), without Ferry. Log: %s

  export KUBECONFIG=%s

Start Ferry's components against it, each in its own terminal:

  %s controller --kubeconfig %s \
      --metrics-addr 127.0.0.1:9090 --health-addr 127.0.0.1:8082 --stats-addr 127.0.0.1:8084%s
  %s gateway --kubeconfig %s --addr %s --local-addr %s%s \
      --metrics-addr 127.0.0.1:9091 --health-addr 127.0.0.1:8083 --autoscaler 127.0.0.1:8084

then:

  kubectl apply -f config/samples/hello-world.yaml
  curl -H 'Host: %s' http://%s
  %s dashboard --kubeconfig %s

No admission webhooks: objects are neither validated nor defaulted. %s
Ctrl-C stops it.
`, took.Seconds(), filepath.Join(dataDir, "control-plane.log"), kubeconfig,
		ferry, kubeconfig, controllerDomain, ferry, kubeconfig, externalAddr, localAddr, simulated, host, externalAddr, ferry, kubeconfig, pods)
}

// serveDashboard serves the dashboard on addr for as long as ferry runs, with the
// autoscaler's numbers read in-process, and says where ("" for addr 0).
func serveDashboard(ferry *inProcessFerry, cfg *rest.Config, addr string, warn io.Writer) (string, error) {
	if addr == "0" {
		return "", nil
	}
	d, err := dashboard.New(cfg, "", ferry.Numbers())
	if err != nil {
		return "", err
	}
	ln, err := listenDashboard(addr, warn)
	if err != nil {
		return "", err
	}
	go func() {
		if err := d.Serve(ferry.Context(), ln); err != nil {
			fmt.Fprintln(warn, "ferry: the dashboard stopped:", err)
		}
	}()
	return fmt.Sprintf("Dashboard: http://%s/\n", ln.Addr()), nil
}
