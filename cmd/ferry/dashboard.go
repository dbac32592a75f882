package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ferry-serving/ferry/internal/dashboard"
)

// defaultDashboardAddr is where ferry up and ferry dashboard serve the dashboard.
const defaultDashboardAddr = "127.0.0.1:8090"

func newDashboardCommand() *cobra.Command {
	var kubeconfig, kubeContext, namespace, addr, numbersURL string
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve Ferry's web dashboard for the cluster of your kubeconfig, read-only",
		Long: `Serve the dashboard (docs/dashboard.md): every Knative Service by namespace, Ready or
why not, its traffic split over time, and a Revision's autoscaler at work, live.

Like kubectl proxy, it reads the cluster with your kubeconfig's credentials and
grants nothing more: whoever reaches its address reads what you may read. It never
writes. It listens on loopback unless --addr says otherwise. With --namespace it
watches that namespace only, for credentials that may read no other.

A Revision's autoscaler numbers come from the controller that leads, on its metrics
listener (--autoscaler-url): ferry controller's --metrics-addr as a URL, or on a
cluster the API server's proxy to the leader's pod port 9090, e.g.
https://API-SERVER/api/v1/namespaces/ferry-system/pods/POD:9090/proxy (a URL on the
kubeconfig's server is asked with its credentials).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = kubeconfig
			cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
			if err != nil {
				return fmt.Errorf("dashboard: reading the kubeconfig: %w", err)
			}
			numbers, err := numbersFrom(numbersURL, cfg)
			if err != nil {
				return err
			}
			d, err := dashboard.New(cfg, namespace, numbers)
			if err != nil {
				return err
			}
			ln, err := listenDashboard(addr, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Dashboard: http://%s/ (cluster %s). Ctrl-C stops it.\n", ln.Addr(), cfg.Host)
			return d.Serve(cmd.Context(), ln)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig to use (default: $KUBECONFIG, else ~/.kube/config)")
	fl.StringVar(&kubeContext, "context", "", "the kubeconfig context to use")
	fl.StringVarP(&namespace, "namespace", "n", "", "show this namespace only (default: every namespace), for credentials that may read no more")
	fl.StringVar(&addr, "addr", defaultDashboardAddr, "where to serve the dashboard; an address other than loopback lets others read the cluster with your credentials")
	fl.StringVar(&numbersURL, "autoscaler-url", "http://127.0.0.1:9090", "the leading controller's metrics listener, for a Revision's autoscaler numbers")
	return cmd
}

// numbersFrom asks the controller at u; a URL on the API server goes with the
// kubeconfig's credentials, read-only like the rest of the dashboard.
func numbersFrom(u string, cfg *rest.Config) (dashboard.NumbersSource, error) {
	parsed, err := url.Parse(u)
	if err != nil || parsed.Host == "" {
		return nil, fmt.Errorf("dashboard: --autoscaler-url %q: want a URL such as http://127.0.0.1:9090", u)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	if server, err := url.Parse(cfg.Host); err == nil && server.Host == parsed.Host {
		if client, err = rest.HTTPClientFor(cfg); err != nil {
			return nil, err
		}
		client.Timeout = 5 * time.Second
	}
	return dashboard.FromURL(u, client), nil
}

// listenDashboard binds addr and warns when it is not loopback: whoever reaches the
// dashboard reads the cluster with the credentials it runs with.
func listenDashboard(addr string, warn io.Writer) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		fmt.Fprintf(warn, "Warning: the dashboard listens on %s, not on loopback: anyone who reaches it reads the cluster with these credentials.\n", ln.Addr())
	}
	return ln, nil
}
