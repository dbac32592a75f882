package programs

import (
	"fmt"
	"net/netip"
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
// Nothing of a namespace depends on its pod, so one is kept spare, made before a pod
// asks for it and made again as soon as one takes it: a cold start finds its network
// ready. The spare is named with the node's prefix like the pods', so that the next
// ferry up removes it if this one is killed (clusternet.RemoveStale).
//
// It talks netlink from Go (network_linux.go: vishvananda/netlink, as CNI's plugins
// do) rather than running iproute2's `ip`: a pod's namespace is on the way of every
// cold start that finds no spare, and ten `ip` processes are ten forks and execs
// (docs/programs.md, "Cold start", has what each cost).
type network struct {
	plan  clusternet.Plan
	wake  chan struct{} // the spare was taken
	stop  chan struct{} // close has begun
	ended chan struct{} // the keeper has returned

	mu    sync.Mutex
	used  map[netip.Addr]bool
	seq   uint32   // names the namespaces
	spare *sandbox // nil while being made
}

// newNetwork is the pods' network of plan, which starts making a spare namespace; close
// removes it.
func newNetwork(plan clusternet.Plan) *network {
	n := &network{plan: plan, used: map[netip.Addr]bool{}, wake: make(chan struct{}, 1), stop: make(chan struct{}), ended: make(chan struct{})}
	n.wake <- struct{}{}
	go n.keep()
	return n
}

// keep makes a spare whenever there is none, until close.
func (n *network) keep() {
	defer close(n.ended)
	for {
		select {
		case <-n.stop:
			return
		case <-n.wake:
		}
		s, err := n.make()
		if err != nil {
			continue // the next pod makes its own, and says why if it fails too
		}
		n.mu.Lock()
		n.spare = s
		n.mu.Unlock()
	}
}

// close removes the spare namespace, once none is being made.
func (n *network) close() {
	close(n.stop)
	<-n.ended
	n.mu.Lock()
	s := n.spare
	n.spare = nil
	n.mu.Unlock()
	if s != nil {
		n.remove(s)
	}
}

// create is a namespace for a pod, with an address of its own: the spare if there is
// one, else one made now.
func (n *network) create() (*sandbox, error) {
	n.mu.Lock()
	s := n.spare
	n.spare = nil
	n.mu.Unlock()
	if s == nil {
		return n.make()
	}
	select {
	case n.wake <- struct{}{}:
	default:
	}
	return s, nil
}

// make makes a namespace with an address of its own.
func (n *network) make() (*sandbox, error) {
	n.mu.Lock()
	ip, err := n.allocate()
	n.seq++
	name := fmt.Sprintf("%s%08x", n.plan.Prefix, n.seq) // interface names are at most 15 characters: prefix (7) + 8
	n.mu.Unlock()
	if err != nil {
		return nil, err
	}
	s := &sandbox{netns: name, ip: ip}
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

// allocate takes the first free address of the node's /24; n.mu held.
func (n *network) allocate() (netip.Addr, error) {
	cidr := n.plan.PodCIDR
	for ip := n.plan.PodGateway.Next(); cidr.Contains(ip); ip = ip.Next() {
		if !n.used[ip] && cidr.Contains(ip.Next()) { // not the broadcast address
			n.used[ip] = true
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no pod address left in %s", cidr)
}
