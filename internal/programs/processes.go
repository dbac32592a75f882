package programs

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// serviceAccountDir is where the API server's ServiceAccount admission mounts every
// pod's token volume (kube-api-access-*), which no Revision asked for.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// unsupportedMounts lists the volumeMounts of pod that plain processes cannot have: all
// but the service account token that the API server adds to every pod.
func unsupportedMounts(pod *corev1.Pod) []string {
	var out []string
	for _, c := range podContainers(pod) {
		for _, vm := range c.VolumeMounts {
			if vm.MountPath == serviceAccountDir && strings.HasPrefix(vm.Name, "kube-api-access-") {
				continue
			}
			out = append(out, fmt.Sprintf("%s at %s (container %s)", vm.Name, vm.MountPath, c.Name))
		}
	}
	return out
}

// podContainers are the pod's init containers and containers.
func podContainers(pod *corev1.Pod) []corev1.Container {
	return append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...)
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
	for _, c := range podContainers(pod) {
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

// processes is the runtime of a node that does not isolate pods: each run of a
// container is a plain child process of ferry up, in a process group of its own (so
// that a signal reaches what it started too), dying with ferry up on Linux. Every pod
// is at 127.0.0.1, and its serving container gets a port of its own in PORT, recorded
// on the pod for the gateway (servingv1.ServingPortAnnotationKey).
type processes struct {
	client kubernetes.Interface
	events record.EventRecorder

	mu    sync.Mutex
	ports map[int]bool
	procs map[string]*process
}

var _ runtime = (*processes)(nil)

// process is one run of a container.
type process struct {
	cmd *exec.Cmd
	env []string
	dir string
}

func newProcesses(client kubernetes.Interface, events record.EventRecorder) *processes {
	return &processes{client: client, events: events, ports: map[int]bool{}, procs: map[string]*process{}}
}

func (p *processes) idScheme() string { return "process://" }

func (p *processes) close() {}

// sandbox refuses a pod with volumes for good, and gives the serving container a free
// port, recorded on the pod before it can be Ready so that the gateway dials it. An
// Event says what of the pod's spec a plain process does not get.
func (p *processes) sandbox(ctx context.Context, pod *corev1.Pod, _ string) (*sandbox, error) {
	if mounts := unsupportedMounts(pod); len(mounts) > 0 {
		return nil, &waitError{reason: servingv1.ReasonNeedsIsolation, err: errors.New(needsIsolationMessage(mounts)), permanent: true}
	}
	sb := &sandbox{ip: netip.AddrFrom4([4]byte{127, 0, 0, 1})}
	if i, _ := servingContainer(pod); i >= 0 {
		port, err := p.allocatePort()
		if err != nil {
			return nil, err
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, servingv1.ServingPortAnnotationKey, strconv.Itoa(port))
		if _, err := p.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, []byte(patch),
			metav1.PatchOptions{}); err != nil {
			p.releasePort(port)
			return nil, fmt.Errorf("recording the pod's port: %w", err)
		}
		sb.port = port
		sb.annotations = map[string]string{servingv1.ServingPortAnnotationKey: strconv.Itoa(port)}
	}
	if unapplied := notApplied(pod); len(unapplied) > 0 {
		p.events.Event(pod, corev1.EventTypeWarning, "NotIsolated", "runs as a plain process of ferry up's user, without "+
			strings.Join(unapplied, ", ")+" (ferry up runs programs without isolation here: docs/programs.md)")
	}
	return sb, nil
}

func (p *processes) release(_ context.Context, sb *sandbox) {
	if sb.port != 0 {
		p.releasePort(sb.port)
	}
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
	// env is the container's environment, resolved (env.go).
	env map[string]string
	// port, if not 0, is the container's PORT: the serving container's.
	port int
}

// processCommand is the container as a process: its argv (argv[0] /ko-app/<name> as
// in a container, the program's path on the host run), env and working directory.
func processCommand(c processConfig) (*exec.Cmd, error) {
	env := c.env
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

// start runs a container's process, the serving container's with the pod's port in
// PORT; wait on the returned command.
func (p *processes) start(c containerStart) (*exec.Cmd, error) {
	cfg := processConfig{pod: c.pod, container: c.container, program: c.program, env: c.env}
	if len(c.container.Ports) > 0 {
		cfg.port = c.sandbox.port
	}
	cmd, err := processCommand(cfg)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = c.stdout, c.stderr
	cmd.SysProcAttr = processAttr()
	// What the program started may hold its output open after it exits: Wait does
	// not wait for them longer than this (remove then kills them).
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.procs[c.id] = &process{cmd: cmd, env: cmd.Env, dir: cmd.Dir}
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
