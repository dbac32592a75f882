package localcluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	kubeproxy "k8s.io/kubernetes/cmd/kube-proxy/app"

	"github.com/ferry-serving/ferry/internal/clusternet"
)

// KubeProxyCommand is Kubernetes' kube-proxy command, which ferry up runs as a
// process of its own binary in the node's namespace: `ferry kube-proxy`.
func KubeProxyCommand() *cobra.Command {
	cmd := kubeproxy.NewProxyCommand()
	cmd.Use, cmd.Hidden = "kube-proxy", true
	return cmd
}

// kubeProxyHealthPort is where kube-proxy serves /healthz, on the node's address: the
// host waits there for its first sync of the rules.
const kubeProxyHealthPort = 10256

// kubeProxyArgs is kube-proxy's command line for the node of plan p, with the
// kubeconfig that reaches the API server at the host's address.
func kubeProxyArgs(p clusternet.Plan, nodeName, kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--proxy-mode=nftables",
		"--hostname-override=" + nodeName,
		// The node's primary IP; kube-proxy binds nothing to it.
		"--bind-address=" + p.NodeAddr.String(),
		"--cluster-cidr=" + p.PodCIDR.String(),
		"--healthz-bind-address=" + net.JoinHostPort(p.NodeAddr.String(), strconv.Itoa(kubeProxyHealthPort)),
		"--metrics-bind-address=127.0.0.1:10249",
		// Left as the host has them: the conntrack table is the machine's, not the node's.
		"--conntrack-max-per-core=0",
		"--conntrack-tcp-timeout-established=0",
		"--conntrack-tcp-timeout-close-wait=0",
		"--oom-score-adj=0",
		// Rules follow each Service and EndpointSlice change at once, as a pod that
		// starts calls its back end at once.
		"--iptables-min-sync-period=0",
	}
}

// runKubeProxy runs kube-proxy in the node's namespace until ctx ends, and returns once
// it has programmed its rules, or with why it could not. Its output goes to logs.
func runKubeProxy(ctx context.Context, p clusternet.Plan, nodeName, kubeconfig string, logs io.Writer) (done <-chan error, err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := append([]string{"netns", "exec", p.NodeNamespace(), self, "kube-proxy"}, kubeProxyArgs(p, nodeName, kubeconfig)...)
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.Stdout, cmd.Stderr = logs, logs
	// Killed, not asked: ferry's own main takes SIGTERM for its context, which
	// kube-proxy does not watch, and what it leaves goes with the node's namespace.
	cmd.WaitDelay = time.Second
	// ip execs kube-proxy in its place, which keeps this: it goes if ferry up dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting kube-proxy: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	health := "http://" + net.JoinHostPort(p.NodeAddr.String(), strconv.Itoa(kubeProxyHealthPort)) + "/healthz"
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-exited:
			return nil, fmt.Errorf("kube-proxy exited at start (its log is in control-plane.log): %v", err)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := http.Get(health); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return exited, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("kube-proxy did not sync its rules in 30 s (%s; its log is in control-plane.log)", health)
		}
	}
}
