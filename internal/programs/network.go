package programs

import (
	"context"
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
// It drives iproute2's `ip` rather than netlink from Go: setting up a namespace from
// Go means moving a locked OS thread into it, and the commands are few and rare (one
// pod start each).
type network struct {
	plan clusternet.Plan

	mu   sync.Mutex
	used map[netip.Addr]bool
}

func newNetwork(plan clusternet.Plan) *network {
	return &network{plan: plan, used: map[netip.Addr]bool{}}
}

// create makes the namespace of the pod with uid, with an address of its own.
func (n *network) create(ctx context.Context, uid string) (*sandbox, error) {
	ip, err := n.allocate()
	if err != nil {
		return nil, err
	}
	id := strings.ReplaceAll(uid, "-", "")
	if len(id) > 8 {
		id = id[:8]
	}
	s := &sandbox{netns: n.plan.Prefix + id, ip: ip}
	node := n.plan.NodeNamespace()
	veth := s.netns // the node's end; interface names are at most 15 characters: prefix (7) + 8
	gw := n.plan.PodGateway.String()
	steps := [][]string{
		{"netns", "add", s.netns},
		{"-n", node, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", s.netns},
		{"-n", s.netns, "link", "set", "lo", "up"},
		{"-n", s.netns, "addr", "add", ip.String() + "/32", "dev", "eth0"},
		{"-n", s.netns, "link", "set", "eth0", "up"},
		{"-n", s.netns, "route", "add", gw, "dev", "eth0"},
		{"-n", s.netns, "route", "add", "default", "via", gw},
		{"-n", node, "addr", "add", gw + "/32", "dev", veth},
		{"-n", node, "link", "set", veth, "up"},
		{"-n", node, "route", "add", ip.String() + "/32", "dev", veth, "src", gw},
	}
	for _, args := range steps {
		if err := clusternet.IP(ctx, args...); err != nil {
			n.remove(context.WithoutCancel(ctx), s)
			return nil, err
		}
	}
	return s, nil
}

// remove deletes a pod's namespace, which takes its veth pair and route with it.
func (n *network) remove(ctx context.Context, s *sandbox) {
	_ = clusternet.IP(ctx, "netns", "delete", s.netns)
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
