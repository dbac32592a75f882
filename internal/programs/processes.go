package programs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// Isolation is what ferry up asks of the node (--program-isolation).
type Isolation string

const (
	// IsolationAuto runs pods in runc containers where Supported, else as processes.
	IsolationAuto Isolation = "auto"
	// IsolationRunc runs pods in runc containers, or not at all.
	IsolationRunc Isolation = "runc"
	// IsolationNone runs pods as plain processes of the host, even where runc could
	// run them.
	IsolationNone Isolation = "none"
)

// Mode is how the node runs pods on this machine.
type Mode struct {
	// Processes runs each container as a plain process of the host, without
	// isolation (the fallback), rather than in a runc container.
	Processes bool
	// NotIsolated says why pods are not isolated, when Processes.
	NotIsolated error
}

// ChooseMode says how the node runs pods for what was asked: in runc containers where
// Supported allows, else, unless runc was asked for, as processes where the machine can
// run them. An error says the node cannot run at all.
func ChooseMode(isolation Isolation, runcPath string) (Mode, error) {
	switch isolation {
	case IsolationAuto, "":
		err := Supported(runcPath)
		if err == nil {
			return Mode{}, nil
		}
		if perr := ProcessesSupported(); perr != nil {
			return Mode{}, fmt.Errorf("%w; %w", err, perr)
		}
		return Mode{Processes: true, NotIsolated: err}, nil
	case IsolationRunc:
		return Mode{}, Supported(runcPath)
	case IsolationNone:
		if err := ProcessesSupported(); err != nil {
			return Mode{}, err
		}
		return Mode{Processes: true, NotIsolated: errors.New("--program-isolation=none asks for it")}, nil
	}
	return Mode{}, fmt.Errorf("program isolation %q: want auto, runc or none", isolation)
}

// ProcessesSupported says why the node cannot run pods even as plain processes: only
// on Windows.
func ProcessesSupported() error {
	if goruntime.GOOS == "windows" {
		return errors.New("running programs needs Linux or macOS")
	}
	return nil
}

// ProcessesCaveats is what does not hold for a pod run as a plain process, as ferry up
// says it at start-up (docs/programs.md says more).
const ProcessesCaveats = `every pod is at 127.0.0.1 with its own PORT: a program that ignores PORT and
listens on a fixed port is never ready (two pods of it would collide anyway);
volumes are refused (the pod waits with NeedsIsolation); runAsUser, memory and CPU
limits, a read-only root and a private /dev are not applied: the programs run as
ferry up's user and see the host's files and processes; they share the host's
network, so Service ClusterIPs, cluster DNS and the in-cluster API server are not
reachable from them (docs/programs.md).`

// errPermanent marks what fails a pod for good: no retry can make it run.
var errPermanent = errors.New("permanent")

// serviceAccountDir is where the API server's ServiceAccount admission mounts every
// pod's token volume (kube-api-access-*), which no Revision asked for.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// unsupportedMounts lists the volumeMounts of pod that plain processes cannot have: all
// but the service account token that the API server adds to every pod.
func unsupportedMounts(pod *corev1.Pod) []string {
	var out []string
	for _, c := range pod.Spec.Containers {
		for _, vm := range c.VolumeMounts {
			if vm.MountPath == serviceAccountDir && strings.HasPrefix(vm.Name, "kube-api-access-") {
				continue
			}
			out = append(out, fmt.Sprintf("%s at %s (container %s)", vm.Name, vm.MountPath, c.Name))
		}
	}
	return out
}

// needsIsolationMessage is the pod's waiting message for mounts it cannot have.
func needsIsolationMessage(mounts []string) string {
	return fmt.Sprintf("volume %s: ferry up runs programs here as plain processes, which cannot mount volumes at their mountPath; "+
		"run ferry up as root on Linux with runc (--program-isolation=auto or runc), or remove the volumes", strings.Join(mounts, ", "))
}

// notApplied lists what pod's spec asks for that a plain process does not get, for an
// Event: the program runs regardless, as ferry up's user.
func notApplied(pod *corev1.Pod) []string {
	var out []string
	if sc := pod.Spec.SecurityContext; sc != nil && (sc.RunAsUser != nil || sc.RunAsGroup != nil) {
		out = append(out, "the pod's runAsUser/runAsGroup")
	}
	for _, c := range pod.Spec.Containers {
		if sc := c.SecurityContext; sc != nil {
			if sc.RunAsUser != nil || sc.RunAsGroup != nil {
				out = append(out, fmt.Sprintf("container %s's runAsUser/runAsGroup", c.Name))
			}
			if sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
				out = append(out, fmt.Sprintf("container %s's readOnlyRootFilesystem", c.Name))
			}
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceCPU} {
			if _, ok := c.Resources.Limits[r]; ok {
				out = append(out, fmt.Sprintf("container %s's %s limit", c.Name, r))
			}
		}
	}
	return out
}

// servingContainer is the index of pod's container that serves requests, the one with
// a port (Knative allows one), and that port; -1 if none has one.
func servingContainer(pod *corev1.Pod) (int, int32) {
	for i, c := range pod.Spec.Containers {
		if len(c.Ports) > 0 {
			return i, c.Ports[0].ContainerPort
		}
	}
	return -1, 0
}

// retarget makes a probe of the serving container check the port the node picked for
// it rather than the containerPort: a port given by number or by a name that resolves
// to from moves to to. It returns copies; ctr gets to as its first port's, so that the
// kubelet's prober resolves names to it.
func retarget(p *corev1.Probe, ctr *corev1.Container, from, to int32) (*corev1.Probe, *corev1.Container) {
	if p == nil {
		return nil, ctr
	}
	p, ctr = p.DeepCopy(), ctr.DeepCopy()
	for i, cp := range ctr.Ports {
		if cp.ContainerPort == from {
			ctr.Ports[i].ContainerPort = to
		}
	}
	move := func(port *int32) {
		if *port == from {
			*port = to
		}
	}
	h := &p.ProbeHandler
	switch {
	case h.HTTPGet != nil:
		if h.HTTPGet.Port.IntVal == from && h.HTTPGet.Port.StrVal == "" {
			h.HTTPGet.Port.IntVal = to
		}
	case h.TCPSocket != nil:
		if h.TCPSocket.Port.IntVal == from && h.TCPSocket.Port.StrVal == "" {
			h.TCPSocket.Port.IntVal = to
		}
	case h.GRPC != nil:
		move(&h.GRPC.Port)
	}
	return p, ctr
}

// processes runs each container as a plain child process of ferry up, in a process
// group of its own (so that a signal reaches what it started too), dying with ferry up
// on Linux. Each pod's serving container gets a port of its own in PORT.
type processes struct {
	mu    sync.Mutex
	ports map[int]bool
	procs map[string]*process
}

// process is one run of a container.
type process struct {
	cmd *exec.Cmd
	env []string
	dir string
}

func newProcesses() *processes {
	return &processes{ports: map[int]bool{}, procs: map[string]*process{}}
}

// allocatePort picks a port free on 127.0.0.1 and not given to another pod.
func (p *processes) allocatePort() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range 100 {
		port, err := freePort()
		if err != nil {
			return 0, err
		}
		if !p.ports[port] {
			p.ports[port] = true
			return port, nil
		}
	}
	return 0, errors.New("no free port on 127.0.0.1")
}

func (p *processes) releasePort(port int) {
	p.mu.Lock()
	delete(p.ports, port)
	p.mu.Unlock()
}

// processConfig is what a container's process is made of.
type processConfig struct {
	pod       *corev1.Pod
	container *corev1.Container
	program   Program
	// port, if not 0, is the container's PORT: the serving container's.
	port int
}

// processCommand is the container as a process: its argv (argv[0] /ko-app/<name> as
// in a container, the program's path on the host run), env and working directory.
func processCommand(c processConfig) (*exec.Cmd, error) {
	env := containerEnv(c.pod, c.container)
	if c.port != 0 {
		env["PORT"] = strconv.Itoa(c.port)
	}
	args := argv(c.container, c.program, env)
	path := c.program.Path
	if len(c.container.Command) > 0 && args[0] != c.program.InContainer() {
		var err error
		if path, err = lookPath(args[0], env["PATH"]); err != nil {
			return nil, err
		}
	}
	cmd := &exec.Cmd{Path: path, Args: args, Env: envList(env), Dir: cwd(c.container)}
	if info, err := os.Stat(cmd.Dir); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("workingDir %s is not a directory of this machine (programs run as plain processes here)", cmd.Dir)
	}
	return cmd, nil
}

// lookPath finds a command as the container's PATH would.
func lookPath(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		if err := checkExecutable(name); err != nil {
			return "", err
		}
		return name, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if p := filepath.Join(dir, name); checkExecutable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found in PATH %s", name, path)
}

// start runs a container's process; wait on the returned command.
func (p *processes) start(id string, c processConfig, stdout, stderr io.Writer) (*exec.Cmd, error) {
	cmd, err := processCommand(c)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = processAttr()
	// What the program started may hold its output open after it exits: Wait does
	// not wait for them longer than this (remove then kills them).
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.procs[id] = &process{cmd: cmd, env: cmd.Env, dir: cmd.Dir}
	p.mu.Unlock()
	return cmd, nil
}

func (p *processes) get(id string) *process {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.procs[id]
}

// kill signals the container's process group.
func (p *processes) kill(_ context.Context, id string, sig syscall.Signal) error {
	proc := p.get(id)
	if proc == nil {
		return fmt.Errorf("no process %s", id)
	}
	return syscall.Kill(-proc.cmd.Process.Pid, sig)
}

// remove kills what is left of the container's process group, once its process has
// exited, and forgets it.
func (p *processes) remove(ctx context.Context, id string) error {
	_ = p.kill(ctx, id, syscall.SIGKILL)
	p.mu.Lock()
	delete(p.procs, id)
	p.mu.Unlock()
	return nil
}

// command is args run as a process beside the container's, with its environment and
// working directory, in a process group of its own (a session, on a terminal, with
// tty: runOnTerminal starts it so).
func (p *processes) command(ctx context.Context, id string, args []string, _ bool) (*exec.Cmd, error) {
	proc := p.get(id)
	if proc == nil {
		return nil, fmt.Errorf("no process %s", id)
	}
	if len(args) == 0 {
		return nil, errors.New("no command")
	}
	env := map[string]string{}
	for _, kv := range proc.env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	path, err := lookPath(args[0], env["PATH"])
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, path, args[1:]...)
	cmd.Env, cmd.Dir = proc.env, proc.dir
	cmd.SysProcAttr = processAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	return cmd, nil
}

// start starts one run of a container: a runc container of bundle, or a process.
func (r *podRunner) start(c *containerRun, id, bundle string, stdout, stderr io.Writer) (*exec.Cmd, error) {
	if r.n.procs != nil {
		port := 0
		if len(c.spec.Ports) > 0 {
			r.mu.Lock()
			port = r.port
			r.mu.Unlock()
		}
		return r.n.procs.start(id, processConfig{pod: r.pod, container: c.spec, program: c.program, port: port}, stdout, stderr)
	}
	mounts, err := containerMounts(c.spec, r.dir, r.volumes())
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(bundle, 0o700); err != nil {
		return nil, err
	}
	r.mu.Lock()
	netns := r.sandbox.path()
	r.mu.Unlock()
	spec := ociSpec(containerConfig{pod: r.pod, container: c.spec, program: c.program, rootfs: filepath.Join(bundle, "rootfs"),
		netns: netns, cgroupPath: "/" + r.n.prefix + "/" + id, mounts: mounts})
	return r.n.runc.start(id, bundle, spec, stdout, stderr)
}

// makeProcessSandbox is makeSandbox for a node of processes: a pod with volumes fails
// for good, and the serving container gets a free port, recorded on the pod before it
// can be Ready so that the gateway dials it.
func (r *podRunner) makeProcessSandbox() error {
	if mounts := unsupportedMounts(r.pod); len(mounts) > 0 {
		msg := needsIsolationMessage(mounts)
		r.setAllWaiting(servingv1.ReasonNeedsIsolation, msg)
		r.n.event(r.snapshot(), corev1.EventTypeWarning, servingv1.ReasonNeedsIsolation, msg)
		return fmt.Errorf("%w: %s", errPermanent, msg)
	}
	r.mu.Lock()
	port := r.port
	r.mu.Unlock()
	if i, _ := servingContainer(r.pod); i >= 0 && port == 0 {
		var err error
		if port, err = r.n.procs.allocatePort(); err != nil {
			r.setAllWaiting("CreateContainerConfigError", err.Error())
			return err
		}
		r.mu.Lock()
		r.port = port
		if r.pod.Annotations == nil {
			r.pod.Annotations = map[string]string{}
		}
		// In every status update virtual-kubelet sends too: a status update writes
		// the pod's annotations as well, and would take it off again.
		r.pod.Annotations[servingv1.ServingPortAnnotationKey] = strconv.Itoa(port)
		r.mu.Unlock()
	}
	if port != 0 {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, servingv1.ServingPortAnnotationKey, strconv.Itoa(port))
		if _, err := r.n.client.CoreV1().Pods(r.pod.Namespace).Patch(r.ctx, r.pod.Name, types.MergePatchType, []byte(patch),
			metav1.PatchOptions{}); err != nil {
			r.setAllWaiting("CreateContainerConfigError", "recording the pod's port: "+err.Error())
			return err
		}
	}
	if unapplied := notApplied(r.pod); len(unapplied) > 0 {
		r.n.event(r.snapshot(), corev1.EventTypeWarning, "NotIsolated", "runs as a plain process of ferry up's user, without "+
			strings.Join(unapplied, ", ")+" (ferry up runs programs without isolation here: docs/programs.md)")
	}
	r.mu.Lock()
	r.sandbox = &sandbox{ip: netip.AddrFrom4([4]byte{127, 0, 0, 1})}
	r.phase = corev1.PodRunning
	r.mu.Unlock()
	return nil
}

// drainAddr is what the gateway's in-flight count for the pod is asked by: its IP, or
// IP:port where pods share the host's IP; r.mu held.
func (r *podRunner) drainAddr() string {
	ip := r.podIP()
	if ip == "" || r.port == 0 {
		return ip
	}
	return net.JoinHostPort(ip, strconv.Itoa(r.port))
}
