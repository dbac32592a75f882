package clusternet

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
)

// ClusterDomain is the cluster's DNS domain, as kubelets and CoreDNS are told it.
const ClusterDomain = "cluster.local"

// ServiceCIDR is the API server's --service-cluster-ip-range.
var ServiceCIDR = netip.MustParsePrefix("10.96.0.0/16")

// APIServerClusterIP is the kubernetes Service's ClusterIP: the first of ServiceCIDR,
// which the API server gives it.
var APIServerClusterIP = netip.MustParseAddr("10.96.0.1")

// DNSClusterIP is the kube-dns Service's ClusterIP, the tenth of ServiceCIDR as
// kubeadm picks it, and the nameserver of every pod's resolv.conf.
var DNSClusterIP = netip.MustParseAddr("10.96.0.10")

// Plan names the node's network namespace and interfaces and gives its addresses. One
// data directory has one plan, so a restart finds what an earlier run left; two data
// directories differ unless their hashes agree in three bytes.
type Plan struct {
	// Prefix starts the name of every namespace and host interface of this node.
	Prefix string
	// PodCIDR holds the pods' addresses; kube-proxy's --cluster-cidr.
	PodCIDR netip.Prefix
	// PodGateway is the pods' default route: the node's end of each pod's veth.
	PodGateway netip.Addr
	// HostAddr is the host's end of the link to the node: what pods reach the host at,
	// and where the host's listeners for pods listen.
	HostAddr netip.Addr
	// NodeAddr is the node's end of that link.
	NodeAddr netip.Addr
}

// PlanFor is the plan of the cluster kept in dataDir.
func PlanFor(dataDir string) Plan {
	sum := sha256.Sum256([]byte(dataDir))
	pods := netip.AddrFrom4([4]byte{10, 245, sum[2], 0})
	return Plan{
		Prefix:     "fp" + hex.EncodeToString(sum[:2])[:4] + "-",
		PodCIDR:    netip.PrefixFrom(pods, 24),
		PodGateway: pods.Next(),
		HostAddr:   netip.AddrFrom4([4]byte{10, 246, sum[2], 1}),
		NodeAddr:   netip.AddrFrom4([4]byte{10, 246, sum[2], 2}),
	}
}

// NodeNamespace is the node's network namespace, under /var/run/netns.
func (p Plan) NodeNamespace() string { return p.Prefix + "node" }

// hostLink is the host's end of the link to the node; nodeLink the node's.
func (p Plan) hostLink() string { return p.Prefix + "host" }
func (p Plan) nodeLink() string { return p.Prefix + "link" }
