package programs

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"

	"github.com/ferry-serving/ferry/internal/clusternet"
)

// network gives each pod a network namespace of its own, joined to the node's
// namespace (clusternet) by a veth pair: the pod's end is eth0 with the pod's IP, the
// node's end routes that one IP, and the pod's default route goes through the node,
// which forwards to the host, to other pods, and through kube-proxy's rules to
// Services. The host reaches every pod at its IP, as a node does on a cluster, and
// pods of one Revision may all listen on :8080.
//
// It talks netlink from Go (network_linux.go: vishvananda/netlink, as CNI's plugins
// do) rather than running iproute2's `ip`: a pod's namespace is on the way of every
// cold start, and ten `ip` processes are ten forks and execs (docs/programs.md, "Cold
// start", has what each cost).
type network struct {
	plan clusternet.Plan

	mu   sync.Mutex
	used map[netip.Addr]bool
}

func newNetwork(plan clusternet.Plan) *network {
	return &network{plan: plan, used: map[netip.Addr]bool{}}
}

// create makes the namespace of the pod with uid, with an address of its own.
func (n *network) create(uid string) (*sandbox, error) {
	ip, err := n.allocate()
	if err != nil {
		return nil, err
	}
	id := strings.ReplaceAll(uid, "-", "")
	if len(id) > 8 {
		id = id[:8]
	}
	s := &sandbox{netns: n.plan.Prefix + id, ip: ip}
	if err := joinNode(s.netns, ip, n.plan.PodGateway, n.plan.NodeNamespace()); err != nil {
		n.remove(s)
		return nil, err
	}
	return s, nil
}

// remove deletes a pod's namespace, which takes its veth pair and route with it.
func (n *network) remove(s *sandbox) {
	_ = deleteNamespace(s.netns)
	n.mu.Lock()
	delete(n.used, s.ip)
	n.mu.Unlock()
}

func (n *network) allocate() (netip.Addr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	cidr := n.plan.PodCIDR
	for ip := n.plan.PodGateway.Next(); cidr.Contains(ip); ip = ip.Next() {
		if !n.used[ip] && cidr.Contains(ip.Next()) { // not the broadcast address
			n.used[ip] = true
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no pod address left in %s", cidr)
}
