package programs

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"syscall"

	corev1 "k8s.io/api/core/v1"
)

// runtime is how the node runs a pod's containers: isolated (runc containers in a
// network namespace of the pod's: isolated.go) or as plain processes of the host
// (processes.go). A pod's runner is handed one and does the same with either, so what
// differs between the two lives here and nowhere in the runner.
type runtime interface {
	// sandbox makes what the containers of pod share: its address, and for runc its
	// network namespace, /etc files and volumes under dir. A failure leaves nothing
	// of it behind; a *waitError says the reason the containers wait with.
	sandbox(ctx context.Context, pod *corev1.Pod, dir string) (*sandbox, error)
	// release undoes sandbox once every container of the pod has stopped.
	release(ctx context.Context, sb *sandbox)
	// start starts one run of a container; wait on the returned command, then remove
	// the run.
	start(c containerStart) (*exec.Cmd, error)
	// kill signals a run's processes.
	kill(ctx context.Context, id string, sig syscall.Signal) error
	// remove deletes a run that has exited, killing what is left of it.
	remove(ctx context.Context, id string) error
	// command is args run beside a running run's process (an exec probe, kubectl
	// exec), on a terminal given as its stdio with tty.
	command(ctx context.Context, id string, args []string, tty bool) (*exec.Cmd, error)
	// idScheme prefixes the container IDs of the pod's status: "runc://", "process://".
	idScheme() string
	// close removes what the runtime keeps ready for pods to come, once every pod has
	// stopped.
	close()
}

// sandbox is what a pod's containers share, as its runtime made it.
type sandbox struct {
	ip netip.Addr
	// netns is the name of the pod's network namespace under /var/run/netns; "" where
	// the pod shares the host's network.
	netns string
	// port is what the serving container listens on in place of its containerPort
	// (its PORT), where pods share the host's IP; 0 where it listens on its own.
	port int
	// annotations are what the runtime recorded on the pod in the API server; the
	// runner's copy of the pod keeps them, as a status update writes annotations too.
	annotations map[string]string
}

func (s *sandbox) netnsPath() string { return "/var/run/netns/" + s.netns }

// drainAddr is what the gateway's in-flight count for the pod is asked by: its IP, or
// IP:port where pods share the host's IP.
func (s *sandbox) drainAddr() string {
	if s.port == 0 {
		return s.ip.String()
	}
	return net.JoinHostPort(s.ip.String(), strconv.Itoa(s.port))
}

// containerStart is one run of a container, as a runtime starts it.
type containerStart struct {
	id        string
	pod       *corev1.Pod
	container *corev1.Container
	program   Program
	// env is the container's environment, resolved (env.go).
	env map[string]string
	// dir is the pod's directory: its files and volumes (podFiles), and the runs'.
	dir            string
	sandbox        *sandbox
	stdout, stderr io.Writer
}

// waitError is a sandbox failure with the reason the pod's containers wait with;
// permanent when no retry can make the pod run.
type waitError struct {
	reason    string
	err       error
	permanent bool
}

func (e *waitError) Error() string { return e.err.Error() }
func (e *waitError) Unwrap() error { return e.err }

// waitReason is the reason the pod's containers wait with after err: its own, or the
// kubelet's CreateContainerConfigError.
func waitReason(err error) (reason string, permanent bool) {
	var we *waitError
	if errors.As(err, &we) {
		return we.reason, we.permanent
	}
	return "CreateContainerConfigError", false
}
