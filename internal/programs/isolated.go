package programs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ferry-serving/ferry/internal/clusternet"
)

// isolated is the runtime of a node that isolates pods: each pod gets a network
// namespace of its own (network.go) with its /etc files and volumes (volumes.go), and
// each run of a container is a runc container (runc.go) in it, from a bundle under the
// pod's directory.
type isolated struct {
	runc    *runc
	network *network
	client  kubernetes.Interface
	// cgroupParent holds the containers' cgroups: the node's prefix, so that two
	// ferry ups on one machine never share one.
	cgroupParent string

	mu      sync.Mutex
	bundles map[string]string // a run's id → its bundle directory
}

var _ runtime = (*isolated)(nil)

// newIsolated is the runtime of runc containers in the node's network, after removing
// what a crashed run of the same state directory left.
func newIsolated(ctx context.Context, r *runc, plan clusternet.Plan, client kubernetes.Interface) (*isolated, error) {
	if err := r.removeStale(ctx); err != nil {
		return nil, err
	}
	return &isolated{runc: r, network: newNetwork(plan), client: client, cgroupParent: plan.Prefix, bundles: map[string]string{}}, nil
}

func (i *isolated) idScheme() string { return "runc://" }

func (i *isolated) close() {
	i.network.close()
	removeCgroupParent(cgroupRoot, i.cgroupParent)
}

// cgroupRoot is where the machine's cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// removeCgroupParent removes the cgroup that runc made, in each hierarchy under root
// (cgroup v1's one per controller, or v2's one), to hold the containers' cgroups:
// runc removes a container's own cgroup with it but leaves the parent, one per data
// directory and hierarchy, for good. rmdir takes only a cgroup with nothing left in
// it.
func removeCgroupParent(root, parent string) {
	dirs, _ := filepath.Glob(filepath.Join(root, "*", parent))
	for _, d := range append(dirs, filepath.Join(root, parent)) {
		_ = os.Remove(d)
	}
}

func (i *isolated) sandbox(ctx context.Context, pod *corev1.Pod, dir string) (*sandbox, error) {
	sb, err := i.network.create()
	if err != nil {
		return nil, fmt.Errorf("pod network: %w", err)
	}
	if err := podFiles(ctx, i.client, pod, sb.ip.String(), dir, clusternet.DNSClusterIP, nodeCapacity()); err != nil {
		i.network.remove(sb)
		return nil, err
	}
	return sb, nil
}

func (i *isolated) release(_ context.Context, sb *sandbox) { i.network.remove(sb) }

func (i *isolated) start(c containerStart) (*exec.Cmd, error) {
	mounts, err := containerMounts(c.container, c.dir, podVolumes(c.pod, c.dir))
	if err != nil {
		return nil, err
	}
	bundle := filepath.Join(c.dir, "containers", c.id)
	if err := os.MkdirAll(bundle, 0o700); err != nil {
		return nil, err
	}
	spec := ociSpec(containerConfig{pod: c.pod, container: c.container, program: c.program, env: c.env, rootfs: filepath.Join(bundle, "rootfs"),
		netns: c.sandbox.netnsPath(), cgroupPath: "/" + i.cgroupParent + "/" + c.id, mounts: mounts})
	cmd, err := i.runc.start(c.id, bundle, spec, c.stdout, c.stderr)
	if err == nil {
		i.mu.Lock()
		i.bundles[c.id] = bundle
		i.mu.Unlock()
	}
	return cmd, err
}

func (i *isolated) kill(ctx context.Context, id string, sig syscall.Signal) error {
	return i.runc.kill(ctx, id, sig)
}

// remove deletes the run's container and its root's mount points; its bundle's
// config.json stays with the pod's directory.
func (i *isolated) remove(ctx context.Context, id string) error {
	err := i.runc.remove(ctx, id)
	i.mu.Lock()
	bundle, ok := i.bundles[id]
	delete(i.bundles, id)
	i.mu.Unlock()
	if ok {
		_ = os.RemoveAll(filepath.Join(bundle, "rootfs"))
	}
	return err
}

func (i *isolated) command(ctx context.Context, id string, args []string, tty bool) (*exec.Cmd, error) {
	return i.runc.command(ctx, id, args, tty)
}
