package programs

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	goruntime "runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// joinNode makes the pod's namespace name and joins it to the node's namespace, with
// the pod's address ip and the node's end at gw, as these would:
//
//	ip netns add POD
//	ip -n NODE link add POD type veth peer name eth0 netns POD
//	ip -n POD link set lo up
//	ip -n POD addr add IP/32 dev eth0
//	ip -n POD link set eth0 up
//	ip -n POD route add GW dev eth0
//	ip -n POD route add default via GW
//	ip -n NODE addr add GW/32 dev POD
//	ip -n NODE link set POD up
//	ip -n NODE route add IP/32 dev POD src GW
func joinNode(name string, ip, gw netip.Addr, nodeName string) error {
	podNS, err := newNamespace(name)
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", name, err)
	}
	defer podNS.Close()
	nodeNS, err := netns.GetFromName(nodeName)
	if err != nil {
		return fmt.Errorf("the node's network namespace: %w", err)
	}
	defer nodeNS.Close()
	pod, err := netlink.NewHandleAt(podNS)
	if err != nil {
		return err
	}
	defer pod.Close()
	node, err := netlink.NewHandleAt(nodeNS)
	if err != nil {
		return err
	}
	defer node.Close()

	veth := name // the node's end; interface names are at most 15 characters: prefix (7) + 8
	if err := node.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: veth}, PeerName: "eth0", PeerNamespace: netlink.NsFd(podNS)}); err != nil {
		return fmt.Errorf("veth pair %s: %w", veth, err)
	}
	podIP, gwIP := host(ip), host(gw)
	lo, err := pod.LinkByName("lo")
	if err != nil {
		return err
	}
	eth0, err := pod.LinkByName("eth0")
	if err != nil {
		return err
	}
	nodeEnd, err := node.LinkByName(veth)
	if err != nil {
		return err
	}
	steps := []struct {
		what string
		do   func() error
	}{
		{"lo up", func() error { return pod.LinkSetUp(lo) }},
		{"eth0's address", func() error { return pod.AddrAdd(eth0, &netlink.Addr{IPNet: podIP}) }},
		{"eth0 up", func() error { return pod.LinkSetUp(eth0) }},
		{"the route to the node", func() error {
			return pod.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Dst: gwIP, Scope: netlink.SCOPE_LINK})
		}},
		{"the default route", func() error { return pod.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: gwIP.IP}) }},
		{"the node's address", func() error { return node.AddrAdd(nodeEnd, &netlink.Addr{IPNet: gwIP}) }},
		{"the node's end up", func() error { return node.LinkSetUp(nodeEnd) }},
		{"the node's route to the pod", func() error {
			return node.RouteAdd(&netlink.Route{LinkIndex: nodeEnd.Attrs().Index, Dst: podIP, Scope: netlink.SCOPE_LINK, Src: gwIP.IP})
		}},
	}
	for _, step := range steps {
		if err := step.do(); err != nil {
			return fmt.Errorf("pod network %s: %s: %w", name, step.what, err)
		}
	}
	return nil
}

// host is ip as a /32.
func host(ip netip.Addr) *net.IPNet {
	return &net.IPNet{IP: net.IP(ip.AsSlice()), Mask: net.CIDRMask(32, 32)}
}

// newNamespace makes the named network namespace (as `ip netns add` does) from an OS
// thread of its own, which unshares into it and then comes back: a thread that cannot
// come back ends with its goroutine, rather than carrying the pod's namespace into
// other goroutines.
func newNamespace(name string) (netns.NsHandle, error) {
	type result struct {
		ns  netns.NsHandle
		err error
	}
	done := make(chan result, 1)
	go func() {
		goruntime.LockOSThread()
		own, err := netns.Get()
		if err != nil {
			goruntime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		defer own.Close()
		ns, err := netns.NewNamed(name)
		if back := netns.Set(own); back != nil {
			done <- result{ns: ns, err: errors.Join(err, back)} // the thread stays locked, and goes
			return
		}
		goruntime.UnlockOSThread()
		done <- result{ns: ns, err: err}
	}()
	r := <-done
	if r.err != nil && r.ns.IsOpen() {
		r.ns.Close()
	}
	return r.ns, r.err
}

// deleteNamespace deletes the named network namespace, as `ip netns delete` does,
// which takes its veth pair and the node's route to it with it.
func deleteNamespace(name string) error { return netns.DeleteNamed(name) }
