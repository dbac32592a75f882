package programs

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
)

// network gives each pod a network namespace of its own, joined to the host by a veth
// pair: the pod's end is eth0 with the pod's IP, the host's end routes that one IP, and
// the pod's default route goes through the host (the node's gateway address). The
// host reaches every pod at its IP, as a node does on a cluster, and pods of one
// Revision may all listen on :8080.
//
// It drives iproute2's `ip` rather than netlink from Go: setting up a namespace from
// Go means moving a locked OS thread into it, and the commands are few and rare (one
// pod start each).
type network struct {
	// prefix names this node's namespaces and host interfaces, so that a start can
	// remove what an earlier run of the same data directory left behind.
	prefix  string
	gateway netip.Addr
	cidr    netip.Prefix

	mu   sync.Mutex
	used map[netip.Addr]bool
}

func newNetwork(prefix string, cidr netip.Prefix) *network {
	return &network{prefix: prefix, cidr: cidr, gateway: cidr.Addr().Next(), used: map[netip.Addr]bool{}}
}

// sandbox is one pod's network namespace.
type sandbox struct {
	name string // the namespace's, under /var/run/netns
	ip   netip.Addr
}

func (s *sandbox) path() string { return "/var/run/netns/" + s.name }

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
	s := &sandbox{name: n.prefix + id, ip: ip}
	host := s.name // interface names are at most 15 characters: prefix (6) + 8
	gw := n.gateway.String()
	steps := [][]string{
		{"netns", "add", s.name},
		{"link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", s.name},
		{"-n", s.name, "link", "set", "lo", "up"},
		{"-n", s.name, "addr", "add", ip.String() + "/32", "dev", "eth0"},
		{"-n", s.name, "link", "set", "eth0", "up"},
		{"-n", s.name, "route", "add", gw, "dev", "eth0"},
		{"-n", s.name, "route", "add", "default", "via", gw},
		{"addr", "add", gw + "/32", "dev", host},
		{"link", "set", host, "up"},
		{"route", "add", ip.String() + "/32", "dev", host, "src", gw},
	}
	for _, args := range steps {
		if err := ipCommand(ctx, args...); err != nil {
			n.remove(context.WithoutCancel(ctx), s)
			return nil, err
		}
	}
	return s, nil
}

// remove deletes a pod's namespace, which takes its veth pair and route with it.
func (n *network) remove(ctx context.Context, s *sandbox) {
	_ = ipCommand(ctx, "netns", "delete", s.name)
	n.mu.Lock()
	delete(n.used, s.ip)
	n.mu.Unlock()
}

// removeStale deletes the namespaces that an earlier run of this node left.
func (n *network) removeStale(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	if err != nil {
		return fmt.Errorf("ip netns list: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		if strings.HasPrefix(name, n.prefix) {
			_ = ipCommand(ctx, "netns", "delete", name)
		}
	}
	return nil
}

func (n *network) allocate() (netip.Addr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ip := n.gateway.Next(); n.cidr.Contains(ip); ip = ip.Next() {
		if !n.used[ip] && n.cidr.Contains(ip.Next()) { // not the broadcast address
			n.used[ip] = true
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no pod address left in %s", n.cidr)
}

func ipCommand(ctx context.Context, args ...string) error {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
