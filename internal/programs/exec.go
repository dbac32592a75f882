package programs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/creack/pty"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	vkapi "github.com/virtual-kubelet/virtual-kubelet/node/api"
	"k8s.io/cri-client/pkg/logs"
	utilexec "k8s.io/utils/exec"
)

// RunInContainer serves kubectl exec: cmd runs in the container's namespaces (runc
// exec), or beside its process with its environment, with the caller's streams, on a
// terminal of its own when asked (-t). Its exit code is kubectl's.
func (p *provider) RunInContainer(ctx context.Context, namespace, podName, containerName string, cmd []string, attach vkapi.AttachIO) error {
	r, err := p.runner(namespace, podName)
	if err != nil {
		return err
	}
	id, err := r.running(containerName)
	if err != nil {
		return err
	}
	if len(cmd) == 0 {
		return errdefs.InvalidInput("a command is required")
	}
	c, err := r.rt.command(ctx, id, cmd, attach.TTY())
	if err != nil {
		return err
	}
	return runAttached(c, attach)
}

// runAttached runs c with attach's streams: through a terminal of its own for a TTY,
// else its stdin, stdout and stderr.
func runAttached(c *exec.Cmd, attach vkapi.AttachIO) error {
	var err error
	if attach.TTY() {
		err = runOnTerminal(c, attach)
	} else {
		c.Stdin = attach.Stdin()
		if out := attach.Stdout(); out != nil {
			c.Stdout = out
		}
		if errOut := attach.Stderr(); errOut != nil {
			c.Stderr = errOut
		}
		err = c.Run()
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		// remotecommand tells kubectl the code of a utilexec.ExitError.
		return utilexec.CodeExitError{Err: err, Code: exitErr.ExitCode()}
	}
	return err
}

// runOnTerminal runs c with a pseudo-terminal as its stdin, stdout and stderr, copying
// between it and attach's streams and following attach's terminal size.
func runOnTerminal(c *exec.Cmd, attach vkapi.AttachIO) error {
	terminal, err := pty.Start(c)
	if err != nil {
		return err
	}
	defer terminal.Close()
	go func() {
		for size := range attach.Resize() {
			_ = pty.Setsize(terminal, &pty.Winsize{Rows: size.Height, Cols: size.Width})
		}
	}()
	if in := attach.Stdin(); in != nil {
		go func() { _, _ = io.Copy(terminal, in) }()
	}
	var copied sync.WaitGroup
	if out := attach.Stdout(); out != nil {
		copied.Add(1)
		go func() {
			defer copied.Done()
			_, _ = io.Copy(out, terminal) // ends with EIO once the command's side closes
		}()
	}
	err = c.Wait()
	copied.Wait()
	return err
}

// AttachToContainer serves kubectl attach: what the container writes from now on, until
// it exits or the caller leaves. Knative's containers have no stdin to attach to.
func (p *provider) AttachToContainer(ctx context.Context, namespace, podName, containerName string, attach vkapi.AttachIO) error {
	r, err := p.runner(namespace, podName)
	if err != nil {
		return err
	}
	if _, err := r.running(containerName); err != nil {
		return err
	}
	path, running, err := r.containerLog(containerName, false)
	if err != nil {
		return errdefs.AsNotFound(err)
	}
	out := attach.Stdout()
	if out == nil {
		out = attach.Stderr()
	}
	if out == nil {
		<-ctx.Done()
		return nil
	}
	return readLogs(ctx, path, &logs.LogOptions{Follow: true, Since: time.Now()}, running, out)
}

// PortForward serves kubectl port-forward: a connection to port in the pod's network,
// at the pod's IP (or, for plain processes, at the port the node gave the serving
// container in place of the one it declares).
func (p *provider) PortForward(ctx context.Context, namespace, podName string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	r, err := p.runner(namespace, podName)
	if err != nil {
		return err
	}
	r.mu.Lock()
	ip, given := r.podIP(), 0
	if r.sandbox != nil {
		given = r.sandbox.port
	}
	r.mu.Unlock()
	if ip == "" {
		return fmt.Errorf("pod %s/%s has no network yet", namespace, podName)
	}
	if _, declared := servingContainer(r.pod); given != 0 && port == declared {
		port = int32(given)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip, strconv.Itoa(int(port))))
	if err != nil {
		return fmt.Errorf("port-forward to pod %s/%s port %d: %w", namespace, podName, port, err)
	}
	defer conn.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(conn, stream); done <- struct{}{} }()
	go func() { _, _ = io.Copy(stream, conn); done <- struct{}{} }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}

// running is the id of the container name's current run, if it is running.
func (r *podRunner) running(name string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.all() {
		if c.spec.Name == name {
			if !c.running {
				return "", errdefs.InvalidInput(fmt.Sprintf("container %s of pod %s/%s is not running", name, r.pod.Namespace, r.pod.Name))
			}
			return c.id, nil
		}
	}
	return "", errdefs.NotFound(fmt.Sprintf("pod %s/%s has no container %q", r.pod.Namespace, r.pod.Name, name))
}
