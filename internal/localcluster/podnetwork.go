package localcluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/ferry-serving/ferry/internal/clusternet"
	"github.com/ferry-serving/ferry/internal/programs"
)

// hostResolvConf is where cluster DNS finds the resolvers for names outside the
// cluster, as CoreDNS's default Corefile forwards to the node's.
const hostResolvConf = "/etc/resolv.conf"

// startPodNetwork runs what gives the program node's pods a cluster's network: CoreDNS
// on the host's address for pods with the kube-dns Service leading there, and
// kube-proxy in the node's namespace, which the API server's kubernetes Service and
// every other Service reach through. It runs after the node has registered, since
// kube-proxy is healthy only once its Node exists, and returns once it is.
func (c *Cluster) startPodNetwork(ctx context.Context, cs kubernetes.Interface, logs io.Writer) error {
	p := *c.network
	// kube-proxy, in the node's namespace, reaches the API server at the host's address.
	cfg := rest.CopyConfig(c.restConfig)
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return err
	}
	cfg.Host = "https://" + net.JoinHostPort(p.HostAddr.String(), u.Port())
	nodeKubeconfig := filepath.Join(c.dir, "node.kubeconfig")
	if err := writeKubeconfig(nodeKubeconfig, cfg); err != nil {
		return err
	}
	dns, err := startDNS(p, c.kubeconfig, hostResolvConf, logs)
	if err != nil {
		return err
	}
	// CoreDNS's kubernetes plugin takes klog for its own log; the control plane's
	// logs go to their file again.
	klog.ClearLogger()
	silenceKlog(logs)
	c.closers = append(c.closers, dns.Stop)
	if err := clusternet.Publish(ctx, cs, p, clusternet.DNSService()); err != nil {
		return fmt.Errorf("cluster DNS: %w", err)
	}
	done, err := runKubeProxy(ctx, p, programs.NodeName, nodeKubeconfig, logs)
	if err != nil {
		return err
	}
	c.run(ctx, "kube-proxy", func() error { return <-done })
	return nil
}

// PodHostAddr is the host's address as the program node's pods reach it, "" when they
// share the host's network (plain processes) or there is no such node.
func (c *Cluster) PodHostAddr() string {
	if c.network == nil {
		return ""
	}
	return c.network.HostAddr.String()
}

// ServeToPods makes the Service namespace/name lead to port on PodHostAddr, as the
// Service of a listener of ferry up's own (Ferry's gateway) leads to it on a cluster.
func (c *Cluster) ServeToPods(ctx context.Context, namespace, name string, port int) error {
	if c.network == nil {
		return nil
	}
	cs, err := kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		return err
	}
	return clusternet.Publish(ctx, cs, *c.network, clusternet.HostService{Namespace: namespace, Name: name,
		Ports: []clusternet.HostPort{{Name: "http", Protocol: "TCP", Port: 80, Target: int32(port)}}})
}
