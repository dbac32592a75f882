package clusternet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
)

// Supported says why this machine cannot give pods a cluster's network, or nil: the
// node's namespace and links need root and iproute2's ip, kube-proxy's rules need
// nftables' nft.
func Supported() error {
	for _, tool := range []struct{ name, pkg string }{{"ip", "iproute2"}, {"nft", "nftables"}} {
		if _, err := exec.LookPath(tool.name); err != nil {
			return fmt.Errorf("pod networking needs %s's %s (apt-get install %s): %w", tool.pkg, tool.name, tool.pkg, err)
		}
	}
	return nil
}

// SetUp makes the node's network namespace and its link to the host, removing first
// what an earlier run of the same plan left (its pods' namespaces too). The host gets
// routes to the pods and to ServiceCIDR through the node, and forwards nothing that
// comes from it; the node forwards, through kube-proxy's rules, which refuse a
// Service without a ready endpoint and drop what is sent to an address of ServiceCIDR
// that no Service has (a route of the node that refused ServiceCIDR would come first,
// before the forward hook where kube-proxy refuses).
func SetUp(ctx context.Context, p Plan) error {
	if err := lock(p); err != nil {
		return err
	}
	if err := RemoveStale(ctx, p); err != nil {
		unlock(p)
		return err
	}
	node, host, link := p.NodeNamespace(), p.hostLink(), p.nodeLink()
	hostAddr, nodeAddr := p.HostAddr.String(), p.NodeAddr.String()
	steps := [][]string{
		{"netns", "add", node},
		{"link", "add", host, "type", "veth", "peer", "name", link, "netns", node},
		{"-n", node, "link", "set", "lo", "up"},
		{"-n", node, "addr", "add", nodeAddr + "/32", "dev", link},
		{"-n", node, "link", "set", link, "up"},
		{"-n", node, "route", "add", hostAddr, "dev", link},
		{"-n", node, "route", "add", "default", "via", hostAddr},
		{"addr", "add", hostAddr + "/32", "dev", host},
		{"link", "set", host, "up"},
		{"route", "add", nodeAddr, "dev", host, "src", hostAddr},
		{"route", "add", p.PodCIDR.String(), "via", nodeAddr, "dev", host},
	}
	for _, args := range steps {
		if err := IP(ctx, args...); err != nil {
			_ = Remove(context.WithoutCancel(ctx), p)
			return err
		}
	}
	// The node routes between its pods and the host as a node does; the host itself
	// is left as it is.
	if err := sysctl(ctx, node, "net.ipv4.ip_forward=1", "net.ipv4.conf.all.rp_filter=0"); err != nil {
		_ = Remove(context.WithoutCancel(ctx), p)
		return err
	}
	// Nothing a pod sends is forwarded by the host, even where the host forwards
	// (ip_forward 1): a packet for an address outside the machine ends here.
	if err := os.WriteFile("/proc/sys/net/ipv4/conf/"+host+"/forwarding", []byte("0"), 0o644); err != nil {
		_ = Remove(context.WithoutCancel(ctx), p)
		return fmt.Errorf("turning off forwarding from the node: %w", err)
	}
	// The host reaches ClusterIPs through the node too, where kube-proxy's rules are.
	// A second ferry up on the machine finds the route taken: its pods still reach
	// their Services, the host reaches the first one's.
	if err := IP(ctx, "route", "add", ServiceCIDR.String(), "via", nodeAddr, "dev", host); err != nil && !strings.Contains(err.Error(), "File exists") {
		_ = Remove(context.WithoutCancel(ctx), p)
		return err
	}
	return nil
}

// Remove deletes the node's namespace, which takes the link, its routes and
// kube-proxy's rules with it.
func Remove(ctx context.Context, p Plan) error {
	defer unlock(p)
	return IP(ctx, "netns", "delete", p.NodeNamespace())
}

// RemoveStale deletes every namespace of this plan that an earlier run left, the
// node's and its pods', and those of other data directories' ferry ups that were
// killed (no process holds their lock, and their node's namespace has no process
// left), whose routes would hold the service CIDR's.
func RemoveStale(ctx context.Context, p Plan) error {
	out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	if err != nil {
		return fmt.Errorf("ip netns list: %w", err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		names = append(names, name)
	}
	stale := []string{p.Prefix}
	for _, name := range names {
		if prefix, ok := strings.CutSuffix(name, "node"); ok && nodeNamespace.MatchString(name) && prefix != p.Prefix && !inUse(prefix) && empty(ctx, name) {
			stale = append(stale, prefix)
		}
	}
	var errs []error
	for _, name := range names {
		for _, prefix := range stale {
			if strings.HasPrefix(name, prefix) && (prefix == p.Prefix || empty(ctx, name)) {
				errs = append(errs, IP(ctx, "netns", "delete", name))
			}
		}
	}
	return errors.Join(errs...)
}

// nodeNamespace is the name of any plan's node namespace.
var nodeNamespace = regexp.MustCompile(`^fp[0-9a-f]{4}-node$`)

// empty says whether no process is in the namespace name.
func empty(ctx context.Context, name string) bool {
	out, err := exec.CommandContext(ctx, "ip", "netns", "pids", name).Output()
	return err == nil && len(strings.TrimSpace(string(out))) == 0
}

// IP runs iproute2's ip with args.
func IP(ctx context.Context, args ...string) error {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// sysctl sets kernel settings of the namespace ns.
func sysctl(ctx context.Context, ns string, settings ...string) error {
	return IP(ctx, append([]string{"netns", "exec", ns, "sysctl", "-qw"}, settings...)...)
}
