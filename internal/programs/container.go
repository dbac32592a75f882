package programs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cri-client/pkg/logs"
)

// runContainer runs a container until the pod is deleted, restarting it when it
// exits or fails its liveness probe, as restartPolicy Always says.
func (r *podRunner) runContainer(c *containerRun) {
	for restarts := 0; ; restarts++ {
		began := time.Now()
		code, err := r.runOnce(c, restarts)
		if r.ctx.Err() != nil {
			return
		}
		if time.Since(began) > 10*time.Minute {
			restarts = 0
		}
		if !r.backOff(c, restarts, code, err) {
			return
		}
	}
}

// initialize runs the init containers in order, each to completion, as the kubelet
// does before the pod's containers start. One that fails runs again after the
// CrashLoopBackOff back-off, unless the pod's restartPolicy is Never, which fails the
// pod. It returns true once all have completed, false if the pod was deleted or
// failed first.
func (r *podRunner) initialize() bool {
	for _, c := range r.inits {
		for restarts := 0; ; restarts++ {
			code, err := r.runOnce(c, restarts)
			if r.ctx.Err() != nil {
				return false
			}
			if err == nil && code == 0 {
				r.mu.Lock()
				c.ready = true // as the kubelet reports a completed init container
				r.mu.Unlock()
				break
			}
			if err == nil && r.pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
				r.mu.Lock()
				r.phase = corev1.PodFailed
				r.mu.Unlock()
				r.notify()
				return false
			}
			if !r.backOff(c, restarts, code, err) {
				return false
			}
		}
	}
	r.mu.Lock()
	r.phase = corev1.PodRunning
	if len(r.inits) > 0 {
		r.initialized = metav1.Now()
	}
	r.mu.Unlock()
	r.notify()
	return true
}

// backOff waits out the CrashLoopBackOff before a container's next run, after its
// restarts-th exited with code or could not start (err); the container waits with the
// kubelet's reason meanwhile. It returns false if the pod was deleted first.
func (r *podRunner) backOff(c *containerRun, restarts, code int, err error) bool {
	backOff := retryBackOff(restarts + 1)
	var config *waitError
	switch {
	case errors.As(err, &config):
		// As the kubelet reports an environment it cannot make.
		r.setWaiting(c, config.reason, err.Error())
		r.n.event(r.snapshot(), corev1.EventTypeWarning, "Failed", "Error: "+err.Error())
	case err != nil:
		r.setWaiting(c, "RunContainerError", err.Error())
	default:
		r.mu.Lock()
		c.status.RestartCount++
		c.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s (exit code %d)", backOff, c.spec.Name, r.pod.Name, code)}}
		r.mu.Unlock()
		r.notify()
	}
	return sleep(r.ctx, backOff)
}

// runOnce runs the container once, with its probes (an init container has none),
// until it exits; it returns its exit code, or an error if it could not start.
func (r *podRunner) runOnce(c *containerRun, run int) (int, error) {
	id := fmt.Sprintf("%s-%s-%d", strings.ReplaceAll(string(r.pod.UID), "-", "")[:12], c.spec.Name, run)
	logPath := filepath.Join(r.dir, "logs", c.spec.Name, fmt.Sprintf("%d.log", run))
	if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err != nil {
		return 0, err
	}
	lf, err := createLog(logPath)
	if err != nil {
		return 0, err
	}
	defer lf.close()
	stdout, stderr := lf.stream("stdout"), lf.stream("stderr")
	r.mu.Lock()
	sb := r.sandbox
	r.mu.Unlock()
	env, err := r.n.env.containerEnv(r.ctx, r.pod, c.spec, sb.ip.String())
	if err != nil {
		return 0, err
	}
	cmd, err := r.rt.start(containerStart{id: id, pod: r.pod, container: c.spec, program: c.program, env: env, dir: r.dir, sandbox: sb,
		stdout: stdout, stderr: stderr})
	if err != nil {
		return 0, err
	}
	startedAt := metav1.Now()
	r.mu.Lock()
	r.startup.step(c.spec.Name + " started")
	c.id, c.running, c.ready = id, true, false
	c.logs = append(c.logs, logPath)
	c.status.ContainerID = r.rt.idScheme() + id
	c.status.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: startedAt}}
	c.status.Started = ptr(c.spec.StartupProbe == nil)
	// Started as the pod's termination began: its SIGTERM (signalAll) missed this run.
	missed := r.terminating
	r.mu.Unlock()
	// The probes first: the Running status sets off watchers across the control plane,
	// and a first readiness try queued behind them waited 1-17 ms in cold starts.
	exited := make(chan struct{})
	if !c.init {
		go r.probe(c, id, exited)
	}
	r.notify()
	if missed {
		_ = r.rt.kill(context.WithoutCancel(r.ctx), id, syscall.SIGTERM)
	}
	waitErr := cmd.Wait()
	if errors.Is(waitErr, exec.ErrWaitDelay) { // exited, but what it started kept its output
		waitErr = nil
		if !cmd.ProcessState.Success() {
			waitErr = &exec.ExitError{ProcessState: cmd.ProcessState}
		}
	}
	close(exited)
	stdout.flush()
	stderr.flush()
	code := 0
	var exitErr *exec.ExitError
	switch {
	case errors.As(waitErr, &exitErr):
		code = exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	case waitErr != nil:
		code = 128
	}
	_ = r.rt.remove(context.WithoutCancel(r.ctx), id)
	term := &corev1.ContainerStateTerminated{ExitCode: int32(code), Reason: "Completed", StartedAt: startedAt,
		FinishedAt: metav1.Now(), ContainerID: r.rt.idScheme() + id}
	if code != 0 {
		term.Reason = "Error"
		if c.spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
			term.Message = lastLines(logPath)
		}
	}
	r.mu.Lock()
	c.running, c.ready = false, false
	c.status.State = corev1.ContainerState{Terminated: term}
	c.status.LastTerminationState = corev1.ContainerState{Terminated: term}
	r.mu.Unlock()
	r.notify()
	return code, nil
}

// lastLines is the end of a log, as the kubelet's FallbackToLogsOnError takes it: the
// last 80 lines, at most 2 KiB.
func lastLines(path string) string {
	var b bytes.Buffer
	tail := int64(80)
	_ = readLogs(context.Background(), path, &logs.LogOptions{TailLines: &tail}, func() bool { return false }, &b)
	s := b.String()
	if len(s) > 2048 {
		s = s[len(s)-2048:]
	}
	return strings.TrimRight(s, "\n")
}
