package programs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// runc runs containers with the runc command (Debian's package), each `runc run` in the
// foreground: the command lives as long as the container, passes it the pipes for its
// stdout and stderr and /dev/null for stdin, and exits with its exit status. Its state
// lives under a directory of this node's, so a start finds what a crashed run left.
type runc struct {
	binary string
	root   string
}

// start runs the container of bundle's config.json and returns once its process runs,
// or once runc has exited without running it; wait on the returned command. The
// container's StartedAt and its probes count from then, as the kubelet's count from the
// runtime's start: runc's own setup (namespaces, cgroup, mounts) takes a second or more
// on a busy machine, and a liveness probe counting through it restarts a program that
// had no time to listen.
func (r *runc) start(id, bundle string, s *specs.Spec, stdout, stderr io.Writer) (*exec.Cmd, error) {
	if err := makeRootfs(s); err != nil {
		return nil, err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), b, 0o600); err != nil {
		return nil, err
	}
	pidFile := filepath.Join(bundle, "pid")
	if err := os.Remove(pidFile); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	// The pid file's arrival is watched for (inotify), so that the probes start the
	// moment the process does; without a watch, start polls for it.
	var created chan fsnotify.Event
	if w, err := fsnotify.NewWatcher(); err == nil {
		defer w.Close()
		if w.Add(bundle) == nil {
			created = w.Events
		}
	}
	cmd := exec.Command(r.binary, "--root", r.root, "run", "--pid-file", pidFile, "--bundle", bundle, id)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// runc in the foreground goes when Ferry goes; the container it leaves is
	// removed at the next start (removeStale).
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	waitRunning(cmd.Process.Pid, pidFile, created)
	return cmd, nil
}

// waitRunning returns once runc (pid) has written pidFile, which it does after the
// container's process was started, or once runc has exited. It looks again at each
// change in the bundle's directory (created; nil: none are watched) and every 5 ms:
// runc's exit is polled, as waiting for it here would take its status from the
// runner's Wait.
func waitRunning(pid int, pidFile string, created <-chan fsnotify.Event) {
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	for {
		if _, err := os.Stat(pidFile); err == nil || exited(pid) {
			return
		}
		select {
		case <-created:
		case <-poll.C:
		}
	}
}

// kill sends a signal to the container's process.
func (r *runc) kill(ctx context.Context, id string, sig syscall.Signal) error {
	return r.run(ctx, nil, "kill", id, fmt.Sprint(int(sig)))
}

// remove deletes the container, killing what is left of it.
func (r *runc) remove(ctx context.Context, id string) error {
	return r.run(ctx, nil, "delete", "--force", id)
}

// command is args run in the running container (runc exec), on a terminal given as
// its stdio with tty.
func (r *runc) command(ctx context.Context, id string, args []string, tty bool) (*exec.Cmd, error) {
	runcArgs := []string{"--root", r.root, "exec"}
	if tty {
		runcArgs = append(runcArgs, "--tty")
	}
	return exec.CommandContext(ctx, r.binary, append(append(runcArgs, id), args...)...), nil
}

// removeStale deletes every container of this node's state directory.
func (r *runc) removeStale(ctx context.Context) error {
	var out bytes.Buffer
	if err := r.run(ctx, &out, "list", "--quiet"); err != nil {
		return err
	}
	for _, id := range strings.Fields(out.String()) {
		_ = r.remove(ctx, id)
	}
	return nil
}

func (r *runc) run(ctx context.Context, out io.Writer, args ...string) error {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, r.binary, append([]string{"--root", r.root}, args...)...)
	cmd.Stdout = out
	if out == nil {
		cmd.Stdout = &stderr
	}
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("runc %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
