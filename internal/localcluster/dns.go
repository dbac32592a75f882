package localcluster

import (
	"fmt"
	"io"
	golog "log"
	"net"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"

	// The plugins the Corefile names; CoreDNS registers a plugin by its import.
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/kubernetes"

	"github.com/ferry-serving/ferry/internal/clusternet"
)

// corefile is the CoreDNS configuration of the node of plan p: what kubeadm's default
// Corefile says (the cluster's zone from the API server, pods' A records as
// `pods insecure`, PTR records, everything else forwarded to the host's resolver, a
// 30 s cache), served on the host's address for pods, which the kube-dns Service's
// endpoints name.
func corefile(p clusternet.Plan, kubeconfig, hostResolvConf string) string {
	return fmt.Sprintf(`.:53 {
    bind %s
    errors
    kubernetes %s in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    forward . %s
    cache 30
}
`, p.HostAddr, clusternet.ClusterDomain, kubeconfig, hostResolvConf)
}

// clusterDNS is CoreDNS serving the cluster's names.
type clusterDNS struct{ instance *caddy.Instance }

// startDNS serves cluster DNS for the node of plan p on the host's address, port 53,
// TCP and UDP, from the API server kubeconfig reaches, forwarding other names to the
// resolvers of hostResolvConf (the host's /etc/resolv.conf). CoreDNS logs through Go's
// standard logger, which is the process's: its lines go to logs from now on, with the
// control plane's, rather than to ferry up's terminal.
func startDNS(p clusternet.Plan, kubeconfig, hostResolvConf string, logs io.Writer) (*clusterDNS, error) {
	dnsserver.Quiet = true // no banner on ferry up's terminal
	caddy.Quiet = true
	golog.SetOutput(logs)
	inst, err := caddy.Start(caddy.CaddyfileInput{Contents: []byte(corefile(p, kubeconfig, hostResolvConf)),
		Filepath: "Corefile", ServerTypeName: "dns"})
	if err != nil {
		return nil, fmt.Errorf("cluster DNS (CoreDNS) on %s: %w", net.JoinHostPort(p.HostAddr.String(), "53"), err)
	}
	return &clusterDNS{instance: inst}, nil
}

// Stop stops serving.
func (d *clusterDNS) Stop() { _ = d.instance.Stop() }
