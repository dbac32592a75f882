package programs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cri-client/pkg/logs"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// Reasons a container waits with, beside the kubelet's own (ContainerCreating,
// CrashLoopBackOff, CreateContainerConfigError, RunContainerError).
const (
	// ReasonBuilding: the go command is building the container's ko:// package.
	ReasonBuilding = v1.ReasonBuildingImage
	// ReasonBuildFailed: the image has no program: its package does not build, its
	// executable is gone, or it is not mapped. The message says which. The Revision
	// reconciler reads it as an image it cannot fetch (ContainerMissing).
	ReasonBuildFailed = v1.ReasonErrImageBuild
)

// retryBackOff is how long a pod waits between tries of what failed before its
// containers could start (a build, a volume), and between restarts of a container:
// the kubelet's CrashLoopBackOff, 10 s doubling up to 5 minutes.
func retryBackOff(failures int) time.Duration {
	d := 10 * time.Second
	for i := 1; i < failures && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// podRunner runs one pod: its sandbox, its containers (restarted as the kubelet
// restarts them), their probes, and its termination, with the runtime it is handed.
type podRunner struct {
	n      *Node
	rt     runtime
	ctx    context.Context // done once the pod is being deleted
	cancel context.CancelFunc
	done   chan struct{}
	dir    string

	mu          sync.Mutex
	pod         *corev1.Pod
	phase       corev1.PodPhase
	sandbox     *sandbox // what the pod's containers share, once made
	started     metav1.Time
	readySince  metav1.Time
	ctrs        []*containerRun
	terminating bool
}

// containerRun is one container of the pod across its restarts.
type containerRun struct {
	spec    *corev1.Container
	program Program
	// Guarded by the pod's mu:
	status  corev1.ContainerStatus
	id      string   // the current run's, for the runtime
	logs    []string // every run's log file, the current last
	running bool
	ready   bool
}

func newPodRunner(n *Node, rt runtime, pod *corev1.Pod) *podRunner {
	ctx, cancel := context.WithCancel(n.ctx)
	r := &podRunner{n: n, rt: rt, ctx: ctx, cancel: cancel, done: make(chan struct{}), pod: pod.DeepCopy(),
		phase: corev1.PodPending, started: metav1.Now(), dir: filepath.Join(n.dir, "pods", string(pod.UID))}
	for i := range r.pod.Spec.Containers {
		c := &r.pod.Spec.Containers[i]
		r.ctrs = append(r.ctrs, &containerRun{spec: c, status: corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
		}})
	}
	return r
}

// run takes the pod from creation to its end: prepare, run containers until the pod is
// deleted, terminate, report.
func (r *podRunner) run() {
	defer close(r.done)
	r.notify()
	var wg sync.WaitGroup
	if r.prepare() {
		for _, c := range r.ctrs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.runContainer(c)
			}()
		}
	}
	<-r.ctx.Done()
	r.terminate(&wg)
}

// prepare builds or finds each container's program, then makes the pod's sandbox,
// retrying what fails with a back-off that the container's waiting reason shows. It
// returns false if the pod was deleted first, or can never run.
func (r *podRunner) prepare() bool {
	for failures := 0; ; failures++ {
		err := r.resolvePrograms()
		if err == nil {
			err = r.makeSandbox()
		}
		if err == nil {
			return true
		}
		if _, permanent := waitReason(err); permanent {
			return false
		}
		select {
		case <-r.ctx.Done():
			return false
		case <-time.After(retryBackOff(failures + 1)):
		}
	}
}

func (r *podRunner) resolvePrograms() error {
	for _, c := range r.ctrs {
		if c.program.Path != "" {
			continue
		}
		if !r.n.images.Runs(c.spec.Image) {
			r.setWaiting(c, ReasonBuildFailed, fmt.Sprintf("image %q has no local program: ferry up runs only the images of --local-image and ko:// images", c.spec.Image))
			return errors.New("unmapped image")
		}
		p, err := r.n.images.Resolve(r.ctx, c.spec.Image, func(importPath string) {
			r.setWaiting(c, ReasonBuilding, "go build "+importPath)
		})
		if err != nil {
			r.setWaiting(c, ReasonBuildFailed, err.Error())
			return err
		}
		r.mu.Lock()
		c.program = p
		r.mu.Unlock()
	}
	return nil
}

// makeSandbox has the runtime make what the pod's containers share; a failure makes
// them wait with its reason, and one that is for good says so in an Event too.
func (r *podRunner) makeSandbox() error {
	sb, err := r.rt.sandbox(r.ctx, r.pod, r.dir)
	if err != nil {
		reason, permanent := waitReason(err)
		r.setAllWaiting(reason, err.Error())
		if permanent {
			r.n.event(r.snapshot(), corev1.EventTypeWarning, reason, err.Error())
		}
		return err
	}
	r.mu.Lock()
	r.sandbox = sb
	if len(sb.annotations) > 0 && r.pod.Annotations == nil {
		r.pod.Annotations = map[string]string{}
	}
	maps.Copy(r.pod.Annotations, sb.annotations)
	r.phase = corev1.PodRunning
	r.mu.Unlock()
	return nil
}

// runContainer runs a container until the pod is deleted, restarting it when it
// exits or fails its liveness probe, as restartPolicy Always says.
func (r *podRunner) runContainer(c *containerRun) {
	for restarts := 0; ; restarts++ {
		began := time.Now()
		code, err := r.runOnce(c, restarts)
		if r.ctx.Err() != nil {
			return
		}
		backOff := retryBackOff(restarts + 1)
		if time.Since(began) > 10*time.Minute {
			restarts, backOff = 0, retryBackOff(1)
		}
		if err != nil {
			r.setWaiting(c, "RunContainerError", err.Error())
		} else {
			r.mu.Lock()
			c.status.RestartCount++
			c.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s (exit code %d)", backOff, c.spec.Name, r.pod.Name, code)}}
			r.mu.Unlock()
			r.notify()
		}
		select {
		case <-r.ctx.Done():
			return
		case <-time.After(backOff):
		}
	}
}

// runOnce runs the container once, with its probes, until it exits; it returns its
// exit code, or an error if it could not start.
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
	cmd, err := r.rt.start(containerStart{id: id, pod: r.pod, container: c.spec, program: c.program, dir: r.dir, sandbox: sb,
		stdout: stdout, stderr: stderr})
	if err != nil {
		return 0, err
	}
	startedAt := metav1.Now()
	r.mu.Lock()
	c.id, c.running, c.ready = id, true, false
	c.logs = append(c.logs, logPath)
	c.status.ContainerID = r.rt.idScheme() + id
	c.status.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: startedAt}}
	c.status.Started = ptr(c.spec.StartupProbe == nil)
	r.mu.Unlock()
	r.notify()

	exited := make(chan struct{})
	go r.probe(c, id, exited)
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

// terminate stops the pod as the kubelet does once it is deleted: its containers keep
// serving through the preStop sleep while the gateways drain them, but no longer than
// requests are in flight; then SIGTERM, and SIGKILL after the grace period.
func (r *podRunner) terminate(wg *sync.WaitGroup) {
	ctx := context.WithoutCancel(r.ctx)
	r.mu.Lock()
	r.terminating = true
	var drainAddr string
	if r.sandbox != nil {
		drainAddr = r.sandbox.drainAddr()
	}
	grace := 30 * time.Second
	if g := r.pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	if g := r.pod.DeletionGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	r.mu.Unlock()
	stopping := r.n.ctx.Err() != nil // ferry up is stopping: no drain, nothing to serve
	if stopping {
		grace = min(grace, 5*time.Second)
	}
	deadline := time.Now().Add(grace)
	if drainAddr != "" && grace > 0 && !stopping {
		r.n.drain(ctx, drainAddr, preStopSleep(r.pod), deadline)
	}
	r.signalAll(ctx, syscall.SIGTERM)
	stopped := make(chan struct{})
	go func() {
		wg.Wait()
		close(stopped)
	}()
	// The drain ended early when nothing was in flight, which leaves most of the
	// grace period; a program that ignores SIGTERM gets Kubernetes' default 30 s of it.
	if d := time.Now().Add(shutdownGrace); d.Before(deadline) {
		deadline = d
	}
	select {
	case <-stopped:
	case <-time.After(time.Until(deadline)):
		r.signalAll(ctx, syscall.SIGKILL)
		<-stopped
	}
	r.mu.Lock()
	sb := r.sandbox
	r.mu.Unlock()
	if sb != nil {
		r.rt.release(ctx, sb)
	}
	_ = os.RemoveAll(r.dir)
	r.mu.Lock()
	r.phase = corev1.PodSucceeded
	for _, c := range r.ctrs {
		if c.status.State.Terminated == nil {
			c.status.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", FinishedAt: metav1.Now()}}
		} else if c.status.State.Terminated.ExitCode != 0 {
			r.phase = corev1.PodFailed
		}
	}
	r.mu.Unlock()
	r.notify()
	if !stopping {
		r.n.forget(ctx, r.pod)
	}
}

// shutdownGrace is the longest a container may take to exit after SIGTERM.
const shutdownGrace = 30 * time.Second

// preStopSleep is the longest preStop sleep of the pod's containers: Ferry gives each
// container one, for the drain.
func preStopSleep(pod *corev1.Pod) time.Duration {
	var d time.Duration
	for _, c := range pod.Spec.Containers {
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
			d = max(d, time.Duration(c.Lifecycle.PreStop.Sleep.Seconds)*time.Second)
		}
	}
	return d
}

func (r *podRunner) signalAll(ctx context.Context, sig syscall.Signal) {
	r.mu.Lock()
	var ids []string
	for _, c := range r.ctrs {
		if c.running {
			ids = append(ids, c.id)
		}
	}
	r.mu.Unlock()
	for _, id := range ids {
		_ = r.rt.kill(ctx, id, sig)
	}
}

func (r *podRunner) setWaiting(c *containerRun, reason, message string) {
	r.mu.Lock()
	c.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
	r.mu.Unlock()
	r.notify()
}

func (r *podRunner) setAllWaiting(reason, message string) {
	r.mu.Lock()
	for _, c := range r.ctrs {
		c.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
	}
	r.mu.Unlock()
	r.notify()
}

func (r *podRunner) setReady(c *containerRun, id string, ready bool) {
	r.mu.Lock()
	changed := c.id == id && c.running && c.ready != ready
	if changed {
		c.ready = ready
	}
	r.mu.Unlock()
	if changed {
		r.notify()
	}
}

// podIP is the pod's address, "" before its network namespace is made; r.mu held.
func (r *podRunner) podIP() string {
	if r.sandbox == nil {
		return ""
	}
	return r.sandbox.ip.String()
}

func (r *podRunner) notify() { r.n.notify(r.snapshot()) }

// snapshot is the pod with the status this node reports for it.
func (r *podRunner) snapshot() *corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pod.DeepCopy()
	st := corev1.PodStatus{Phase: r.phase, HostIP: nodeIP, HostIPs: []corev1.HostIP{{IP: nodeIP}}, StartTime: &r.started}
	if ip := r.podIP(); ip != "" {
		st.PodIP, st.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	}
	ready := r.phase == corev1.PodRunning
	for _, c := range r.ctrs {
		cs := *c.status.DeepCopy()
		cs.Ready = c.ready
		ready = ready && c.ready
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	if ready && r.readySince.IsZero() {
		r.readySince = metav1.Now()
	}
	if !ready {
		r.readySince = metav1.Time{}
	}
	readyStatus, since := corev1.ConditionFalse, r.started
	if ready {
		readyStatus, since = corev1.ConditionTrue, r.readySince
	}
	st.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: r.started},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: r.started},
		{Type: corev1.ContainersReady, Status: readyStatus, LastTransitionTime: since},
		{Type: corev1.PodReady, Status: readyStatus, LastTransitionTime: since},
	}
	p.Status = st
	return p
}

// containerLog is the log file of a container's current run, or its previous one.
func (r *podRunner) containerLog(name string, previous bool) (path string, running func() bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.ctrs {
		if c.spec.Name != name {
			continue
		}
		n := len(c.logs)
		switch {
		case previous && n >= 2:
			return c.logs[n-2], func() bool { return false }, nil
		case !previous && n >= 1:
			current := c.logs[n-1]
			return current, func() bool {
				r.mu.Lock()
				defer r.mu.Unlock()
				return c.running && c.logs[len(c.logs)-1] == current
			}, nil
		}
		return "", nil, fmt.Errorf("container %q in pod %s/%s has not started", name, r.pod.Namespace, r.pod.Name)
	}
	return "", nil, fmt.Errorf("pod %s/%s has no container %q", r.pod.Namespace, r.pod.Name, name)
}

// probe runs a container run's probes until the run ends or the pod is deleted: the
// startup probe, then readiness and liveness. Until its first success, readiness is
// tried every 100 ms rather than every periodSeconds: Knative's queue-proxy probes a
// new container so, and Ferry has no queue-proxy, so a new pod is ready as soon as it
// listens.
func (r *podRunner) probe(c *containerRun, id string, exited <-chan struct{}) {
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	r.mu.Lock()
	ip, port := r.podIP(), r.sandbox.port
	r.mu.Unlock()
	_, userPort := servingContainer(r.pod)
	try := func(p *corev1.Probe, purpose string) (bool, string) {
		ctr := c.spec
		if port != 0 && len(c.spec.Ports) > 0 {
			// The serving container listens on the port the node picked.
			p, ctr = retarget(p, ctr, userPort, int32(port))
		}
		return probeOnce(ctx, p, ctr, ip, purpose, func(ctx context.Context, args []string, out *bytes.Buffer) error {
			cmd, err := r.rt.command(ctx, id, args, false)
			if err != nil {
				return err
			}
			cmd.Stdout, cmd.Stderr = out, out
			return cmd.Run()
		})
	}
	if p := c.spec.StartupProbe; p != nil {
		if !sleep(ctx, seconds(p.InitialDelaySeconds)) || !r.watch(ctx, p, try, "startup", nil, func(why string) {
			r.restart(ctx, c, id, "startup", why)
		}) {
			return
		}
		r.mu.Lock()
		c.status.Started = ptr(true)
		r.mu.Unlock()
		r.notify()
	}
	if p := c.spec.LivenessProbe; p != nil {
		go func() {
			if sleep(ctx, seconds(p.InitialDelaySeconds)) {
				r.watch(ctx, p, try, "liveness", func() {}, func(why string) { r.restart(ctx, c, id, "liveness", why) })
			}
		}()
	}
	p := c.spec.ReadinessProbe
	if p == nil {
		r.setReady(c, id, true)
		return
	}
	if !sleep(ctx, seconds(p.InitialDelaySeconds)) {
		return
	}
	for ok, _ := try(p, "readiness"); !ok; ok, _ = try(p, "readiness") {
		if !sleep(ctx, 100*time.Millisecond) {
			return
		}
	}
	r.setReady(c, id, true)
	r.watch(ctx, p, try, "readiness", func() { r.setReady(c, id, true) }, func(string) { r.setReady(c, id, false) })
}

// watch runs p every periodSeconds until ctx ends, calling pass after successThreshold
// successes in a row and fail after failureThreshold failures in a row; a liveness
// failure ends it (the container restarts, with probes of its own). For a startup
// probe (no pass), it returns true at its first success.
func (r *podRunner) watch(ctx context.Context, p *corev1.Probe, try func(*corev1.Probe, string) (bool, string), purpose string,
	pass func(), fail func(why string)) bool {
	successes, failures := 0, 0
	for {
		ok, why := try(p, purpose)
		switch {
		case ok && pass == nil:
			return true
		case ok:
			failures, successes = 0, successes+1
			if successes >= int(max(p.SuccessThreshold, 1)) {
				pass()
			}
		default:
			successes, failures = 0, failures+1
			if failures >= int(max(p.FailureThreshold, 1)) {
				fail(why)
				if pass == nil || purpose == "liveness" {
					return false
				}
			}
		}
		if !sleep(ctx, seconds(max(p.PeriodSeconds, 1))) {
			return false
		}
	}
}

// restart kills a container run that failed its liveness or startup probe; the
// container's loop starts it again.
func (r *podRunner) restart(ctx context.Context, c *containerRun, id, purpose, why string) {
	r.n.event(r.snapshot(), corev1.EventTypeWarning, "Unhealthy",
		fmt.Sprintf("Container %s failed %s probe, will be restarted: %s", c.spec.Name, purpose, why))
	_ = r.rt.kill(ctx, id, syscall.SIGTERM)
	if !sleep(ctx, 10*time.Second) {
		return
	}
	_ = r.rt.kill(context.WithoutCancel(ctx), id, syscall.SIGKILL)
}

func seconds(s int32) time.Duration { return time.Duration(s) * time.Second }

// sleep waits d, or returns false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
